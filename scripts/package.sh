#!/usr/bin/env bash
# package.sh - what a person installs: release binaries of `wehe` and `wehe-server` with the Swift runtime linked
# statically and every resource embedded, Debian packages, and a tarball of the same. Writes into .build/packages/:
#
#   wehe_<version>_<arch>.deb         /usr/bin/wehe, man pages, bash/zsh/fish completions
#   wehe-server_<version>_<arch>.deb  /usr/bin/wehe-server, man pages, completions, systemd unit, service user
#   wehe-data_<version>_all.deb       /usr/share/wehe/replays (the published traces) and /usr/share/wehe/wehe-ca.pem
#                                     (the Wehe fleet CA); both packages above depend on it, because dpkg lets only
#                                     one package own a file and both programs read the same traces
#   wehe-<version>-linux-<arch>.tar.gz  bin/wehe, bin/wehe-server, share/wehe/..., share/man, completions
#
# The traces and the CA are taken from ../shared (SHARED=<dir> to change) at packaging time; the repository holds
# neither. Needs dpkg-deb and gzip (Debian's dpkg and gzip).
#
# The release build has a build folder of its own, .build/static (SCRATCH=<dir> to change): SwiftPM lets one build at
# a time use a build folder, and this one may run while other work uses the debug build in .build.
# `scripts/package.sh --build-only` makes the release binaries and stops: CI starts it early, at idle CPU priority,
# beside steps that mostly wait on the network, and packages later with RELEASE_BUILT=1, which skips the release
# build. Building the products again is not free even then: SwiftPM recompiles five modules the two products share
# (the Hummingbird modules, WeheWeb and wehe) whenever the product asked for changes, about 150 s here.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared}
OUT=${OUT:-.build/packages}
SCRATCH=${SCRATCH:-.build/static}

release_build() {
    for product in wehe wehe-server; do
        swift build -c release --static-swift-stdlib --scratch-path "$SCRATCH" --product "$product"
    done
}
if [ "${1:-}" = --build-only ]; then
    release_build
    exit 0
fi
[ -d "$SHARED/replays" ] || { echo "package.sh: no replay traces in $SHARED/replays" >&2; exit 3; }
[ -r "$SHARED/wehe-fleet/wehe-ca.pem" ] || { echo "package.sh: no $SHARED/wehe-fleet/wehe-ca.pem" >&2; exit 3; }
command -v dpkg-deb >/dev/null || { echo "package.sh: dpkg-deb is missing (apt-get install dpkg)" >&2; exit 3; }

if [ "${SKIP_BUILD:-0}" != 1 ]; then
    # Man pages: swift-argument-parser's manual generator builds every product and reads each command's help. The
    # help text does not depend on the build configuration, so it uses the debug build (which CI has already made)
    # rather than a second release build with other flags than the static one below.
    swift package plugin generate-manual --configuration debug --multi-page --authors "Wehe for Swift" \
        >"${TMPDIR:-/tmp}/wehe-manual.log" 2>&1 || { tail -20 "${TMPDIR:-/tmp}/wehe-manual.log" >&2; exit 1; }
    [ "${RELEASE_BUILT:-0}" = 1 ] || release_build
fi
BIN=$(swift build -c release --scratch-path "$SCRATCH" --show-bin-path)
MAN=.build/plugins/GenerateManual/outputs
version=$("$BIN/wehe" --version | awk '{print $NF}')
arch=$(dpkg --print-architecture)
# The oldest glibc the binaries accept: the highest GLIBC_x.y symbol version they reference.
glibc=$(objdump -T "$BIN/wehe" "$BIN/wehe-server" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)

rm -rf "$OUT" && mkdir -p "$OUT"
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/wehe-package.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT

# install_program ROOT NAME: the stripped binary, its man pages and its shell completions under ROOT/usr.
install_program() {
    local root=$1 name=$2
    install -D -m 0755 "$BIN/$name" "$root/usr/bin/$name"
    strip --strip-unneeded "$root/usr/bin/$name"
    mkdir -p "$root/usr/share/man/man1"
    for page in "$MAN/$name"/*.1; do
        [ -e "$page" ] && gzip -9n <"$page" >"$root/usr/share/man/man1/$(basename "$page").gz"
    done
    install -d "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
        "$root/usr/share/fish/vendor_completions.d"
    "$BIN/$name" --generate-completion-script bash >"$root/usr/share/bash-completion/completions/$name"
    "$BIN/$name" --generate-completion-script zsh >"$root/usr/share/zsh/vendor-completions/_$name"
    "$BIN/$name" --generate-completion-script fish >"$root/usr/share/fish/vendor_completions.d/$name.fish"
}

# install_data ROOT: the published traces and the fleet CA under ROOT/share/wehe.
install_data() {
    local root=$1
    install -d "$root/share/wehe/replays"
    cp "$SHARED"/replays/* "$root/share/wehe/replays/"
    install -m 0644 "$SHARED/wehe-fleet/wehe-ca.pem" "$root/share/wehe/wehe-ca.pem"
    chmod 0644 "$root/share/wehe/replays"/*
}

# control ROOT PACKAGE ARCH DEPENDS DESCRIPTION...: DEBIAN/control with the installed size.
control() {
    local root=$1 package=$2 architecture=$3 depends=$4 summary=$5 description=$6
    mkdir -p "$root/DEBIAN"
    {
        echo "Package: $package"
        echo "Version: $version"
        echo "Architecture: $architecture"
        echo "Maintainer: Wehe for Swift <wehe-swift@localhost>"
        echo "Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)"
        [ -n "$depends" ] && echo "Depends: $depends"
        echo "Section: net"
        echo "Priority: optional"
        echo "Homepage: https://wehe.meddle.mobi"
        echo "Description: $summary"
        echo "$description" | fold -s -w 78 | sed 's/^/ /'
    } >"$root/DEBIAN/control"
}

libc="libc6 (>= $glibc)"

# wehe-data
data=$STAGE/wehe-data
install_data "$data/usr"
control "$data" wehe-data all "" "Wehe replay traces and fleet CA" \
    "The published Wehe replay traces (recorded app sessions and their bit-inverted controls) and the certificate authority the Wehe fleet's servers are signed by, read by wehe and wehe-server from /usr/share/wehe."
dpkg-deb --root-owner-group -Zxz --build "$data" "$OUT/wehe-data_${version}_all.deb" >/dev/null

# wehe
client=$STAGE/wehe
install_program "$client" wehe
control "$client" wehe "$arch" "$libc, wehe-data (= $version)" "does your internet provider throttle some apps?" \
    "wehe replays recorded app sessions (Netflix, YouTube, Zoom, ...) and their bit-inverted controls against a Wehe server and tells whether your provider treats the app differently; WeHeY locates where on the path. It works with the public Wehe fleet (M-Lab) and with your own wehe-server."
# wehe record loads libpcap at run time (dlopen); every other command runs without it.
sed -i '/^Depends:/a Recommends: libpcap0.8' "$client/DEBIAN/control"
dpkg-deb --root-owner-group -Zxz --build "$client" "$OUT/wehe_${version}_${arch}.deb" >/dev/null

# wehe-server
server=$STAGE/wehe-server
install_program "$server" wehe-server
install -D -m 0644 deploy/wehe-server.service "$server/lib/systemd/system/wehe-server.service"
sed -i 's#/usr/local/bin/wehe-server#/usr/bin/wehe-server#; s#file:///usr/share/doc/wehe/server.md#man:wehe-server(1)#' \
    "$server/lib/systemd/system/wehe-server.service"
install -D -m 0644 deploy/debian/server.json "$server/etc/wehe/server.json"
echo "/etc/wehe/server.json" >"$STAGE/conffiles"
control "$server" wehe-server "$arch" "$libc, wehe-data (= $version), adduser" "Wehe replay and analysis server" \
    "wehe-server serves Wehe tests: the side channel, TCP and UDP replays of the published traces, the analyzer that computes verdicts, an operator dashboard and metrics. Interoperates with the published Wehe clients."
install -m 0644 "$STAGE/conffiles" "$server/DEBIAN/conffiles"
install -m 0755 deploy/debian/wehe-server.postinst "$server/DEBIAN/postinst"
install -m 0755 deploy/debian/wehe-server.prerm "$server/DEBIAN/prerm"
install -m 0755 deploy/debian/wehe-server.postrm "$server/DEBIAN/postrm"
dpkg-deb --root-owner-group -Zxz --build "$server" "$OUT/wehe-server_${version}_${arch}.deb" >/dev/null

# Tarball: bin/, share/wehe, share/man, share/<shell completions>; bin/wehe finds ../share/wehe by itself.
tarname="wehe-$version-linux-$arch"
tar_root=$STAGE/$tarname
install_program "$STAGE/tar-client" wehe
install_program "$STAGE/tar-server" wehe-server
mkdir -p "$tar_root"
cp -a "$STAGE/tar-client/usr/." "$STAGE/tar-server/usr/." "$tar_root/"
install_data "$tar_root"
install -m 0644 deploy/wehe-server.service "$tar_root/share/wehe/wehe-server.service"
tar -C "$STAGE" --owner=0 --group=0 -czf "$OUT/$tarname.tar.gz" "$tarname"

echo "package.sh: version $version, $arch, glibc >= $glibc"
for file in "$OUT"/*; do
    printf '  %-44s %8s KiB\n' "$(basename "$file")" "$(du -k "$file" | cut -f1)"
done
