#!/usr/bin/env bash
# attack-suite.sh - bounded attacks against a wehe-server on loopback, each followed by a real test.
#
# Starts the built wehe-server (BIN=.build/debug by default; BIN=.build/release for the release build) on 127.0.0.1
# (SERVER_ARGS="..." adds options, e.g. a larger --stored-replays-per-network for a long soak) with OS-chosen ports,
# a fleet secret and the operator dashboard behind a token, then runs each attack below for a few seconds and,
# while its connections are still held (or right after), a real `wehe run tinyweb` against the
# server, which must pass. Prints what was tried and what survived; exits 1 when a real test failed or the server
# gave in to an attack. Needs python3. Bounded: about a minute on a loaded 2-core machine.
#
#   idle            idle TCP connections to the side channel, the analyzer and the dashboard
#   slow-headers    analyzer requests whose header bytes trickle in
#   trickle         side channels trickling a length prefix, and admitted sessions that stop advancing
#   declarations    fake declarations: the real user's id from another address, a victim's address as realIP,
#                   and sessions held from another network
#   fleet-replay    localize naming an attacker's host; signed getMeasurements replayed and sent to another host
#   rebinding       operator pages asked with a foreign Host header, and without the token
#   fuzz            random side-channel frames and malformed analyzer requests
#   (then every case in scripts/attacks/cases/: analysis CPU, keep-alive holds, the drain, fake tests and the
#   storage quota, forged DPI searches, capture descriptors and file names, localize floods of the fleet's nonces,
#   client-brought recorded tests: upload floods, oversized and trickled uploads, someone else's upload claimed)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.build/debug}
if [ "${SKIP_BUILD:-0}" != 1 ]; then
    swift build --product wehe-server >/dev/null && swift build --product wehe >/dev/null
fi
WORK=$(mktemp -d /tmp/wehe-attack.XXXXXX)
SERVER_PID=
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

head -c 48 /dev/urandom | base64 >"$WORK/fleet.secret"
# The analyzer port peers would be asked on; an attacker's listener waits there on 127.0.0.77.
PEER_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.77", 0)); print(s.getsockname()[1])')
head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$WORK/operator.token"
# 127.0.0.78 is a fleet peer that is this same server behind a relay (localize-nonce-flood), so it is in the
# certificate, a fleet peer, and one of the names fleet requests may be signed for.
"$BIN/wehe-server" certs --out "$WORK/certs" --host 127.0.0.1 --host 127.0.0.78 >/dev/null
"$BIN/wehe-server" serve --replays Fixtures/replays --data "$WORK/server" --bind 127.0.0.1 --ephemeral-replay-ports \
    --side-channel-port 0 --side-channel-plain-port 0 --analyzer-port 0 --analyzer-plain-port 0 \
    --tls-cert "$WORK/certs/server.crt" --tls-key "$WORK/certs/server.key" --peer-ca "$WORK/certs/ca.crt" \
    --fleet-secret-file "$WORK/fleet.secret" --peer-analyzer-port "$PEER_PORT" --dashboard-port 0 \
    --fleet-peer 127.0.0.78 --fleet-host-name 127.0.0.78 --accept-client-traces ${SERVER_ARGS:-} \
    --dashboard-token-file "$WORK/operator.token" --log-level warning >"$WORK/server.out" 2>"$WORK/server.log" &
SERVER_PID=$!
for _ in $(seq 300); do
    grep -q "wehe-server: listening" "$WORK/server.out" 2>/dev/null && grep -q "operator dashboard" "$WORK/server.out" &&
        break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; exit 1; }
    sleep 0.1
done
line=$(grep "wehe-server: listening" "$WORK/server.out")
port() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$line"; }
SIDE_TLS=$(port side-channel-tls)
SIDE=$(port side-channel)
ANALYZER_TLS=$(port analyzer-tls)
ANALYZER=$(port analyzer)
DASHBOARD=$(sed -n 's#.*operator dashboard http://127.0.0.1:\([0-9]*\)/.*#\1#p' "$WORK/server.out")
echo "attack-suite: wehe-server $BIN (pid $SERVER_PID) side $SIDE_TLS/$SIDE analyzer $ANALYZER_TLS/$ANALYZER dashboard $DASHBOARD"

FAILURES=0
# One real test: `wehe run tinyweb` against the server over TLS; must pass. A script, so the attacks can call it.
REAL_TEST="$WORK/real-test.sh"
cat >"$REAL_TEST" <<SH
#!/usr/bin/env bash
start=\$(date +%s%N)
if "$BIN/wehe" run tinyweb --server 127.0.0.1 --side-channel-port $SIDE_TLS --analyzer-port $ANALYZER_TLS \\
    --cert "$WORK/certs/ca.crt" --replays Fixtures/replays --data-dir "$WORK/client" --accept-consent \\
    --no-confirmation --json >"$WORK/run.json" 2>>"$WORK/client.log"; then
    echo "  real test after \$1: passed (\$(( (\$(date +%s%N) - start) / 1000000 )) ms)"
else
    echo "  real test after \$1: FAILED (exit \$?: \$(tail -1 "$WORK/client.log"))"
    exit 1
fi
SH
chmod +x "$REAL_TEST"
real_test() { "$REAL_TEST" "$1" || FAILURES=$((FAILURES + 1)); }
attack() { # attack NAME: the Python attack, which runs real tests through $REAL_TEST while it holds its connections
    echo "== $1"
    python3 scripts/attacks/suite.py "$1" || FAILURES=$((FAILURES + 1))
    kill -0 "$SERVER_PID" 2>/dev/null || { echo "  the server died"; tail -20 "$WORK/server.log"; exit 1; }
}
export SIDE SIDE_TLS ANALYZER ANALYZER_TLS DASHBOARD PEER_PORT WORK REAL_TEST BIN


echo "== baseline"
real_test baseline
# The first round of cases, then every case file in scripts/attacks/cases (CASES="a b" runs only those).
ALL_CASES="idle slow-headers trickle declarations fleet-replay rebinding fuzz"
for file in scripts/attacks/cases/*.py; do
    [ -e "$file" ] && ALL_CASES="$ALL_CASES $(basename "$file" .py | tr _ -)"
done
if [ -z "${SOAK_SECONDS:-}" ]; then
    for name in ${CASES:-$ALL_CASES}; do attack "$name"; done
else
    # Soak: the cases again and again until SOAK_SECONDS have passed, with a real test between rounds, while the
    # server's resident memory and open descriptors are sampled every SOAK_SAMPLE seconds into $SOAK_CSV.
    SOAK_CSV=${SOAK_CSV:-soak-rss.csv}
    echo "seconds,rss_kib,descriptors,round" >"$SOAK_CSV"
    soak_start=$(date +%s)
    round=0
    (
        while kill -0 "$SERVER_PID" 2>/dev/null; do
            rss=$(awk '/^VmRSS/ {print $2}' "/proc/$SERVER_PID/status" 2>/dev/null || echo 0)
            fds=$(find "/proc/$SERVER_PID/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
            echo "$(($(date +%s) - soak_start)),$rss,$fds,$(cat "$WORK/soak-round" 2>/dev/null || echo 0)" >>"$SOAK_CSV"
            sleep "${SOAK_SAMPLE:-30}"
        done
    ) &
    SAMPLER_PID=$!
    while [ $(($(date +%s) - soak_start)) -lt "$SOAK_SECONDS" ]; do
        round=$((round + 1))
        echo "$round" >"$WORK/soak-round"
        echo "== soak round $round ($(($(date +%s) - soak_start)) s)"
        for name in ${CASES:-$ALL_CASES}; do attack "$name"; done
        real_test "soak round $round"
    done
    kill "$SAMPLER_PID" 2>/dev/null || true
    python3 - "$SOAK_CSV" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if int(r["rss_kib"] or 0) > 0]
rss = [int(r["rss_kib"]) / 1024 for r in rows]
fds = [int(r["descriptors"]) for r in rows]
if rows:
    tenth = max(1, len(rows) // 6)
    first, last = rss[:tenth], rss[-tenth:]
    print("soak: %d samples over %s s, %s rounds" % (len(rows), rows[-1]["seconds"], rows[-1]["round"]))
    print("soak: RSS MiB min %.1f, max %.1f, last %.1f; mean of the first sixth %.1f, of the last sixth %.1f"
          % (min(rss), max(rss), rss[-1], sum(first) / len(first), sum(last) / len(last)))
    print("soak: open descriptors max %d, last %d" % (max(fds), fds[-1]))
PY
fi
echo "== server log: warnings and errors"
grep -cE '(warning|error|critical)' "$WORK/server.log" | sed 's/^/  lines: /' || true
if [ "$FAILURES" -gt 0 ]; then
    echo "attack-suite: FAILED ($FAILURES)"
    exit 1
fi
echo "attack-suite: every real test passed; every attack was contained"
