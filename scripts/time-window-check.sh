#!/usr/bin/env bash
# time-window-check.sh - does the kernel testbed's time-limited throttling (testbed.sh FIRST_MS / AFTER_MS) throttle
# a flow only inside (or only after) its window? Root only; no wehe binaries needed.
#
#   scripts/time-window-check.sh [case...]     cases: tcp-first tcp-after udp-first udp-after (default: all four)
#
# Each case brings the bed up (MODE=dpi, PATTERN=timewindowcheck, class 1:20 at RATE_KBIT inside a LINK_KBIT access
# link, FIRST_MS or AFTER_MS = WINDOW_MS), sends one flow from the server namespace to the client for FLOW_S seconds
# (TCP: as fast as it goes; UDP: 1000-byte datagrams at UDP_KBIT), its first payload carrying the pattern, and reads
# the htb byte counters of class 1:20 (throttled) and 1:10 (the rest of the link) on the middlebox's interface
# towards the client every ~10 ms. Passes when:
#   first: class 1:20 carried the flow for WINDOW_MS (at least WINDOW_MS - SLACK_MS, at most WINDOW_MS + the time its
#          queue needs to drain + SLACK_MS), and as many bytes as RATE_KBIT sends in that time (the kernel's own
#          count, whatever the sampler's timing under load); class 1:10 carried nothing inside the window and more
#          than class 1:20 after it;
#   after: class 1:10 carried the flow for WINDOW_MS (class 1:20 started WINDOW_MS ± SLACK_MS after the flow's first
#          bytes), and class 1:20 carried it until the end.
# SLACK_MS covers the sampler: a tc read every ~10 ms idle, slower on a loaded machine (the largest gap is printed).
# Settings: WINDOW_MS=2000 FLOW_S=4 RATE_KBIT=2000 LINK_KBIT=100000 UDP_KBIT=8000 SLACK_MS=300 TB=tw KEEP=1 (keep
# the samples). Without root or the kernel features it prints why and exits 77; a failed case exits 1.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SCRIPTS=$ROOT/scripts
if [ -z "${TWC_ISOLATED:-}" ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
    exec env TWC_ISOLATED=1 "$SCRIPTS/isolated.sh" "$0" "$@"
fi

export TB=${TB:-tw}
WINDOW_MS=${WINDOW_MS:-2000}
FLOW_S=${FLOW_S:-4}
RATE_KBIT=${RATE_KBIT:-2000}
LINK_KBIT=${LINK_KBIT:-100000}
UDP_KBIT=${UDP_KBIT:-8000}
SLACK_MS=${SLACK_MS:-300}
CASES=("$@")
[ ${#CASES[@]} -gt 0 ] || CASES=(tcp-first tcp-after udp-first udp-after)

log() { echo "time-window-check: $*" >&2; }
if ! reason=$(FIRST_MS=1 "$SCRIPTS/testbed.sh" check 2>&1); then
    log "cannot run: $reason"
    exit 77
fi
WORK=$(mktemp -d /tmp/wehe-time-window.XXXXXX)
cleanup() {
    "$SCRIPTS/testbed.sh" down || true
    if [ "${KEEP:-}" = 1 ]; then log "samples kept in $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The flow's two ends (python3): `flow.py send tcp|udp` in the server namespace, `flow.py receive tcp|udp` in the
# client namespace.
cat >"$WORK/flow.py" <<'EOF'
import socket, sys, time
role, proto, seconds, kbit = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
PATTERN = b"timewindowcheck"
if role == "receive":
    if proto == "tcp":
        server = socket.create_server(("0.0.0.0", 5301))
        connection, _ = server.accept()
        while connection.recv(65536):
            pass
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("0.0.0.0", 5302))
        sock.settimeout(seconds + 5)
        try:
            while sock.recv(65536) != b"end":
                pass
        except socket.timeout:
            pass
else:
    end = time.monotonic() + seconds
    if proto == "tcp":
        # A small send buffer: what is left in it at the end drains at the throttled rate.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 131072)
        sock.connect(("198.18.1.2", 5301))
        sock.sendall(PATTERN + bytes(1000))
        chunk = bytes(65536)
        while time.monotonic() < end:
            sock.sendall(chunk)
        sock.close()
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        gap = 8000 / (kbit * 1000)  # one 1000-byte datagram
        start, sent = time.monotonic(), 0
        sock.sendto(PATTERN + bytes(985), ("198.18.1.2", 5302))
        while time.monotonic() < end:
            sent += 1
            time.sleep(max(0.0, start + sent * gap - time.monotonic()))
            sock.sendto(bytes(1000), ("198.18.1.2", 5302))
        for _ in range(3):
            sock.sendto(b"end", ("198.18.1.2", 5302))
EOF

FAILURES=0
run_case() {
    local name=$1 proto=${1%-*} part=${1#*-} knob
    case "$name" in tcp-first | tcp-after | udp-first | udp-after) ;; *) log "unknown case $name"; exit 2 ;; esac
    knob=FIRST_MS
    [ "$part" = first ] || knob=AFTER_MS
    env MODE=dpi PATTERN=timewindowcheck RATE_KBIT="$RATE_KBIT" LINK_KBIT="$LINK_KBIT" "$knob=$WINDOW_MS" \
        "$SCRIPTS/testbed.sh" up
    "$SCRIPTS/testbed.sh" exec c python3 "$WORK/flow.py" receive "$proto" "$FLOW_S" "$UDP_KBIT" &
    local receiver=$!
    # Counters of class 1:20 and 1:10 on rc, with a nanosecond timestamp, until the flow has ended.
    "$SCRIPTS/testbed.sh" exec r bash -c 'while [ ! -e "$1" ]; do
        t=$(date +%s%N)
        tc -s class show dev rc | awk -v t="$t" "/^class htb 1:20 /{c=20} /^class htb 1:10 /{c=10}
            /^class htb 1:1 /{c=1} /Sent/{b[c]=\$2} END{print t, b[20]+0, b[10]+0}"
    done' sampler "$WORK/done" >"$WORK/$name.samples" &
    local sampler=$!
    sleep 0.5
    "$SCRIPTS/testbed.sh" exec s python3 "$WORK/flow.py" send "$proto" "$FLOW_S" "$UDP_KBIT"
    wait "$receiver" || true
    # Let the queue of class 1:20 drain before the last samples.
    sleep 1
    touch "$WORK/done"
    wait "$sampler" || true
    rm -f "$WORK/done"
    local drain_ms=$((50000 * 8 / RATE_KBIT)) # testbed.sh's default QLIMIT at RATE_KBIT
    if python3 - "$WORK/$name.samples" "$part" "$WINDOW_MS" "$SLACK_MS" "$drain_ms" "$RATE_KBIT" "$name" <<'EOF'; then
import sys
path, part, window, slack, drain, kbit, name = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7]), sys.argv[7]
rows = [tuple(map(int, line.split())) for line in open(path) if len(line.split()) == 3]
steps = list(zip(rows, rows[1:]))
print(f"{name}: {len(rows)} samples, largest gap {max(b[0] - a[0] for a, b in steps) / 1e6:.0f} ms")
# Steps (about 10 ms) in which a class sent something: only the flow's packets go to 1:20; in 1:10 a step counts
# from 1500 bytes on (a full-sized packet of the flow, not an ARP or neighbour-discovery frame).
in20 = [(b[0] - a[0], b[0], b[1] - a[1]) for a, b in steps if b[1] > a[1]]
in10 = [(b[0] - a[0], b[0], b[2] - a[2]) for a, b in steps if b[2] - a[2] >= 1500]
if not in20:
    sys.exit(print(f"{name}: class 1:20 carried nothing") or 1)
ms = lambda ns: ns / 1e6  # noqa: E731
total20, total10 = rows[-1][1] - rows[0][1], rows[-1][2] - rows[0][2]
if part == "first":
    start, end = ms(in20[0][1] - in20[0][0]), ms(in20[-1][1])
    during = sum(size for _, t, size in in10 if start + slack < ms(t) < start + window - slack)
    after = sum(size for _, t, size in in10 if ms(t) > start + window - slack)
    low, high = kbit * 125 * (window - slack) / 1000, kbit * 125 * (window + drain + slack) / 1000
    print(f"{name}: class 1:20 carried {total20} bytes ({low:.0f}-{high:.0f} expected) for {end - start:.0f} ms "
          f"(window {window} ms, queue drain ≤ {drain} ms); class 1:10 carried {during} bytes inside the window and "
          f"{after} after it")
    ok = (window - slack <= end - start <= window + drain + slack and low <= total20 <= high and during == 0
          and after > total20)
else:
    start = ms(in20[0][1] - in20[0][0])
    if not in10 or ms(in10[0][1] - in10[0][0]) > start:
        sys.exit(print(f"{name}: class 1:20 carried the flow from its start ({total20} bytes)") or 1)
    flow_start = ms(in10[0][1] - in10[0][0])
    late10 = sum(size for _, t, size in in10 if ms(t) > start + slack)
    print(f"{name}: class 1:10 carried the flow from its start, class 1:20 from {start - flow_start:.0f} ms on "
          f"(window {window} ms), {total20} bytes; class 1:10 {late10} bytes after that")
    ok = abs(start - flow_start - window) <= slack and late10 < 0.05 * total20
sys.exit(0 if ok else 1)
EOF
        log "PASS $name"
    else
        log "FAIL $name (samples: $WORK/$name.samples)"
        FAILURES=$((FAILURES + 1))
    fi
}

for name in "${CASES[@]}"; do run_case "$name"; done
[ "$FAILURES" = 0 ] || { log "$FAILURES case(s) failed"; exit 1; }
log "all ${#CASES[@]} case(s) passed"
