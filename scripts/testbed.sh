#!/usr/bin/env bash
# testbed.sh - a throttling ISP on one Linux machine: three network namespaces, a DPI (or port) classifier and an
# htb shaper in the middle one. Ground truth for Wehe's differentiation tests. Root only.
#
#   client ${TB}c                 middlebox ${TB}r                        server ${TB}s
#   c0 198.18.1.2/24  <-veth->  rc 198.18.1.1 | rs 198.18.2.1  <-veth->  s0 198.18.2.2/24
#      2001:2:0:1::2/64            2001:2:0:1::1 | 2001:2:0:2::1            2001:2:0:2::2/64
#
# With TOPO=y (WeHeY localization) the bed is a Y: two servers whose paths meet once, at the client's access router.
#
#                                                  branch ${TB}a                      server 1 ${TB}s
#   client ${TB}c          access router ${TB}r   ra 198.18.3.1 <-> ar 198.18.3.2 | as 198.18.2.1 <-> s0 198.18.2.2
#   c0 198.18.1.2 <-> rc 198.18.1.1 |
#                                   rb 198.18.4.1 <-> br 198.18.4.2 | bt 198.18.5.1 <-> t0 198.18.5.2
#                                                  branch ${TB}b                      server 2 ${TB}t
#   (IPv6: 2001:2:0:N::/64 with the same N as the IPv4 third octet, .1 -> ::1, .2 -> ::2)
#
# usage: testbed.sh up | down | status | counters | check | exec c|r|s|a|b|t COMMAND...
#   up        (re)creates the bed; always starts with `down`, so a bed left half up by a killed run is cleaned
#   down      stops every process inside the bed's namespaces, then deletes them (their veths go with them)
#   status    namespaces, processes, shaper classes and classifier counters
#   counters  one line: packets and bytes sent in the throttled class 1:20 on rc (towards the client) and rs
#   check     exits 0 when this machine can run the bed, else prints exactly what is missing and exits 77
#   exec      runs a command inside a namespace (c = client, r = middlebox or access router, s = server or server 1;
#             Y only: a, b = branch routers, t = server 2)
#
# Settings (environment variables, all optional):
#   TB=wt            name prefix; beds with different prefixes can run side by side
#   MODE=dpi         dpi    the first INSPECT packets of a connection (either direction) containing PATTERN mark it
#                           (conntrack mark) and its packets go to the throttled class
#                    port   TCP and UDP traffic of server ports PORTS goes to the throttled class
#                    police like dpi, but packets above RATE_KBIT are dropped instead of queued: a token bucket of
#                           POLICE_BURST bytes in front of a queue of POLICE_QUEUE bytes (one frame), so what exceeds
#                           the rate is dropped at once (htb class 1:20 with that burst and a one-frame bfifo)
#                    none   nothing is throttled (LINK_KBIT, LOSS_PM and DELAY_MS still apply)
#   PATTERN=googlevideo   byte string searched in each packet's payload (xt_string, Boyer-Moore; per packet, so a
#                         pattern split across two segments is missed, as by many real DPI boxes)
#   PATTERN_HEX=          the pattern as hex digits instead (e.g. 160301); wins over PATTERN
#   INSPECT=10       packets per connection (both directions together) the DPI looks at
#   PORTS=443        MODE=port: comma-separated server ports
#   RATE_KBIT=2000   rate of the throttled class, kbit/s (htb counts Ethernet frames: goodput ≈ 95.6 % of it)
#   LINK_KBIT=0      0: unthrottled traffic is not shaped (veth speed). N: everything shares an N kbit/s access
#                    link (htb default class 1:10) and the throttled class is capped at RATE_KBIT inside it
#   QLIMIT=50000     bytes of queue in the throttled class (bfifo); ≈ 200 ms at 2 Mbit/s. Not with MODE=police
#   POLICE_BURST=32000  MODE=police: bytes the policer lets through above the rate after an idle period (bucket).
#                    With LINK_KBIT, htb sends a class within its own bucket without asking the link class: a burst
#                    of megabytes can leave at veth speed past the link (with 2 MB the app came out faster than
#                    the control), so keep it to a few hundred kB
#   POLICE_QUEUE=1514   MODE=police: bytes of queue behind the bucket (bfifo needs room for one frame to pass any)
#   DIRS="rc rs"     shaped middlebox interfaces: rc = towards the client (download), rs = towards the server
#   DELAYED_BYTES=0  delayed throttling: a matched connection is throttled only after it carried this many bytes
#                    in the shaped direction (conntrack byte counter), like "first N MB at full speed" offers
#   FIRST_MS=0       time-limited throttling: a flow is throttled only during its first FIRST_MS milliseconds, then
#                    runs at full speed ("the first N seconds of a video are slowed")
#   AFTER_MS=0       the reverse: a flow runs at full speed for AFTER_MS milliseconds, then is throttled. The clock
#                    of a flow starts at its first packet the classifier sends to class 1:20 (with MODE=dpi: the
#                    packet carrying PATTERN, usually the TLS ClientHello). No kernel time match is needed: an nft
#                    table (tbtime, priority mangle + 1, after the iptables rules) puts each flow's conntrack id into
#                    a set "seen" (1 h) and a set "first" whose element times out after N ms, and sends the flow's
#                    packets back out of class 1:20 (meta priority 0: default class or unshaped) while it is
#                    not in "first" (FIRST_MS) or while it is (AFTER_MS). TCP and UDP alike (any conntrack flow);
#                    one of the two at a time; not with SCOPE=flow
#   LOSS_PM=0        random loss towards the client, per mille of packets (nft numgen; every flow)
#   DELAY_MS=0       extra one-way delay towards the client (the kernel has no netem: a userspace NFQUEUE
#                    program, scripts/nfq_delay.py, holds each packet)
#   JITTER_MS=0      with DELAY_MS: each packet's delay uniform in DELAY_MS ± JITTER_MS, order kept (FIFO)
#   TOPO=line        line: the three namespaces above. y: the Y of WeHeY (six namespaces, drawing above)
#   PLACE=shared     TOPO=y: where the classifier and shaper sit. shared: on the access router r, interface rc (the
#                    segment both servers' traffic crosses); a or b: on that branch router only, interface ar or br
#                    (towards the client); ab: one identical throttler on each branch router. Y shapes the download direction only (DIRS does not apply); LOSS_PM
#                    and DELAY_MS apply on r (rc) as in the line topology
#   SCOPE=aggregate  aggregate: every matched flow shares one htb class 1:20 at RATE_KBIT (a per-plan limiter).
#                    flow: each matched flow gets its own RATE_KBIT class (HMARK hashes the 5-tuple into one of
#                    FLOW_CLASSES leaf classes under 1:20; two flows share one with probability 1/FLOW_CLASSES).
#                    Not with MODE=police
#   FLOW_CLASSES=32  SCOPE=flow: number of per-flow classes
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
POLICE_BURST=${POLICE_BURST:-32000}
POLICE_QUEUE=${POLICE_QUEUE:-1514}
DIRS=${DIRS:-rc rs}
DELAYED_BYTES=${DELAYED_BYTES:-0}
FIRST_MS=${FIRST_MS:-0}
AFTER_MS=${AFTER_MS:-0}
LOSS_PM=${LOSS_PM:-0}
DELAY_MS=${DELAY_MS:-0}
TOPO=${TOPO:-line}
PLACE=${PLACE:-shared}
SCOPE=${SCOPE:-aggregate}
FLOW_CLASSES=${FLOW_CLASSES:-32}
A=${TB}a B=${TB}b T=${TB}t
# Where the classifier and the shaper run, and which of that namespace's interfaces they shape.
SHAPE_NS=$R
SHAPE_DEVS=$DIRS
if [ "$TOPO" = y ]; then
    case "$PLACE" in
        shared) SHAPE_NS=$R SHAPE_DEVS=rc ;;
        a) SHAPE_NS=$A SHAPE_DEVS=ar ;;
        b) SHAPE_NS=$B SHAPE_DEVS=br ;;
        ab) SHAPE_NS=$A SHAPE_DEVS=ar ;; # and the same throttler on b (up installs both; status shows a)
        *) echo "testbed: unknown PLACE=$PLACE (shared, a, b or ab)" >&2; exit 2 ;;
    esac
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NFQ_DELAY=${NFQ_DELAY:-$HERE/nfq_delay.py}

in_r() { ip netns exec "$R" "$@"; }
in_x() { ip netns exec "$SHAPE_NS" "$@"; }
# Whether a shaped interface sends towards the client (download): rc, ar, br.
towards_client() { case "$1" in rc | ar | br) return 0 ;; *) return 1 ;; esac; }
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
    if [ "$SCOPE" = flow ] && ! ip netns exec "$probe" iptables -t mangle -A POSTROUTING \
        -j HMARK --hmark-tuple src,dst,sport,dport,proto --hmark-mod 2 --hmark-rnd 1 2>/dev/null; then
        echo "kernel lacks xt_HMARK (SCOPE=flow)"; problems=1
    fi
    if ! ip netns exec "$probe" nft add table inet probe 2>/dev/null; then
        echo "kernel lacks nftables (CONFIG_NF_TABLES)"; problems=1
    elif [ "$FIRST_MS$AFTER_MS" != 00 ] && ! ip netns exec "$probe" nft -f - 2>/dev/null <<'EOF'
table inet probe {
    set s { typeof ct id; flags dynamic, timeout; }
    chain c { type filter hook postrouting priority mangle + 1; meta priority 1:20 add @s { ct id timeout 300ms } meta priority set 0; }
}
EOF
    then
        echo "nft cannot keep conntrack ids in a dynamic set with element timeouts (FIRST_MS/AFTER_MS)"; problems=1
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
    # Every namespace either topology may have made, whatever TOPO says now.
    for ns in "$C" "$R" "$S" "$A" "$B" "$T"; do
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

# One point-to-point link: veth_link NS1 DEV1 ADDR1 NS2 DEV2 ADDR2 SUBNET (x.y: 198.18.SUBNET.x, 2001:2:0:SUBNET::x).
veth_link() {
    # "dev"/"name" spelled out: ip would read a bare "as" as an abbreviation of "address".
    ip link add name "$2" netns "$1" type veth peer name "$5" netns "$4"
    ip -n "$1" addr add "198.18.$7.$3/24" dev "$2"
    ip -n "$1" addr add "2001:2:0:$7::$3/64" dev "$2" nodad
    ip -n "$4" addr add "198.18.$7.$6/24" dev "$5"
    ip -n "$4" addr add "2001:2:0:$7::$6/64" dev "$5" nodad
    ip -n "$1" link set dev "$2" up
    ip -n "$4" link set dev "$5" up
}

# add_route NS PREFIX-THIRD-OCTET VIA-THIRD-OCTET VIA-HOST (both families)
add_route() {
    ip -n "$1" route add "198.18.$2.0/24" via "198.18.$3.$4"
    ip -n "$1" -6 route add "2001:2:0:$2::/64" via "2001:2:0:$3::$4"
}
default_route() {
    ip -n "$1" route add default via "198.18.$2.$3"
    ip -n "$1" -6 route add default via "2001:2:0:$2::$3"
}

# The Y: client - access router - two branch routers - two servers (drawing at the top).
topology_y() {
    local ns
    for ns in "$C" "$R" "$A" "$B" "$S" "$T"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
    veth_link "$C" c0 2 "$R" rc 1 1
    veth_link "$R" ra 1 "$A" ar 2 3
    veth_link "$R" rb 1 "$B" br 2 4
    veth_link "$A" as 1 "$S" s0 2 2
    veth_link "$B" bt 1 "$T" t0 2 5
    default_route "$C" 1 1
    add_route "$R" 2 3 2
    add_route "$R" 5 4 2
    default_route "$A" 3 1
    default_route "$B" 4 1
    default_route "$S" 2 1
    default_route "$T" 5 1
    for ns in "$R" "$A" "$B"; do ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1; done
    local pair
    for pair in "$C:c0" "$S:s0" "$T:t0"; do
        if command -v ethtool >/dev/null; then
            ip netns exec "${pair%%:*}" ethtool -K "${pair#*:}" tso off gso off >/dev/null
        else
            ip -n "${pair%%:*}" link set dev "${pair#*:}" gso_max_segs 1
        fi
    done
}

# The htb class (or, with SCOPE=flow, the per-flow leaf classes) matched packets go to, under parent 1:$1 ... of dev $2.
throttled_class() {
    local dev=$1 parent=$2 i minor
    if [ "$SCOPE" = flow ]; then
        # An inner class without a cap of its own: each flow's leaf holds it to RATE_KBIT.
        local total=$((RATE_KBIT * FLOW_CLASSES))
        in_x tc class add dev "$dev" parent "$parent" classid 1:20 htb rate "${total}kbit" ceil "${total}kbit" \
            quantum 1514
        for i in $(seq 0 $((FLOW_CLASSES - 1))); do
            minor=$(printf %x $((256 + i)))
            in_x tc class add dev "$dev" parent 1:20 classid "1:$minor" htb rate "${RATE_KBIT}kbit" \
                ceil "${RATE_KBIT}kbit" quantum 1514
            in_x tc qdisc add dev "$dev" parent "1:$minor" bfifo limit "$QLIMIT"
        done
    elif [ "$MODE" = police ]; then
        # A policer: htb's token bucket (POLICE_BURST bytes, refilled at RATE_KBIT) with room for one frame behind
        # it; a packet that finds the bucket empty and the frame slot taken is dropped, none waits longer than one
        # frame's time. (nft's byte-mode `limit` cannot do this: its bucket holds a whole second of the rate plus
        # the burst, so a 6 MB replay at 46 Mbit/s passed it untouched.)
        in_x tc class add dev "$dev" parent "$parent" classid 1:20 htb rate "${RATE_KBIT}kbit" ceil "${RATE_KBIT}kbit" \
            burst "$POLICE_BURST" cburst "$POLICE_BURST" quantum 1514
        in_x tc qdisc add dev "$dev" parent 1:20 handle 20: bfifo limit "$POLICE_QUEUE"
    else
        in_x tc class add dev "$dev" parent "$parent" classid 1:20 htb rate "${RATE_KBIT}kbit" ceil "${RATE_KBIT}kbit" \
            quantum 1514
        in_x tc qdisc add dev "$dev" parent 1:20 handle 20: bfifo limit "$QLIMIT"
    fi
}

# The iptables target words that send a matched packet to the throttled class (aggregate) or, per flow, mark it
# with the flow's hash (mark 256 + hash); per_flow_rules then maps each mark to its leaf class.
to_throttled() {
    if [ "$SCOPE" = flow ]; then
        echo "-j HMARK --hmark-tuple src,dst,sport,dport,proto --hmark-mod $FLOW_CLASSES --hmark-offset 256 --hmark-rnd 0x5eed"
    else
        echo "-j CLASSIFY --set-class 1:20"
    fi
}
per_flow_rules() { # per_flow_rules IPT DEV
    [ "$SCOPE" = flow ] || return 0
    local i
    for i in $(seq 256 $((256 + FLOW_CLASSES - 1))); do
        in_x "$1" -t mangle -A POSTROUTING -o "$2" -m mark --mark "$i" -j CLASSIFY --set-class "1:$(printf %x "$i")"
    done
}

shaper() {
    local dev
    for dev in $SHAPE_DEVS; do
        if [ "$LINK_KBIT" = 0 ]; then
            # No default class: unclassified packets bypass htb (full veth speed).
            in_x tc qdisc add dev "$dev" root handle 1: htb
            throttled_class "$dev" 1:
        else
            # An access link of LINK_KBIT shared by everything: unmatched -> 1:10, matched -> 1:20 (capped).
            local link_queue=$((LINK_KBIT * 25))   # bytes in 200 ms at the link rate
            [ "$link_queue" -ge 30000 ] || link_queue=30000
            in_x tc qdisc add dev "$dev" root handle 1: htb default 10
            in_x tc class add dev "$dev" parent 1: classid 1:1 htb rate "${LINK_KBIT}kbit" ceil "${LINK_KBIT}kbit" \
                quantum 1514
            in_x tc class add dev "$dev" parent 1:1 classid 1:10 htb rate "${LINK_KBIT}kbit" ceil "${LINK_KBIT}kbit" \
                quantum 1514
            throttled_class "$dev" 1:1
            in_x tc qdisc add dev "$dev" parent 1:10 handle 10: bfifo limit "$link_queue"
        fi
    done
}

# The conntrack byte counter that decides delayed throttling on interface $1: packets towards the client belong
# to the connection's reply direction (the client opened it), packets towards the server to the original one.
delayed_match() {
    [ "$DELAYED_BYTES" != 0 ] || return 0
    local direction=reply
    towards_client "$1" || direction=original
    echo "-m connbytes --connbytes $DELAYED_BYTES: --connbytes-dir $direction --connbytes-mode bytes"
}

classifier() {
    local ipt dev proto
    local pattern_args=(--string "$PATTERN")
    [ -z "$PATTERN_HEX" ] || pattern_args=(--hex-string "|$PATTERN_HEX|")
    case "$MODE" in
        dpi | police)
            for ipt in iptables ip6tables; do
                in_x "$ipt" -t mangle -A FORWARD -m connbytes --connbytes "0:$INSPECT" --connbytes-dir both \
                    --connbytes-mode packets -m string --algo bm "${pattern_args[@]}" \
                    -j CONNMARK --set-mark 0x1/0x1
                for dev in $SHAPE_DEVS; do
                    # shellcheck disable=SC2046  # delayed_match and to_throttled print separate words on purpose
                    in_x "$ipt" -t mangle -A POSTROUTING -o "$dev" -m connmark --mark 0x1/0x1 $(delayed_match "$dev") \
                        $(to_throttled)
                    per_flow_rules "$ipt" "$dev"
                done
            done
            ;;
        port)
            for ipt in iptables ip6tables; do
                for dev in $SHAPE_DEVS; do
                    local side=--sports
                    towards_client "$dev" || side=--dports
                    for proto in tcp udp; do
                        # shellcheck disable=SC2046
                        in_x "$ipt" -t mangle -A POSTROUTING -o "$dev" -p "$proto" -m multiport "$side" "$PORTS" \
                            $(delayed_match "$dev") $(to_throttled)
                    done
                    per_flow_rules "$ipt" "$dev"
                done
            done
            ;;
        none) ;;
        *) fail "unknown MODE=$MODE (dpi, port, police or none)" ;;
    esac
}

# FIRST_MS / AFTER_MS: runs after the iptables mangle chains (priority -150), which have set the packet's class
# (skb priority 1:20); the first such packet of a flow starts its clock. `add` does not refresh an element that is
# already in a set, and "seen" keeps a flow from starting a second clock when its "first" element has timed out.
time_window() {
    local ms=$FIRST_MS outside='ct id != @first'
    [ "$FIRST_MS" != 0 ] || [ "$AFTER_MS" != 0 ] || return 0
    [ "$AFTER_MS" = 0 ] || ms=$AFTER_MS outside='ct id @first'
    in_x nft -f - <<EOF
table inet tbtime {
    set seen { typeof ct id; flags dynamic, timeout; timeout 1h; size 65536; }
    set first { typeof ct id; flags dynamic, timeout; size 65536; }
    chain out {
        type filter hook postrouting priority mangle + 1;
        meta priority 1:20 ct id != @seen counter add @seen { ct id } add @first { ct id timeout ${ms}ms }
        meta priority 1:20 $outside counter meta priority set 0
    }
}
EOF
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
        in_r setsid python3 "$NFQ_DELAY" --queue 0 --delay-ms "$DELAY_MS" --jitter-ms "${JITTER_MS:-0}" \
            </dev/null >/dev/null 2>&1 &
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
    [[ $FIRST_MS =~ ^[0-9]+$ && $AFTER_MS =~ ^[0-9]+$ ]] || fail "FIRST_MS and AFTER_MS must be non-negative integers"
    [ "$FIRST_MS" = 0 ] || [ "$AFTER_MS" = 0 ] || fail "FIRST_MS and AFTER_MS exclude each other"
    [ "$FIRST_MS$AFTER_MS" = 00 ] || [ "$SCOPE" = aggregate ] || fail "FIRST_MS/AFTER_MS need SCOPE=aggregate"
    [[ $LOSS_PM =~ ^[0-9]+$ && $LOSS_PM -lt 1000 ]] || fail "LOSS_PM must be an integer in 0..999"
    [[ $DELAY_MS =~ ^[0-9]+$ ]] || fail "DELAY_MS must be a non-negative integer"
    [[ $INSPECT =~ ^[0-9]+$ && $INSPECT -gt 0 ]] || fail "INSPECT must be a positive integer"
    [[ $POLICE_BURST =~ ^[0-9]+$ && $POLICE_BURST -ge 1514 ]] || fail "POLICE_BURST must be an integer ≥ 1514"
    [[ $POLICE_QUEUE =~ ^[0-9]+$ && $POLICE_QUEUE -ge 1514 ]] || fail "POLICE_QUEUE must be an integer ≥ 1514"
    case "$TOPO" in line | y) ;; *) fail "unknown TOPO=$TOPO (line or y)" ;; esac
    case "$SCOPE" in aggregate | flow) ;; *) fail "unknown SCOPE=$SCOPE (aggregate or flow)" ;; esac
    [[ $FLOW_CLASSES =~ ^[0-9]+$ && $FLOW_CLASSES -gt 0 && $FLOW_CLASSES -le 256 ]] ||
        fail "FLOW_CLASSES must be an integer in 1..256"
    [ "$SCOPE" = aggregate ] || [ "$MODE" != police ] || fail "SCOPE=flow does not apply to MODE=police"
    down
    if [ "$TOPO" = y ]; then topology_y; else topology; fi
    if [ "$MODE" != none ] || [ "$LINK_KBIT" != 0 ]; then shaper; fi
    classifier
    time_window
    if [ "$TOPO" = y ] && [ "$PLACE" = ab ]; then
        # One identical throttler on each branch: both servers see throttling, none of it in the access network.
        SHAPE_NS=$B SHAPE_DEVS=br
        if [ "$MODE" != none ] || [ "$LINK_KBIT" != 0 ]; then shaper; fi
        classifier
        time_window
        SHAPE_NS=$A SHAPE_DEVS=ar
    fi
    impairments
    [ "$TOPO" = line ] || say "up: Y topology, throttler placed on $PLACE ($SHAPE_NS: $SHAPE_DEVS), scope $SCOPE"
    say "up: MODE=$MODE rate=${RATE_KBIT}kbit link=${LINK_KBIT}kbit delayed=${DELAYED_BYTES}B first=${FIRST_MS}ms after=${AFTER_MS}ms loss=${LOSS_PM}‰ delay=${DELAY_MS}ms prefix=$TB"
}

status() {
    local ns
    for ns in "$C" "$R" "$S" "$A" "$B" "$T"; do
        [ -e "/run/netns/$ns" ] && echo "$ns: processes $(ip netns pids "$ns" | tr '\n' ' ')"
    done
    [ -e "/run/netns/$R" ] || { echo "testbed $TB is down"; return 0; }
    [ -e "/run/netns/$SHAPE_NS" ] || { echo "testbed $TB: no namespace $SHAPE_NS (TOPO/PLACE differ from up?)"; return 0; }
    in_x tc -s class show dev "${SHAPE_DEVS%% *}" 2>/dev/null || true
    in_x iptables -t mangle -L -v -n 2>/dev/null | grep -E "CONNMARK|CLASSIFY|HMARK|NFQUEUE" || true
    in_x nft list ruleset 2>/dev/null | grep -E "counter" | grep -v "xt " || true
}

# "rc_packets=N rc_bytes=N rc_dropped=N rs_packets=… " of the throttled class 1:20 (zeros without the class). With
# TOPO=y: the shaped interface of the placement (rc, ar or br; with SCOPE=flow class 1:20 counts all its leaves).
counters() {
    local dev out devs="rc rs"
    [ "$TOPO" = line ] || devs=$SHAPE_DEVS
    for dev in $devs; do
        out=$(in_x tc -s class show dev "$dev" classid 1:20 2>/dev/null |
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
        [ $# -ge 3 ] || fail "usage: $0 exec c|r|s|a|b|t COMMAND..."
        case "$2" in c | r | s | a | b | t) ;; *) fail "exec: namespace must be c, r, s (Y: also a, b, t)" ;; esac
        ns=${TB}$2
        shift 2
        exec ip netns exec "$ns" "$@"
        ;;
    *)
        echo "usage: $0 up|down|status|counters|check|exec c|r|s|a|b|t COMMAND..." >&2
        exit 2
        ;;
esac
