#!/usr/bin/env bash
# testbed.sh - a throttling ISP on one Linux machine: three network namespaces, a DPI (or port) classifier and an
# htb shaper in the middle one. Ground truth for Wehe's differentiation tests. Root only.
#
#   client ${TB}c                 middlebox ${TB}r                        server ${TB}s
#   c0 198.18.1.2/24  <-veth->  rc 198.18.1.1 | rs 198.18.2.1  <-veth->  s0 198.18.2.2/24
#      2001:2:0:1::2/64            2001:2:0:1::1 | 2001:2:0:2::1            2001:2:0:2::2/64
#
# usage: testbed.sh up | down | status | counters | check | exec c|r|s COMMAND...
#   up        (re)creates the bed; always starts with `down`, so a bed left half up by a killed run is cleaned
#   down      stops every process inside the bed's namespaces, then deletes them (their veths go with them)
#   status    namespaces, processes, shaper classes and classifier counters
#   counters  one line: packets and bytes sent in the throttled class 1:20 on rc (towards the client) and rs
#   check     exits 0 when this machine can run the bed, else prints exactly what is missing and exits 77
#   exec      runs a command inside a namespace (c = client, r = middlebox, s = server)
#
# Settings (environment variables, all optional):
#   TB=wt            name prefix; beds with different prefixes can run side by side
#   MODE=dpi         dpi    the first INSPECT packets of a connection (either direction) containing PATTERN mark it
#                           (conntrack mark) and its packets go to the throttled class
#                    port   TCP and UDP traffic of server ports PORTS goes to the throttled class
#                    police like dpi, but packets above RATE_KBIT are dropped (nft limit) instead of queued
#                    none   nothing is throttled (LINK_KBIT, LOSS_PM and DELAY_MS still apply)
#   PATTERN=googlevideo   byte string searched in each packet's payload (xt_string, Boyer-Moore; per packet, so a
#                         pattern split across two segments is missed, as by many real DPI boxes)
#   PATTERN_HEX=          the pattern as hex digits instead (e.g. 160301); wins over PATTERN
#   INSPECT=10       packets per connection (both directions together) the DPI looks at
#   PORTS=443        MODE=port: comma-separated server ports
#   RATE_KBIT=2000   rate of the throttled class, kbit/s (htb counts Ethernet frames: goodput ≈ 95.6 % of it)
#   LINK_KBIT=0      0: unthrottled traffic is not shaped (veth speed). N: everything shares an N kbit/s access
#                    link (htb default class 1:10) and the throttled class is capped at RATE_KBIT inside it
#   QLIMIT=50000     bytes of queue in the throttled class (bfifo); ≈ 200 ms at 2 Mbit/s
#   DIRS="rc rs"     shaped middlebox interfaces: rc = towards the client (download), rs = towards the server
#   DELAYED_BYTES=0  delayed throttling: a matched connection is throttled only after it carried this many bytes
#                    in the shaped direction (conntrack byte counter), like "first N MB at full speed" offers
#   LOSS_PM=0        random loss towards the client, per mille of packets (nft numgen; every flow)
#   DELAY_MS=0       extra one-way delay towards the client (the kernel has no netem: a userspace NFQUEUE
#                    program, scripts/nfq_delay.py, holds each packet)
set -euo pipefail

TB=${TB:-wt}
C=${TB}c R=${TB}r S=${TB}s
MODE=${MODE:-dpi}
PATTERN=${PATTERN:-googlevideo}
PATTERN_HEX=${PATTERN_HEX:-}
INSPECT=${INSPECT:-10}
PORTS=${PORTS:-443}
RATE_KBIT=${RATE_KBIT:-2000}
LINK_KBIT=${LINK_KBIT:-0}
QLIMIT=${QLIMIT:-50000}
DIRS=${DIRS:-rc rs}
DELAYED_BYTES=${DELAYED_BYTES:-0}
LOSS_PM=${LOSS_PM:-0}
DELAY_MS=${DELAY_MS:-0}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NFQ_DELAY=${NFQ_DELAY:-$HERE/nfq_delay.py}

in_r() { ip netns exec "$R" "$@"; }
say() { echo "testbed: $*" >&2; }
fail() { say "$*"; exit 2; }

# --- prerequisites ----------------------------------------------------------------------------------------------
# Prints one line per missing piece; returns 1 if anything is missing.
missing() {
    local problems=0 tool package
    if [ "$(id -u)" != 0 ]; then echo "not root (uid $(id -u)): network namespaces need root"; problems=1; fi
    for tool in ip:iproute2 tc:iproute2 iptables:iptables ip6tables:iptables nft:nftables; do
        package=${tool#*:} tool=${tool%%:*}
        command -v "$tool" >/dev/null || { echo "missing $tool: apt-get install -y $package"; problems=1; }
    done
    if [ "$DELAY_MS" != 0 ] && ! command -v python3 >/dev/null; then
        echo "missing python3 (DELAY_MS): apt-get install -y python3"; problems=1
    fi
    [ "$problems" = 0 ] || return 1
    # The kernel features, tried in a throwaway namespace.
    local probe=${TB}probe$$
    if ! ip netns add "$probe" 2>/dev/null; then echo "cannot create network namespaces (ip netns add)"; return 1; fi
    ip netns exec "$probe" ip link set lo up
    if ! ip netns exec "$probe" tc qdisc add dev lo root handle 1: htb 2>/dev/null; then
        echo "kernel lacks the htb qdisc (CONFIG_NET_SCH_HTB)"; problems=1
    fi
    if ! ip netns exec "$probe" iptables -t mangle -A POSTROUTING -m string --algo bm --string x \
        -m connbytes --connbytes 0:1 --connbytes-dir both --connbytes-mode packets \
        -j CONNMARK --set-mark 0x1/0x1 2>/dev/null; then
        echo "kernel lacks xt_string/xt_connbytes/CONNMARK (iptables string match on conntrack)"; problems=1
    fi
    if ! ip netns exec "$probe" iptables -t mangle -A POSTROUTING -m connmark --mark 0x1/0x1 \
        -j CLASSIFY --set-class 1:20 2>/dev/null; then
        echo "kernel lacks xt_connmark/CLASSIFY"; problems=1
    fi
    if ! ip netns exec "$probe" nft add table inet probe 2>/dev/null; then
        echo "kernel lacks nftables (CONFIG_NF_TABLES)"; problems=1
    fi
    ip netns del "$probe" 2>/dev/null || true
    [ "$problems" = 0 ]
}

check() {
    local report
    if report=$(missing); then echo "testbed: this machine can run the kernel testbed"; return 0; fi
    echo "$report" | sed 's/^/testbed: cannot run: /' >&2
    exit 77
}

# --- teardown ---------------------------------------------------------------------------------------------------
down() {
    local ns pid
    for ns in "$C" "$R" "$S"; do
        [ -e "/run/netns/$ns" ] || continue
        # A process inside a namespace keeps it alive after `ip netns del`: stop them first, politely then not.
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
        for _ in $(seq 20); do [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break; sleep 0.05; done
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
        ip netns del "$ns" 2>/dev/null || rm -f "/run/netns/$ns"
    done
}

# --- bring-up ---------------------------------------------------------------------------------------------------
topology() {
    local ns
    for ns in "$C" "$R" "$S"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
    # Each veth end is created directly inside its namespace: nothing ever appears in the root namespace.
    ip link add c0 netns "$C" type veth peer name rc netns "$R"
    ip link add s0 netns "$S" type veth peer name rs netns "$R"
    ip -n "$C" addr add 198.18.1.2/24 dev c0
    ip -n "$C" addr add 2001:2:0:1::2/64 dev c0 nodad
    ip -n "$R" addr add 198.18.1.1/24 dev rc
    ip -n "$R" addr add 2001:2:0:1::1/64 dev rc nodad
    ip -n "$R" addr add 198.18.2.1/24 dev rs
    ip -n "$R" addr add 2001:2:0:2::1/64 dev rs nodad
    ip -n "$S" addr add 198.18.2.2/24 dev s0
    ip -n "$S" addr add 2001:2:0:2::2/64 dev s0 nodad
    ip -n "$C" link set c0 up
    ip -n "$R" link set rc up
    ip -n "$R" link set rs up
    ip -n "$S" link set s0 up
    ip -n "$C" route add default via 198.18.1.1
    ip -n "$C" -6 route add default via 2001:2:0:1::1
    ip -n "$S" route add default via 198.18.2.1
    ip -n "$S" -6 route add default via 2001:2:0:2::1
    in_r sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
    # Endpoints send wire-sized packets: 64 KB TSO/GSO bursts would make a 2 Mbit/s class lurch.
    if command -v ethtool >/dev/null; then
        ip netns exec "$C" ethtool -K c0 tso off gso off >/dev/null
        ip netns exec "$S" ethtool -K s0 tso off gso off >/dev/null
    else
        ip -n "$C" link set c0 gso_max_segs 1
        ip -n "$S" link set s0 gso_max_segs 1
    fi
}

shaper() {
    local dev
    for dev in $DIRS; do
        if [ "$LINK_KBIT" = 0 ]; then
            # No default class: unclassified packets bypass htb (full veth speed).
            in_r tc qdisc add dev "$dev" root handle 1: htb
            in_r tc class add dev "$dev" parent 1: classid 1:20 htb rate "${RATE_KBIT}kbit" ceil "${RATE_KBIT}kbit" \
                quantum 1514
        else
            # An access link of LINK_KBIT shared by everything: unmatched -> 1:10, matched -> 1:20 (capped).
            local link_queue=$((LINK_KBIT * 25))   # bytes in 200 ms at the link rate
            [ "$link_queue" -ge 30000 ] || link_queue=30000
            in_r tc qdisc add dev "$dev" root handle 1: htb default 10
            in_r tc class add dev "$dev" parent 1: classid 1:1 htb rate "${LINK_KBIT}kbit" ceil "${LINK_KBIT}kbit" \
                quantum 1514
            in_r tc class add dev "$dev" parent 1:1 classid 1:10 htb rate "${LINK_KBIT}kbit" ceil "${LINK_KBIT}kbit" \
                quantum 1514
            in_r tc class add dev "$dev" parent 1:1 classid 1:20 htb rate "${RATE_KBIT}kbit" ceil "${RATE_KBIT}kbit" \
                quantum 1514
            in_r tc qdisc add dev "$dev" parent 1:10 handle 10: bfifo limit "$link_queue"
        fi
        in_r tc qdisc add dev "$dev" parent 1:20 handle 20: bfifo limit "$QLIMIT"
    done
}

# The conntrack byte counter that decides delayed throttling on interface $1: packets towards the client belong
# to the connection's reply direction (the client opened it), packets towards the server to the original one.
delayed_match() {
    [ "$DELAYED_BYTES" != 0 ] || return 0
    local direction=reply
    [ "$1" = rc ] || direction=original
    echo "-m connbytes --connbytes $DELAYED_BYTES: --connbytes-dir $direction --connbytes-mode bytes"
}

classifier() {
    local ipt dev proto
    local pattern_args=(--string "$PATTERN")
    [ -z "$PATTERN_HEX" ] || pattern_args=(--hex-string "|$PATTERN_HEX|")
    case "$MODE" in
        dpi | police)
            for ipt in iptables ip6tables; do
                in_r "$ipt" -t mangle -A FORWARD -m connbytes --connbytes "0:$INSPECT" --connbytes-dir both \
                    --connbytes-mode packets -m string --algo bm "${pattern_args[@]}" \
                    -j CONNMARK --set-mark 0x1/0x1
                [ "$MODE" = dpi ] || continue
                for dev in $DIRS; do
                    # shellcheck disable=SC2046  # delayed_match prints separate words on purpose
                    in_r "$ipt" -t mangle -A POSTROUTING -o "$dev" -m connmark --mark 0x1/0x1 $(delayed_match "$dev") \
                        -j CLASSIFY --set-class 1:20
                done
            done
            if [ "$MODE" = police ]; then
                in_r nft add table inet tbpolice
                in_r nft add chain inet tbpolice out '{ type filter hook postrouting priority mangle + 1; }'
                for dev in $DIRS; do
                    in_r nft add rule inet tbpolice out oifname "$dev" ct mark and 0x1 == 0x1 \
                        limit rate over "$((RATE_KBIT * 125))" bytes/second burst 32000 bytes counter drop
                done
            fi
            ;;
        port)
            for ipt in iptables ip6tables; do
                for dev in $DIRS; do
                    local side=--sports
                    [ "$dev" = rc ] || side=--dports
                    for proto in tcp udp; do
                        # shellcheck disable=SC2046
                        in_r "$ipt" -t mangle -A POSTROUTING -o "$dev" -p "$proto" -m multiport "$side" "$PORTS" \
                            $(delayed_match "$dev") -j CLASSIFY --set-class 1:20
                    done
                done
            done
            ;;
        none) ;;
        *) fail "unknown MODE=$MODE (dpi, port, police or none)" ;;
    esac
}

impairments() {
    if [ "$LOSS_PM" != 0 ]; then
        in_r nft add table inet tbloss
        in_r nft add chain inet tbloss out '{ type filter hook postrouting priority mangle - 1; }'
        in_r nft add rule inet tbloss out oifname rc numgen random mod 1000 '<' "$LOSS_PM" counter drop
    fi
    if [ "$DELAY_MS" != 0 ]; then
        [ -r "$NFQ_DELAY" ] || fail "DELAY_MS needs $NFQ_DELAY"
        # --queue-bypass: while no program listens on the queue, packets pass undelayed instead of being dropped.
        in_r iptables -t mangle -A POSTROUTING -o rc -j NFQUEUE --queue-num 0 --queue-bypass
        in_r ip6tables -t mangle -A POSTROUTING -o rc -j NFQUEUE --queue-num 0 --queue-bypass
        in_r setsid python3 "$NFQ_DELAY" --queue 0 --delay-ms "$DELAY_MS" </dev/null >/dev/null 2>&1 &
        # Wait until the program has bound queue 0 (before that, packets bypass it).
        for _ in $(seq 100); do
            in_r awk '$1 == 0 { found = 1 } END { exit !found }' /proc/net/netfilter/nfnetlink_queue 2>/dev/null &&
                return 0
            sleep 0.05
        done
        fail "the delay program did not bind NFQUEUE 0"
    fi
}

up() {
    local report
    report=$(missing) || { echo "$report" | sed 's/^/testbed: cannot run: /' >&2; exit 77; }
    [[ $RATE_KBIT =~ ^[0-9]+$ && $RATE_KBIT -gt 0 ]] || fail "RATE_KBIT must be a positive integer"
    [[ $LINK_KBIT =~ ^[0-9]+$ ]] || fail "LINK_KBIT must be a non-negative integer"
    [[ $DELAYED_BYTES =~ ^[0-9]+$ ]] || fail "DELAYED_BYTES must be a non-negative integer"
    [[ $LOSS_PM =~ ^[0-9]+$ && $LOSS_PM -lt 1000 ]] || fail "LOSS_PM must be an integer in 0..999"
    [[ $DELAY_MS =~ ^[0-9]+$ ]] || fail "DELAY_MS must be a non-negative integer"
    [[ $INSPECT =~ ^[0-9]+$ && $INSPECT -gt 0 ]] || fail "INSPECT must be a positive integer"
    down
    topology
    if [ "$MODE" != none ] || [ "$LINK_KBIT" != 0 ]; then shaper; fi
    classifier
    impairments
    say "up: MODE=$MODE rate=${RATE_KBIT}kbit link=${LINK_KBIT}kbit delayed=${DELAYED_BYTES}B loss=${LOSS_PM}‰ delay=${DELAY_MS}ms prefix=$TB"
}

status() {
    local ns
    for ns in "$C" "$R" "$S"; do
        [ -e "/run/netns/$ns" ] && echo "$ns: processes $(ip netns pids "$ns" | tr '\n' ' ')"
    done
    [ -e "/run/netns/$R" ] || { echo "testbed $TB is down"; return 0; }
    in_r tc -s class show dev rc 2>/dev/null || true
    in_r iptables -t mangle -L -v -n 2>/dev/null | grep -E "CONNMARK|CLASSIFY|NFQUEUE" || true
    in_r nft list ruleset 2>/dev/null | grep -E "counter" | grep -v "xt " || true
}

# "rc_packets=N rc_bytes=N rc_dropped=N rs_packets=… " of the throttled class 1:20 (zeros without the class).
counters() {
    local dev out
    for dev in rc rs; do
        out=$(in_r tc -s class show dev "$dev" classid 1:20 2>/dev/null |
            awk '/Sent/ { gsub(",", "", $7); print $4, $2, $7; exit }')
        # shellcheck disable=SC2086  # three numbers, split on purpose
        set -- ${out:-0 0 0}
        printf '%s_packets=%s %s_bytes=%s %s_dropped=%s ' "$dev" "$1" "$dev" "$2" "$dev" "$3"
    done
    echo
}

case "${1:-}" in
    up | down | status | counters | check) "$1" ;;
    exec)
        [ $# -ge 3 ] || fail "usage: $0 exec c|r|s COMMAND..."
        case "$2" in c | r | s) ;; *) fail "exec: namespace must be c, r or s" ;; esac
        ns=${TB}$2
        shift 2
        exec ip netns exec "$ns" "$@"
        ;;
    *)
        echo "usage: $0 up|down|status|counters|check|exec c|r|s COMMAND..." >&2
        exit 2
        ;;
esac
