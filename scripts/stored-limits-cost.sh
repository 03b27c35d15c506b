#!/usr/bin/env bash
# stored-limits-cost.sh - what a change to the server costs a normal test: `wehe run tinyweb` against two wehe-server
# builds on loopback, alternated ROUNDS times (10), and the median wall time of each; prints the figures.
#
#   scripts/stored-limits-cost.sh BEFORE_BIN_DIR AFTER_BIN_DIR   (each holds wehe-server; the client is AFTER's wehe)
set -euo pipefail
cd "$(dirname "$0")/.."
BEFORE=$1
AFTER=$2
ROUNDS=${ROUNDS:-10}
WORK=$(mktemp -d /tmp/wehe-cost.XXXXXX)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
"$AFTER/wehe-server" certs --out "$WORK/certs" --host 127.0.0.1 >/dev/null
start() { # start NAME BIN_DIR: a server on free ports; prints its TLS side-channel and analyzer ports
    "$2/wehe-server" serve --replays Fixtures/replays --data "$WORK/$1" --bind 127.0.0.1 --ephemeral-replay-ports \
        --side-channel-port 0 --side-channel-plain-port 0 --analyzer-port 0 --analyzer-plain-port 0 \
        --tls-cert "$WORK/certs/server.crt" --tls-key "$WORK/certs/server.key" --log-level warning \
        >"$WORK/$1.out" 2>"$WORK/$1.log" &
    PIDS+=($!)
    for _ in $(seq 300); do
        grep -q "wehe-server: listening" "$WORK/$1.out" 2>/dev/null && break
        sleep 0.1
    done
    line=$(grep "wehe-server: listening" "$WORK/$1.out")
    echo "$(sed -n 's/.* side-channel-tls=\([0-9]*\).*/\1/p' <<<"$line") $(sed -n 's/.* analyzer-tls=\([0-9]*\).*/\1/p' <<<"$line")"
}
read -r BEFORE_SIDE BEFORE_ANALYZER < <(start before "$BEFORE")
read -r AFTER_SIDE AFTER_ANALYZER < <(start after "$AFTER")
run() { # run SIDE ANALYZER: milliseconds of one `wehe run tinyweb`
    local begin
    begin=$(date +%s%N)
    "$AFTER/wehe" run tinyweb --server 127.0.0.1 --side-channel-port "$1" --analyzer-port "$2" \
        --cert "$WORK/certs/ca.crt" --replays Fixtures/replays --data-dir "$WORK/client" --accept-consent \
        --no-confirmation --json >/dev/null 2>>"$WORK/client.log"
    echo $((($(date +%s%N) - begin) / 1000000))
}
for round in $(seq "$ROUNDS"); do
    echo "before $(run "$BEFORE_SIDE" "$BEFORE_ANALYZER")" >>"$WORK/times"
    echo "after $(run "$AFTER_SIDE" "$AFTER_ANALYZER")" >>"$WORK/times"
done
python3 - "$WORK/times" <<'PY'
import statistics, sys
times = {}
for line in open(sys.argv[1]):
    name, ms = line.split()
    times.setdefault(name, []).append(int(ms))
for name in ("before", "after"):
    values = times.get(name, [])
    print("%-6s wehe run tinyweb: %d runs, median %.0f ms, min %d, max %d"
          % (name, len(values), statistics.median(values), min(values), max(values)))
print("ratio of medians (after / before): %.3f" % (statistics.median(times["after"]) / statistics.median(times["before"])))
PY
