#!/usr/bin/env bash
# e2e-detection.sh - end-to-end detection on the kernel testbed: the real wehe-server in the server namespace, the
# real wehe client in the client namespace, a DPI or port shaper in between (scripts/testbed.sh). Root only.
#
#   scripts/e2e-detection.sh [case...]      cases: dpi none port delayed police udp-queue record (default: the first five)
#
# Cases and what must come out (each is one Wehe test; confirmation is off where differentiation is expected, so
# that verdict comes from these samples, and on where none is expected, as in a user's test: on this 2-core machine
# a 100 Mbit/s replay by a debug build is CPU-bound, and one unthrottled test in a few dozen came out as
# differentiation with the control slowed by other work; a confirmation run, which the client makes by default,
# repeats such a test):
#   dpi      the app's original replay carries PATTERN (its TLS server name), the bit-inverted control does not;
#            the middlebox throttles matched connections to RATE_KBIT      -> app test: differentiation (throttled)
#   none     same path, nothing throttled                                  -> app test: no differentiation
#   port     every flow to server port 443 throttled to PORT_RATE_KBIT (both app replays)
#                                                                           -> app test: no differentiation
#                                                                           -> port test (PORT_TEST, port X vs 443):
#                                                                              differentiation
#   delayed  like dpi, but only after DELAYED_BYTES of a connection        -> app test: differentiation
#   police   like dpi, but matched packets above POLICE_KBIT are dropped, not queued (testbed.sh MODE=police; the
#            default is half of Deezer's 89 Mbit/s on this link)       -> app test: differentiation, and the
#                                                                              policer dropped packets
#   udp-queue  (not in the default list; CI runs it on its own): the client's uplink to UDP_PORT
#            is shaped to UDP_UPLINK_KBIT with a UDP_QLIMIT-byte queue, so the last datagrams of each replay reach
#            the server seconds late (Skype's client sends ~600 kbit/s in its last 5 s); UDP_APP is run twice in a
#            row, without pause                                            -> every replay (4) receives the server's
#                                                                              datagrams, and the client's namespace
#                                                                              sends no ICMP "port unreachable" (a
#                                                                              stream to a closed, earlier port)
#   record   (not in the default list; CI runs it on its own): a test made from a capture. Inside the bed, curl
#            downloads RECORD_MB over TLS from openssl s_server with the server name RECORD_SNI, and a UDP stream
#            (scripts/udp_stream.py) sends RECORD_UDP_KBIT to the client for 8 s after a hello naming
#            RECORD_UDP_NAME; tcpdump captures both on the client's interface; `wehe record` turns each flow into a
#            test (rectls, recudp) and wehe-server serves only those. A DPI throttle matching the name
#                                                                           -> differentiation (throttled), each
#            no throttle                                                   -> no differentiation, each
# Each case also checks the middlebox's own counters (bytes in the throttled htb class), so a pass cannot come
# from a shaper that did nothing (or a fail from one that did something else).
#
# Settings: APP=deezer PATTERN=dzcdn PORT_TEST=port80s RATE_KBIT=4000 PORT_RATE_KBIT=10000 LINK_KBIT=100000
#           DELAYED_BYTES=1500000 POLICE_KBIT=46548 UDP_APP=skype UDP_PORT=63308 UDP_UPLINK_KBIT=450 UDP_QLIMIT=300000
#           RECORD_SNI=video.wehe.test RECORD_MB=24 RECORD_UDP_NAME=voice.wehe.test RECORD_UDP_KBIT=4000
#           BIN=.build/debug (built unless SKIP_BUILD=1) REPLAYS=../shared/replays TB=e2e KEEP=1 (keep logs)
# Without root or the kernel features it prints why and exits 0 (skipped), or 1 when E2E_REQUIRED=1 (CI sets it,
# so a machine that lost the testbed cannot pass by skipping); a failed case exits 1.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRIPTS=$ROOT/scripts

# Run inside a private mount+PID namespace: whatever happens (even SIGKILL), nothing outlives the run.
if [ -z "${E2E_ISOLATED:-}" ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
    exec env E2E_ISOLATED=1 "$SCRIPTS/isolated.sh" "$0" "$@"
fi

export TB=${TB:-e2e}
APP=${APP:-deezer}
PATTERN=${PATTERN:-dzcdn}
PORT_TEST=${PORT_TEST:-port80s}
RATE_KBIT=${RATE_KBIT:-4000}
PORT_RATE_KBIT=${PORT_RATE_KBIT:-10000}
LINK_KBIT=${LINK_KBIT:-100000}
DELAYED_BYTES=${DELAYED_BYTES:-1500000}
POLICE_KBIT=${POLICE_KBIT:-46548}
UDP_APP=${UDP_APP:-skype}
UDP_PORT=${UDP_PORT:-63308}
UDP_UPLINK_KBIT=${UDP_UPLINK_KBIT:-450}
UDP_QLIMIT=${UDP_QLIMIT:-300000}
RECORD_SNI=${RECORD_SNI:-video.wehe.test}
RECORD_MB=${RECORD_MB:-24}
RECORD_UDP_NAME=${RECORD_UDP_NAME:-voice.wehe.test}
RECORD_UDP_KBIT=${RECORD_UDP_KBIT:-4000}
BIN=${BIN:-$ROOT/.build/debug}
REPLAYS=${REPLAYS:-$ROOT/../shared/replays}
CASES=("$@")
[ ${#CASES[@]} -gt 0 ] || CASES=(dpi none port delayed police)

log() { echo "e2e: $*" >&2; }

# shellcheck source=scripts/testbed-prerequisites.sh
. "$SCRIPTS/testbed-prerequisites.sh"
testbed_prerequisites e2e E2E_REQUIRED

WORK=$(mktemp -d /tmp/wehe-e2e.XXXXXX)
cleanup() {
    "$SCRIPTS/testbed.sh" down || true
    if [ "${KEEP:-}" = 1 ]; then log "logs kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

SERVER_ADDRESS=198.18.2.2

# Brings the bed up with the given settings and starts the server in it (a fresh bed has no processes).
bed() {
    env RATE_KBIT="$RATE_KBIT" LINK_KBIT="$LINK_KBIT" "$@" "$SCRIPTS/testbed.sh" up
    mkdir -p "$WORK/server"
    "$SCRIPTS/testbed.sh" exec s "$BIN/wehe-server" serve --replays "$REPLAYS" --data "$WORK/server" --bind "::" \
        --log-level warning >>"$WORK/server.log" 2>&1 &
    local waited=0
    # Ready when the TLS side channel and the HTTPS analyzer listen.
    until "$SCRIPTS/testbed.sh" exec s ss -Hltn 'sport = :55556 or sport = :56566' 2>/dev/null | grep -c . |
        grep -qx 2; do
        sleep 0.2
        waited=$((waited + 1))
        if [ "$waited" -ge 300 ]; then log "the server did not start; its log:"; tail -20 "$WORK/server.log" >&2; return 1; fi
    done
}

# Runs one Wehe test from the client namespace; prints its JSON result line.
# wehe_test TEST [confirm]: with "confirm", the client's default confirmation run is kept.
wehe_test() {
    local confirmation=--no-confirmation
    [ "${2:-}" = confirm ] && confirmation=
    "$SCRIPTS/testbed.sh" exec c "$BIN/wehe" run "$1" --server "$SERVER_ADDRESS" --json --accept-consent \
        ${confirmation} --data-dir "$WORK/client" --cert "$WORK/server/certs/ca.crt" --replays "$REPLAYS" \
        2>>"$WORK/client.log"
}

field() { python3 -c 'import json, sys; print(json.loads(sys.argv[1]).get(sys.argv[2]))' "$1" "$2"; }
class_bytes() { "$SCRIPTS/testbed.sh" counters | tr ' ' '\n' | sed -n 's/^rc_bytes=//p'; }

FAILURES=0
expect() { # expect CASE TEST JSON VERDICT [DIRECTION]
    local verdict direction summary
    verdict=$(field "$3" verdict)
    direction=$(field "$3" direction)
    summary="original $(field "$3" originalMeanMbps) Mbit/s, control $(field "$3" controlMeanMbps) Mbit/s, area $(field "$3" area), p $(field "$3" ksPValue), $(field "$3" durationSeconds) s"
    if [ "$verdict" = "$4" ] && { [ -z "${5:-}" ] || [ "$direction" = "$5" ]; }; then
        log "PASS $1: $2 -> $verdict${5:+ ($direction)} ($summary)"
    else
        log "FAIL $1: $2 -> $verdict ($direction), expected $4${5:+ ($5)} ($summary)"
        FAILURES=$((FAILURES + 1))
    fi
}
expect_class() { # expect_class CASE min|zero
    local bytes
    bytes=$(class_bytes)
    if { [ "$2" = zero ] && [ "${bytes:-0}" = 0 ]; } || { [ "$2" = min ] && [ "${bytes:-0}" -gt 1000000 ]; }; then
        log "PASS $1: middlebox throttled class carried ${bytes:-0} bytes towards the client"
    else
        log "FAIL $1: middlebox throttled class carried ${bytes:-0} bytes towards the client (expected $2)"
        FAILURES=$((FAILURES + 1))
    fi
}

expect_drops() { # expect_drops CASE: the throttled class dropped packets towards the client (a policer acted)
    local dropped
    dropped=$("$SCRIPTS/testbed.sh" counters | tr ' ' '\n' | sed -n 's/^rc_dropped=//p')
    if [ "${dropped:-0}" -gt 0 ]; then
        log "PASS $1: the policer dropped $dropped packets towards the client"
    else
        log "FAIL $1: the policer dropped ${dropped:-0} packets towards the client (expected some)"
        FAILURES=$((FAILURES + 1))
    fi
}

# ICMP destination-unreachable messages the client's namespace has sent (its own counter, /proc/net/snmp).
icmp_unreachables() {
    "$SCRIPTS/testbed.sh" exec c awk '$1 == "Icmp:" && !header { for (i = 2; i <= NF; i++) if ($i == "OutDestUnreachs") column = i; header = 1; next }
        $1 == "Icmp:" && header { print $column; exit }' /proc/net/snmp
}

# The udp-queue case: two tests of UDP_APP in a row through an uplink queue (see the header).
udp_queue_case() {
    local before after sampler run result original control queue_bytes queue_ms
    bed MODE=port PORTS="$UDP_PORT" DIRS=rs RATE_KBIT="$UDP_UPLINK_KBIT" QLIMIT="$UDP_QLIMIT"
    before=$(icmp_unreachables)
    # The uplink queue's backlog, sampled every 0.2 s (so a pass cannot come from a queue that delayed nothing).
    while :; do
        "$SCRIPTS/testbed.sh" exec r tc -s class show dev rs classid 1:20 2>/dev/null |
            awk '/backlog/ { sub("b$", "", $2); print $2 }'
        sleep 0.2
    done >"$WORK/udp-queue-backlog" 2>/dev/null &
    sampler=$!
    for run in 1 2; do
        result=$(wehe_test "$UDP_APP") || { log "FAIL udp-queue: wehe run $UDP_APP ($run of 2) failed"; FAILURES=$((FAILURES + 1)); continue; }
        original=$(field "$result" originalMeanMbps)
        control=$(field "$result" controlMeanMbps)
        if python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > 0 and float(sys.argv[2]) > 0 else 1)' \
            "$original" "$control" 2>/dev/null; then
            log "PASS udp-queue: run $run of 2: both replays received data (original $original Mbit/s, control $control Mbit/s, verdict $(field "$result" verdict))"
        else
            log "FAIL udp-queue: run $run of 2: a replay received nothing (original $original Mbit/s, control $control Mbit/s, verdict $(field "$result" verdict))"
            FAILURES=$((FAILURES + 1))
        fi
    done
    kill "$sampler" 2>/dev/null || true
    wait "$sampler" 2>/dev/null || true
    after=$(icmp_unreachables)
    if [ "$((after - before))" = 0 ]; then
        log "PASS udp-queue: the client's namespace sent no ICMP port unreachable"
    else
        log "FAIL udp-queue: the client's namespace sent $((after - before)) ICMP port unreachable (a stream to a closed port)"
        FAILURES=$((FAILURES + 1))
    fi
    # Numbers like "150Kb" (tc's units) are read as bytes times 1024 (K) or 1048576 (M).
    queue_bytes=$(awk '{ n = $1 + 0; if ($1 ~ /K$/) n *= 1024; if ($1 ~ /M$/) n *= 1048576; if (n > max) max = n }
        END { print max + 0 }' "$WORK/udp-queue-backlog")
    queue_ms=$((queue_bytes * 8 / UDP_UPLINK_KBIT))
    if [ "$queue_ms" -ge 1000 ]; then
        log "PASS udp-queue: the uplink queue held up to $queue_bytes bytes (${queue_ms} ms at $UDP_UPLINK_KBIT kbit/s)"
    else
        log "FAIL udp-queue: the uplink queue held at most $queue_bytes bytes (${queue_ms} ms): the case did not delay datagrams"
        FAILURES=$((FAILURES + 1))
    fi
}

# The record case: capture a TLS download and a UDP stream in the bed, make tests of them, replay them (see the header).
record_case() {
    local rec=$WORK/recorded pcap=$WORK/recorded.pcap waited=0 result
    env MODE=none LINK_KBIT="$LINK_KBIT" "$SCRIPTS/testbed.sh" up
    mkdir -p "$WORK/origin" "$rec"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$RECORD_SNI" -keyout "$WORK/origin/key.pem" \
        -out "$WORK/origin/cert.pem" 2>/dev/null
    head -c "$((RECORD_MB * 1000000))" /dev/urandom >"$WORK/origin/blob.bin"
    (cd "$WORK/origin" && exec "$SCRIPTS/testbed.sh" exec s openssl s_server -quiet -WWW -accept 443 \
        -cert cert.pem -key key.pem) >>"$WORK/origin.log" 2>&1 &
    "$SCRIPTS/testbed.sh" exec s python3 "$SCRIPTS/udp_stream.py" serve --port 5004 --name "$RECORD_UDP_NAME" \
        --kbit "$RECORD_UDP_KBIT" --seconds 8 >>"$WORK/origin.log" 2>&1 &
    until "$SCRIPTS/testbed.sh" exec s ss -Hltn 'sport = :443' 2>/dev/null | grep -q . &&
        "$SCRIPTS/testbed.sh" exec s ss -Hlun 'sport = :5004' 2>/dev/null | grep -q .; do
        sleep 0.2
        waited=$((waited + 1))
        [ "$waited" -lt 150 ] || { log "FAIL record: the origin servers did not start"; tail "$WORK/origin.log" >&2; FAILURES=$((FAILURES + 1)); return; }
    done
    "$SCRIPTS/testbed.sh" exec c tcpdump -i c0 -U -s 0 -w "$pcap" host 198.18.2.2 2>"$WORK/tcpdump.log" &
    local capture=$!
    waited=0
    until grep -q "listening on" "$WORK/tcpdump.log" 2>/dev/null; do
        sleep 0.1
        waited=$((waited + 1))
        [ "$waited" -lt 100 ] || { log "FAIL record: tcpdump did not start"; cat "$WORK/tcpdump.log" >&2; FAILURES=$((FAILURES + 1)); return; }
    done
    # The download is paced by the reader (curl's rate limit), as a video player paces its buffer.
    "$SCRIPTS/testbed.sh" exec c curl -sS --http1.1 -k --limit-rate 2500K \
        --resolve "$RECORD_SNI:443:198.18.2.2" -o /dev/null -w 'curl: %{size_download} bytes in %{time_total} s\n' \
        "https://$RECORD_SNI/blob.bin" >&2 || { log "FAIL record: the TLS download failed"; FAILURES=$((FAILURES + 1)); }
    "$SCRIPTS/testbed.sh" exec c python3 "$SCRIPTS/udp_stream.py" fetch --server 198.18.2.2 --port 5004 \
        --name "$RECORD_UDP_NAME" --seconds 9 >&2 || { log "FAIL record: the UDP stream failed"; FAILURES=$((FAILURES + 1)); }
    kill -INT "$capture" 2>/dev/null || true
    wait "$capture" 2>/dev/null || true
    log "captured $(stat -c %s "$pcap") bytes; $(tail -2 "$WORK/tcpdump.log" | tr '\n' ' ')"
    "$BIN/wehe" record --pcap "$pcap" --client 198.18.1.2 --id rectls --name "Recorded TLS" --category VIDEO \
        --server-name "$RECORD_SNI" --transport tcp --output "$rec" >"$WORK/record-tls.txt" 2>&1 ||
        { log "FAIL record: wehe record (TLS) failed:"; cat "$WORK/record-tls.txt" >&2; FAILURES=$((FAILURES + 1)); return; }
    "$BIN/wehe" record --pcap "$pcap" --client 198.18.1.2 --id recudp --name "Recorded UDP" --category OTHER \
        --port 5004 --transport udp --output "$rec" >"$WORK/record-udp.txt" 2>&1 ||
        { log "FAIL record: wehe record (UDP) failed:"; cat "$WORK/record-udp.txt" >&2; FAILURES=$((FAILURES + 1)); return; }
    log "wehe record wrote: $(cd "$rec" && ls | tr '\n' ' ')"
    # The replays of the recorded tests only, from here on.
    local published=$REPLAYS
    REPLAYS=$rec
    bed MODE=dpi PATTERN="$RECORD_SNI" RATE_KBIT=4000
    if result=$(wehe_test rectls); then
        expect record-dpi rectls "$result" differentiation throttled
        expect_class record-dpi min
    else
        log "FAIL record-dpi: wehe run rectls failed"; FAILURES=$((FAILURES + 1))
    fi
    bed MODE=none
    if result=$(wehe_test rectls confirm); then
        expect record-none rectls "$result" no-differentiation
    else
        log "FAIL record-none: wehe run rectls failed"; FAILURES=$((FAILURES + 1))
    fi
    bed MODE=dpi PATTERN="$RECORD_UDP_NAME" RATE_KBIT=1000
    if result=$(wehe_test recudp); then
        expect record-udp-dpi recudp "$result" differentiation throttled
    else
        log "FAIL record-udp-dpi: wehe run recudp failed"; FAILURES=$((FAILURES + 1))
    fi
    bed MODE=none
    if result=$(wehe_test recudp confirm); then
        expect record-udp-none recudp "$result" no-differentiation
    else
        log "FAIL record-udp-none: wehe run recudp failed"; FAILURES=$((FAILURES + 1))
    fi
    REPLAYS=$published
}

run_case() {
    local started result
    started=$(date +%s)
    case "$1" in
        dpi)
            bed MODE=dpi PATTERN="$PATTERN"
            result=$(wehe_test "$APP") || { log "FAIL dpi: wehe run $APP failed"; FAILURES=$((FAILURES + 1)); return; }
            expect dpi "$APP" "$result" differentiation throttled
            expect_class dpi min
            ;;
        none)
            bed MODE=none
            result=$(wehe_test "$APP" confirm) || {
                log "FAIL none: wehe run $APP failed"
                FAILURES=$((FAILURES + 1))
                return
            }
            expect none "$APP" "$result" no-differentiation
            expect_class none zero
            ;;
        port)
            bed MODE=port PORTS=443 RATE_KBIT="$PORT_RATE_KBIT"
            result=$(wehe_test "$APP" confirm) || {
                log "FAIL port: wehe run $APP failed"
                FAILURES=$((FAILURES + 1))
                return
            }
            expect port "$APP" "$result" no-differentiation
            result=$(wehe_test "$PORT_TEST") || {
                log "FAIL port: wehe run $PORT_TEST failed"
                FAILURES=$((FAILURES + 1))
                return
            }
            # Port 443 (the port test's control) is the throttled one: the tested port looks prioritized.
            expect port "$PORT_TEST" "$result" differentiation prioritized
            expect_class port min
            ;;
        delayed)
            bed MODE=dpi PATTERN="$PATTERN" DELAYED_BYTES="$DELAYED_BYTES"
            result=$(wehe_test "$APP") || { log "FAIL delayed: wehe run $APP failed"; FAILURES=$((FAILURES + 1)); return; }
            expect delayed "$APP" "$result" differentiation throttled
            expect_class delayed min
            ;;
        police)
            bed MODE=police PATTERN="$PATTERN" RATE_KBIT="$POLICE_KBIT"
            result=$(wehe_test "$APP") || { log "FAIL police: wehe run $APP failed"; FAILURES=$((FAILURES + 1)); return; }
            expect police "$APP" "$result" differentiation throttled
            expect_class police min
            expect_drops police
            ;;
        udp-queue) udp_queue_case ;;
        record) record_case ;;
        *) log "unknown case $1 (dpi, none, port, delayed, police, udp-queue, record)"; exit 2 ;;
    esac
    log "case $1 took $(($(date +%s) - started)) s"
}

START=$(date +%s)
for name in "${CASES[@]}"; do run_case "$name"; done
log "finished in $(($(date +%s) - START)) s with $FAILURES failure(s)"
if [ "$FAILURES" -gt 0 ]; then
    log "server log (last lines):"
    tail -20 "$WORK/server.log" >&2 || true
    log "client log (last lines):"
    tail -20 "$WORK/client.log" >&2 || true
    exit 1
fi
