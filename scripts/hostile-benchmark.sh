#!/usr/bin/env bash
# hostile-benchmark.sh - wehe-server under hostile load on loopback. A benchmark: not run by CI.
#
#   scripts/hostile-benchmark.sh [hostile]    real tests while N hostile connections are held (default 10 000: idle,
#                                             slow headers, trickling side channels, fake declarations); prints real
#                                             tests passed / tried, scripted sessions per second, the server's peak
#                                             memory (VmHWM). See scripts/hostile_benchmark.py.
#   scripts/hostile-benchmark.sh capacity     the largest number of concurrent sessions served with zero failures
#                                             (scripts/load_benchmark.py rounds of SESSIONS concurrent sessions, caps
#                                             raised) and the server's peak memory.
#
# Settings (environment): BIN (default .build/release), SKIP_BUILD=1 (use the binaries as they are), HOSTILE (10000),
# REAL_TESTS (10), BURST (200 scripted sessions per burst), SESSIONS ("1000 2000 3000 4000 5000", capacity mode),
# NOFILE (65536: the open-file limit for the server and the clients; the server sizes its connection budget to it).
# Needs python3. Takes a few minutes; the release build takes much longer the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-hostile}
BIN=${BIN:-.build/release}
if [ "${SKIP_BUILD:-0}" != 1 ]; then
    config=release
    [ "$BIN" = .build/debug ] && config=debug
    nice swift build -c "$config" --product wehe-server >/dev/null
    nice swift build -c "$config" --product wehe >/dev/null
fi
NOFILE=${NOFILE:-65536}
ulimit -n "$NOFILE" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
echo "hostile-benchmark: $MODE, $BIN, open-file limit $(ulimit -n), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

case "$MODE" in
hostile)
    exec python3 scripts/hostile_benchmark.py --bin "$BIN" --hostile "${HOSTILE:-10000}" \
        --real-tests "${REAL_TESTS:-10}" --sessions "${BURST:-200}"
    ;;
capacity)
    OUT=$(mktemp /tmp/wehe-capacity.XXXXXX)
    trap 'rm -f "$OUT"' EXIT
    # Every session holds a side channel and a replay connection: raise the session and connection caps above the
    # largest round (the per-/24 cap is lifted by load_benchmark.py itself).
    # shellcheck disable=SC2086
    python3 scripts/load_benchmark.py --server-bin "$BIN/wehe-server" --sessions ${SESSIONS:-1000 2000 3000 4000 5000} \
        --server-arg=--max-sessions=20000 --server-arg=--max-connections=50000 | tee "$OUT"
    awk '$1 ~ /^[0-9]+$/ && $1 == $2 { if ($1 > best) { best = $1; memory = $6 } }
        END { if (best) printf "RESULT largest round served with zero failures: %d concurrent sessions, server peak memory (VmHWM) %s MiB\n", best, memory;
              else print "RESULT no round was served without failures" }' "$OUT"
    ;;
*)
    echo "usage: $0 [hostile|capacity]" >&2
    exit 2
    ;;
esac
