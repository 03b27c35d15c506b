#!/usr/bin/env bash
# isolated.sh COMMAND... - run COMMAND in a private mount and PID namespace, so that whatever it leaves behind
# vanishes with it, even when this wrapper is killed with SIGKILL: the kernel kills every process of the PID
# namespace, and the named network namespaces (bind mounts on a private /run/netns) go with the mount namespace.
# Root only (unshare from util-linux).
set -euo pipefail
exec unshare --mount --pid --fork --kill-child --propagation private -- bash -c '
    mkdir -p /run/netns && mount -t tmpfs -o size=1m tmpfs /run/netns
    mount -t proc proc /proc
    exec "$@"' isolated "$@"
