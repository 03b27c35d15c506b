#!/usr/bin/env bash
# install-check.sh - proves the packages work where no Swift toolchain is: makes a fresh Debian 12 root file system
# with Debian's own mmdebstrap (minbase: no Swift, no compiler), installs the .deb files of .build/packages there
# with dpkg, and runs inside it (chroot, in a private mount namespace): `wehe --version`, `wehe demo`,
# `wehe dashboard` answering a page, `wehe-server serve` with a `wehe run deezer` against it over TLS, and the
# server's operator page. Then the same with the tarball's binaries unpacked into a second fresh root, without dpkg.
# The root file system (about 100 MB) is cached in .build/debian12-rootfs.tar between runs. Needs root, mmdebstrap
# and curl; network only to Debian's mirror (for the root file system) and loopback (the checks).
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGES=${PACKAGES:-.build/packages}
ROOTFS_TAR=${ROOTFS_TAR:-.build/debian12-rootfs.tar}
MIRROR=${MIRROR:-$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
ls "$PACKAGES"/wehe_*.deb "$PACKAGES"/wehe-server_*.deb "$PACKAGES"/wehe-data_*.deb "$PACKAGES"/wehe-*.tar.gz >/dev/null
command -v mmdebstrap >/dev/null || {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mmdebstrap >/dev/null
}
if [ ! -s "$ROOTFS_TAR" ]; then
    echo "install-check: making a Debian 12 (bookworm) root file system with mmdebstrap"
    mmdebstrap --quiet --format=tar --variant=minbase --include=adduser bookworm "$ROOTFS_TAR.part" "$MIRROR"
    mv "$ROOTFS_TAR.part" "$ROOTFS_TAR"
fi
WORK=$(mktemp -d /tmp/wehe-install.XXXXXX)
cleanup() {
    # The checks run in their own mount namespace: its mounts vanish with it; only the files remain.
    pkill -f "$WORK/" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# check ROOT LABEL PREFIX: the checks inside one root; PREFIX is where bin/ is ("/usr" for the packages).
check() {
    local root=$1 label=$2 prefix=$3
    cat >"$root/checks.sh" <<SH
#!/bin/sh
# Inside the chroot: no Swift toolchain here (checked), only what the packages or the tarball brought.
set -eu
export HOME=/root LANG=C.UTF-8 PATH=$prefix/bin:/usr/bin:/bin:/usr/sbin:/sbin
if command -v swift >/dev/null 2>&1 || [ -e /usr/lib/swift ] || ls /usr/lib/*/libswiftCore.so >/dev/null 2>&1; then
    echo "a Swift runtime is present in the root file system"; exit 1
fi
echo "-- wehe --version: \$(wehe --version)"
echo "-- wehe-server --version: \$(wehe-server --version)"
start=\$(date +%s)
wehe demo >/tmp/demo.out 2>&1 || { cat /tmp/demo.out; exit 1; }
echo "-- wehe demo: \$(( \$(date +%s) - start )) s"; sed 's/^/   /' /tmp/demo.out | tail -12
wehe dashboard --port 0 >/tmp/dashboard.out 2>&1 &
echo \$! >/tmp/dashboard.pid
wehe-server certs --out /tmp/certs --host 127.0.0.1 >/dev/null
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >/tmp/operator.token
wehe-server serve --config /etc/wehe/server.json --replays $( [ "$prefix" = /usr ] && echo /usr/share/wehe/replays || echo "$prefix/share/wehe/replays") \
    --data /tmp/server --bind 127.0.0.1 --ephemeral-replay-ports --side-channel-port 0 --side-channel-plain-port 0 \
    --analyzer-port 0 --analyzer-plain-port 0 --tls-cert /tmp/certs/server.crt --tls-key /tmp/certs/server.key \
    --dashboard-port 0 --dashboard-token-file /tmp/operator.token >/tmp/server.out 2>/tmp/server.log &
echo \$! >/tmp/server.pid
for _ in \$(seq 600); do
    grep -q "operator dashboard" /tmp/server.out 2>/dev/null && grep -q "wehe-server: listening" /tmp/server.out \
        && grep -q "wehe dashboard:" /tmp/dashboard.out && break
    sleep 0.1
done
grep -q "operator dashboard" /tmp/server.out || { cat /tmp/server.log; exit 1; }
line=\$(grep "wehe-server: listening" /tmp/server.out)
side=\$(echo "\$line" | sed -n 's/.* side-channel-tls=\([0-9]*\).*/\1/p')
analyzer=\$(echo "\$line" | sed -n 's/.* analyzer-tls=\([0-9]*\).*/\1/p')
start=\$(date +%s)
wehe run deezer --server 127.0.0.1 --side-channel-port "\$side" --analyzer-port "\$analyzer" --cert /tmp/certs/ca.crt \
    --accept-consent --no-confirmation --json >/tmp/run.json 2>/tmp/run.err || { cat /tmp/run.err; exit 1; }
echo "-- wehe run deezer against wehe-server: \$(( \$(date +%s) - start )) s"
sed -n 's#.*wehe dashboard: \(http://[^ ]*\).*#\1#p' /tmp/dashboard.out >/tmp/dashboard.url
sed -n 's#.*operator dashboard \(http://[^ ]*\).*#\1#p' /tmp/server.out >/tmp/operator.url
SH
    chmod +x "$root/checks.sh"
    unshare --mount --propagation private bash -c "
        set -e
        mount -t proc proc '$root/proc'
        mount --rbind /dev '$root/dev'
        mount -t tmpfs tmpfs '$root/tmp'
        chroot '$root' /checks.sh || { tail -n 20 '$root'/tmp/*.out '$root'/tmp/*.log '$root'/tmp/*.err 2>/dev/null; exit 1; }
        dashboard=\$(cat '$root/tmp/dashboard.url')
        operator=\$(cat '$root/tmp/operator.url')
        token=\$(cat '$root/tmp/operator.token')
        grep -q '\"verdict\"' '$root/tmp/run.json'
        echo \"-- run --json: \$(grep -o '\"verdict\" *: *\"[^\"]*\"' '$root/tmp/run.json' | head -1)\"
        page=\$(curl -fsS \"\$dashboard\")
        echo \"\$page\" | grep -q '<html' && echo \"-- wehe dashboard \$dashboard: a page (\${#page} bytes)\"
        page=\$(curl -fsS -H \"Authorization: Bearer \$token\" \"\$operator\")
        echo \"\$page\" | grep -q '<html' && echo \"-- operator page: a page (\${#page} bytes)\"
        kill \$(cat '$root/tmp/dashboard.pid' '$root/tmp/server.pid') 2>/dev/null || true
    " || { echo "install-check: $label FAILED"; tail -20 "$root/tmp/server.log" 2>/dev/null; exit 1; }
    echo "install-check: $label passed"
}

echo "== Debian packages in a fresh Debian 12 root"
root=$WORK/deb-root
mkdir -p "$root" && tar -C "$root" -xf "$ROOTFS_TAR"
cp "$PACKAGES"/wehe-data_*.deb "$PACKAGES"/wehe_*.deb "$PACKAGES"/wehe-server_*.deb "$root/tmp/"
chroot "$root" sh -c 'dpkg -i /tmp/wehe-data_*.deb /tmp/wehe_*.deb /tmp/wehe-server_*.deb' | tail -3
chroot "$root" sh -c 'test -x /usr/bin/wehe && test -r /usr/share/wehe/wehe-ca.pem && test -r /usr/share/man/man1/wehe.1.gz && test -r /usr/share/bash-completion/completions/wehe && getent passwd wehe >/dev/null && test -r /lib/systemd/system/wehe-server.service'
echo "-- installed: binaries, traces, CA, man pages, completions, service user, systemd unit"
check "$root" "packages" /usr

echo "== the tarball in a second fresh root (no dpkg)"
root=$WORK/tar-root
mkdir -p "$root" && tar -C "$root" -xf "$ROOTFS_TAR"
mkdir -p "$root/opt" && tar -C "$root/opt" -xzf "$PACKAGES"/wehe-*.tar.gz
prefix=/opt/$(basename "$PACKAGES"/wehe-*.tar.gz .tar.gz)
mkdir -p "$root/etc/wehe" && echo '{}' >"$root/etc/wehe/server.json"
check "$root" "tarball" "$prefix"
echo "install-check: packages and tarball work on Debian 12 without Swift"
