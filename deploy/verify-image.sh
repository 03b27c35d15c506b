#!/bin/sh
# Builds deploy/Containerfile with podman and runs one Wehe test against the image's file system.
#
# On machines where podman can build but not run containers (crun: "cgroups in hybrid mode not supported",
# "setrlimit RLIMIT_NOFILE/RLIMIT_NPROC: Operation not permitted"), the build uses chroot isolation and the server is
# started from the image's root file system with chroot in a private mount namespace. Needs root, podman, a built
# wehe-server and wehe (BINARY, default .build/release), and a Debian base image: pulled, or made with
#   debootstrap --variant=minbase bookworm /tmp/rootfs && tar -C /tmp/rootfs -c . | podman import - debian:bookworm-slim
# Loopback only: the server binds 127.0.0.1 on ports 45555-46566.
set -eu
BIN_DIR=${BIN_DIR:-.build/release}
WORK=$(mktemp -d /tmp/wehe-image-XXXXXX)
NAME=wehe-verify-$$
cleanup() {
    [ -n "${SERVER_PID:-}" ] && kill "$SERVER_PID" 2>/dev/null || true
    podman umount "$NAME" >/dev/null 2>&1 || true
    podman rm "$NAME" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
mkdir -p "$WORK/ctx/.build/release" "$WORK/data" "$WORK/spool"
cp "$BIN_DIR/wehe-server" "$WORK/ctx/.build/release/wehe-server"
cp deploy/Containerfile "$WORK/ctx/"
podman build --pull=never --isolation=chroot -f "$WORK/ctx/Containerfile" -t localhost/wehe-server:verify "$WORK/ctx"
podman create --name "$NAME" localhost/wehe-server:verify >/dev/null
ROOT=$(podman mount "$NAME")
# A debug binary links the toolchain's runtime: mount the toolchain at the same path inside (its root from `swift`).
TOOLCHAIN=$(dirname "$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")")
mkdir -p "$ROOT$TOOLCHAIN"
REPLAYS=${WEHE_REPLAYS:-../shared/replays}
unshare -m --propagation private sh -c "
    mount --bind '$TOOLCHAIN' '$ROOT$TOOLCHAIN'
    mount --bind '$REPLAYS' '$ROOT/usr/share/wehe/replays'
    mount --bind '$WORK/data' '$ROOT/var/lib/wehe'
    mount --bind '$WORK/spool' '$ROOT/var/spool/wehe'
    mount -t proc proc '$ROOT/proc'
    exec chroot '$ROOT' env WEHE_REPLAYS=/usr/share/wehe/replays WEHE_ARCHIVE=/var/spool/wehe \
        /usr/local/bin/wehe-server serve --data /var/lib/wehe --log-format json --bind 127.0.0.1 \
        --side-channel-port 45556 --side-channel-plain-port 45555 --analyzer-port 46566 --analyzer-plain-port 46565 \
        --ephemeral-replay-ports" > "$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 50); do
    curl -sf http://127.0.0.1:46565/healthz >/dev/null 2>&1 && break
    sleep 0.2
done
curl -sf http://127.0.0.1:46565/healthz
echo
"$BIN_DIR/wehe" run port853s --server 127.0.0.1 --cert "$WORK/data/certs/ca.crt" --side-channel-port 45556 \
    --analyzer-port 46566 --replays "$REPLAYS" --data-dir "$WORK/client" --accept-consent --no-confirmation
find "$WORK/spool" -name 'replayInfo_*' | grep -q . && echo "archive written: $(find "$WORK/spool" -type f | wc -l) files"
