#!/usr/bin/env bash
# Interoperability test: builds wehe-server, starts it on loopback with moved ports and a temporary data directory,
# runs the independent Python client (Tests/Interop/wehe_interop_client.py) for a TCP app test (pandora), an app
# test over 443 (youtube), a UDP test (skype) and a port test (port853s) in parallel from distinct loopback
# addresses, then stops the server with SIGTERM. Prints one line per test; exits non-zero on any failure.
#
# Environment: WEHE_REPLAYS (default ../shared/replays), INTEROP_PORT_OFFSET (default 24000),
# WEHE_SERVER_BIN (skip the build and use this binary), INTEROP_TESTS (default "pandora youtube skype port853s").
set -u
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
REPLAYS="${WEHE_REPLAYS:-$ROOT/../shared/replays}"
OFFSET="${INTEROP_PORT_OFFSET:-24000}"
TESTS="${INTEROP_TESTS:-pandora youtube skype port853s}"
# The listeners' ports (moved by the offset) are in the system's ephemeral range: a client socket of another
# process may hold one for a moment. A server that cannot bind is started again with the next offset.
set_ports() {
    SIDE=$((35556 + OFFSET % 1000))
    SIDE_PLAIN=$((SIDE - 1))
    ANALYZER=$((36566 + OFFSET % 1000))
    ANALYZER_PLAIN=$((ANALYZER - 1))
}
set_ports
WORK="$(mktemp -d)"
SERVER_PID=""

cleanup() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -KILL "$SERVER_PID" 2>/dev/null
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

if [ -n "${WEHE_SERVER_BIN:-}" ]; then
    BIN="$WEHE_SERVER_BIN"
else
    (cd "$ROOT" && swift build --product wehe-server >"$WORK/build.log" 2>&1) || {
        tail -30 "$WORK/build.log"
        echo "interop: FAIL build"
        exit 1
    }
    BIN="$(cd "$ROOT" && swift build --show-bin-path)/wehe-server"
fi

"$BIN" certs --out "$WORK/data/certs" --host 127.0.0.1 --host localhost >"$WORK/certs.log" 2>&1 || {
    cat "$WORK/certs.log"
    echo "interop: FAIL certs"
    exit 1
}
ready=0
for attempt in 1 2 3 4 5; do
    "$BIN" serve --replays "$REPLAYS" --data "$WORK/data" --bind 127.0.0.1 --port-offset "$OFFSET" \
        --side-channel-port "$SIDE" --side-channel-plain-port "$SIDE_PLAIN" \
        --analyzer-port "$ANALYZER" --analyzer-plain-port "$ANALYZER_PLAIN" \
        --tls-cert "$WORK/data/certs/server.crt" --tls-key "$WORK/data/certs/server.key" \
        --grace-period 5 ${INTEROP_SERVER_ARGS:-} >"$WORK/server.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 300); do
        if python3 - "$ANALYZER_PLAIN" <<'PY' 2>/dev/null; then
import sys, urllib.request
urllib.request.urlopen("http://127.0.0.1:%s/Results?command=defaultSetting" % sys.argv[1], timeout=1).read()
PY
            ready=1
            break
        fi
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then break; fi
        sleep 0.2
    done
    [ "$ready" = 1 ] && break
    if kill -0 "$SERVER_PID" 2>/dev/null || ! grep -q "bindFailed" "$WORK/server.log"; then break; fi
    echo "interop: a port was taken (attempt $attempt): $(grep -m1 -o 'cannot listen on [^ ]*' "$WORK/server.log"); next offset"
    OFFSET=$((OFFSET + 7))
    set_ports
done
if [ "$ready" != 1 ]; then
    tail -30 "$WORK/server.log"
    echo "interop: FAIL server did not start"
    exit 1
fi

failures=0
test_failures=0
index=10
pids=()
for test in $TESTS; do
    index=$((index + 1))
    python3 "$ROOT/Tests/Interop/wehe_interop_client.py" --server 127.0.0.1 --tls --side-port "$SIDE" \
        --analyzer-tls --analyzer-port "$ANALYZER" --ca "$WORK/data/certs/ca.crt" --replays "$REPLAYS" \
        --test "$test" --source "127.0.0.$index" --whatsmyip-port $((80 + OFFSET)) \
        --history-count "$index" >"$WORK/client-$test.log" 2>&1 &
    pids+=("$!:$test")
done
for entry in "${pids[@]}"; do
    pid="${entry%%:*}"
    test="${entry#*:}"
    if ! wait "$pid"; then
        failures=$((failures + 1))
        test_failures=$((test_failures + 1))
    fi
    line="$(tail -1 "$WORK/client-$test.log")"
    echo "interop: ${line:-FAIL $test: no output}"
    case "$line" in PASS*) ;; *) tail -20 "$WORK/client-$test.log" ;; esac
done

# Graceful shutdown: SIGTERM must end the server with status 0.
kill -TERM "$SERVER_PID"
status=0
for _ in $(seq 1 150); do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then break; fi
    sleep 0.2
done
if kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "interop: FAIL server still running 30 s after SIGTERM"
    failures=$((failures + 1))
else
    wait "$SERVER_PID"
    status=$?
    SERVER_PID=""
    if [ "$status" != 0 ]; then
        echo "interop: FAIL server exited with status $status after SIGTERM"
        failures=$((failures + 1))
    fi
fi
# The server's timing record of each TCP replay (request-arrival and response lateness per request group).
grep 'replay timing' "$WORK/server.log" | sed -e 's/^.*wehe.replay.name=\([^ ]*\).*wehe.timing=\(.*\)$/interop timing: \1: \2/' \
    -e 's/ per group (ms):.*$//' | sort -u
if [ "$failures" != 0 ]; then
    echo "--- server log (last 40 lines)"
    tail -40 "$WORK/server.log"
fi
passed=$(($(echo $TESTS | wc -w) - test_failures))
echo "interop: $passed passed, $test_failures failed"
[ "$failures" = 0 ]
