#!/bin/bash
# Runs `wehe-server mlab` as M-Lab's container would and one test of our client against it, inside private
# namespaces, and leaves the evidence in an output directory for the caller to check (MLabModeTests does).
#
#   unshare --mount --net --pid --fork --kill-child -- scripts/mlab-namespace-check.sh BIN REPLAYS OUT [ROOT]
#
# BIN: the directory of the built wehe-server and wehe; REPLAYS: the replay traces; OUT: a directory outside the
# mounts below, where the results go. Without ROOT, tmpfs file systems are mounted on /wehe, /var/spool and
# /var/local (visible only in this mount namespace, gone with it), the UUID prefix is written to
# /var/local/uuid/prefix and the server runs with the published paths. With ROOT, the server runs with `--root ROOT`
# and nothing is mounted. The network namespace is private, so the fixed ports (9990, 9091, 55556, 80, ...) cannot
# collide with anything else running. The client runs in a second network namespace joined to the server's by a veth
# pair (server wehe0 198.18.0.1, client wehe1 198.18.0.2; benchmarking addresses, nothing routes them), and the
# server captures on wehe0, the interface its clients' packets arrive on, as on M-Lab's net1. Both namespaces and
# the pair go with the caller's namespaces. Run as root (mount, ports below 1024, capture); only through unshare.
set -eu
BIN=$1
REPLAYS=$2
OUT=$3
ROOT=${4:-}

if [ "$$" != 1 ] && [ -z "${WEHE_NAMESPACED:-}" ]; then
    echo "mlab-namespace-check: run me through unshare --mount --net --pid --fork (pid 1 of a new namespace)" >&2
    exit 2
fi
# A /proc of this PID namespace, as a container has: libdispatch's worker monitor reads /proc/<thread id>/stat of
# its threads, and with the host's /proc the namespace's thread ids name other processes or nothing, and it stops
# the program ("registered worker exited prematurely").
mount -t proc proc /proc
ip link set lo up
# The client's network namespace; its name lives on a tmpfs of this mount namespace only.
mkdir -p /run/netns
mount -t tmpfs wehe-check /run/netns
ip netns add wehe-client
ip link add wehe0 type veth peer name wehe1 netns wehe-client
ip addr add 198.18.0.1/24 dev wehe0
ip link set wehe0 up
ip netns exec wehe-client ip addr add 198.18.0.2/24 dev wehe1
ip netns exec wehe-client ip link set wehe1 up
ip netns exec wehe-client ip link set lo up
mkdir -p "$OUT"
PREFIX_VALUE="mlab1-lga0t.example.org_1732650000"
if [ -z "$ROOT" ]; then
    # The mount point /wehe is created once on the host file system (empty); everything under it is tmpfs.
    mkdir -p /wehe
    mount -t tmpfs -o size=256m wehe-check /wehe
    mount -t tmpfs -o size=512m wehe-check /var/spool
    mount -t tmpfs -o size=16m wehe-check /var/local
    SSL=/wehe/ssl
    SPOOL=/var/spool
    mkdir -p /var/local/uuid
    PREFIX_FILE=/var/local/uuid/prefix
    ROOT_OPTION=()
else
    SSL=$ROOT/wehe/ssl
    SPOOL=$ROOT/var/spool
    PREFIX_FILE=$ROOT/uuid-prefix
    ROOT_OPTION=(--root "$ROOT")
fi
printf '%s\n' "$PREFIX_VALUE" >"$PREFIX_FILE"
# What M-Lab's init container does: a CA (ca.crt, ca.key) in the writable ssl directory, nothing else.
"$BIN/wehe-server" certs --out "$SSL" --host ca-only.invalid >/dev/null
rm -f "$SSL/server.crt" "$SSL/server.key"

UUID_PREFIX=$PREFIX_FILE WEHE_REPLAYS=$REPLAYS "$BIN/wehe-server" mlab "${ROOT_OPTION[@]}" \
    wehe.mlab1-lga0t.example.org wehe0 >"$OUT/server.out" 2>"$OUT/server.err" &
SERVER=$!

# Wait for the startup probe (as the kubelet does: GET /metrics on 9990), at most 60 s.
for _ in $(seq 600); do
    if curl -sf -o /dev/null http://127.0.0.1:9990/metrics; then break; fi
    kill -0 "$SERVER" 2>/dev/null || break
    sleep 0.1
done
curl -s -o "$OUT/metrics-9990.txt" -w '%{http_code}' http://127.0.0.1:9990/metrics >"$OUT/metrics-9990.status" || true
curl -s -o "$OUT/metrics-9091.txt" -w '%{http_code}' http://127.0.0.1:9091/metrics >"$OUT/metrics-9091.status" || true

# One test of our client from its own namespace, through the veth pair (the published ports: side channel 55556,
# analyzer 56566, replay port 80).
set +e
ip netns exec wehe-client "$BIN/wehe" run tinyweb --replays "$REPLAYS" --data-dir "$OUT/client" --server 198.18.0.1 \
    --cert "$SSL/ca.crt" \
    --accept-consent --no-confirmation >"$OUT/client.out" 2>"$OUT/client.err"
echo $? >"$OUT/client.status"
set -e

# The archive writes on its own queue: wait (at most 30 s) for the test's decision table file.
for _ in $(seq 300); do
    if [ -n "$(find "$SPOOL/wehe/decisions1" -name '*.json' 2>/dev/null)" ]; then break; fi
    sleep 0.1
done
curl -s -o "$OUT/metrics-after.txt" http://127.0.0.1:9990/metrics || true

kill -TERM "$SERVER" 2>/dev/null || true
set +e
wait "$SERVER"
echo $? >"$OUT/server.status"
set -e

# The evidence: the spool as jostler and pusher would see it, and the names in the ssl directory.
(cd "$SPOOL" && find . -type f | sort) >"$OUT/spool-files.txt"
cp -a "$SPOOL" "$OUT/spool"
ls -1 "$SSL" >"$OUT/ssl-files.txt"
echo done >"$OUT/finished"
