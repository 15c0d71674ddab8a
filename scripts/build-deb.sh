#!/usr/bin/env bash
# Builds the Debian package ingestd_<version>_<arch>.deb with dpkg-deb.
#
#   scripts/build-deb.sh [--arch amd64|arm64] [--binary FILE] [--out DIR]
#
#   --arch ARCH     amd64 (this machine's, the default) or arm64: the package
#                   for Debian 13 / Raspberry Pi OS on 64-bit ARM, its binary
#                   cross-compiled by scripts/build-release.sh --arch arm64
#                   (needs root; docs/ARM64.md)
#   --binary FILE   a stripped ingestd for ARCH from scripts/build-release.sh
#                   (default: runs it into dist/, for arm64 dist/arm64/)
#   --out DIR       where the .deb goes (default: dist/)
#
# The package holds the binary (/usr/bin/ingestd), the unit and the serial
# drop-in example (/lib/systemd/system, for arm64 /usr/lib/systemd/system;
# /usr/share/doc/ingestd), the example
# configuration as a conffile (/etc/ingestd/ingestd.toml), a man page made
# from the --help texts (man 8 ingestd), and maintainer scripts that do the
# minimum: no start on install, stop on removal, state removed on purge only.
# Depends: is computed by dpkg-shlibdeps from the binary's own NEEDED list,
# so it names exactly the shared libraries the binary links (for arm64, run
# in the Debian 13 build root, whose arm64 libraries the binary was linked
# against; the binary runs under qemu-user for --version and the man page).
# Prints the path of the .deb on its last line. Exit codes: 0 built, 1 failed,
# 2 bad usage.
set -euo pipefail
self="$(realpath "$0")"  # "$0" is relative to where we were called from
cd "$(dirname "$self")/.."
root_dir="$PWD"

binary=""
out="dist"
arch="$(dpkg --print-architecture)"
while [ $# -gt 0 ]; do
    case "$1" in
        --binary|--out|--arch)
            [ $# -ge 2 ] || { echo "build-deb.sh: $1 needs a value" >&2; exit 2; }
            case "$1" in --binary) binary="$2" ;; --out) out="$2" ;; --arch) arch="$2" ;; esac
            shift 2 ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$self"; exit 0 ;;
        *) echo "build-deb.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case "$arch" in
    "$(dpkg --print-architecture)") dist=dist ;;
    arm64) dist=dist/arm64 ;;
    *) echo "build-deb.sh: cannot package for '$arch' (amd64 on amd64, or arm64)" >&2; exit 2 ;;
esac
if [ -z "$binary" ]; then
    scripts/build-release.sh --arch "$arch" "$dist" >&2
    binary="$dist/ingestd"
fi
[ -x "$binary" ] || { echo "build-deb.sh: '$binary' is not an executable; build it with scripts/build-release.sh" >&2; exit 1; }
for tool in dpkg-deb dpkg-shlibdeps gzip; do
    command -v "$tool" >/dev/null || { echo "build-deb.sh: $tool is missing: apt-get install dpkg-dev" >&2; exit 1; }
done

mkdir -p "$out"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
pkg="$work/ingestd"
run="$binary"
if [ "$arch" = arm64 ]; then
    # The arm64 binary runs under qemu-user, with the build root's libraries.
    build_root="$root_dir/.build-arm64/build-root"
    [ -d "$build_root/usr/lib/aarch64-linux-gnu" ] ||
        { echo "build-deb.sh: no arm64 build root; run scripts/build-release.sh --arch arm64 first" >&2; exit 1; }
    run="$work/ingestd-qemu"
    printf '#!/bin/sh\nexec qemu-aarch64-static -L "%s" "%s" "$@"\n' "$build_root" "$(realpath "$binary")" > "$run"
    chmod 0755 "$run"
fi
version="$("$run" --version)"

install -D -m 0755 "$binary" "$pkg/usr/bin/ingestd"
# Debian 13 (the arm64 package's) ships units in /usr/lib: /lib is only a
# link to it there, and dpkg must not see one file under two names (DEP 17).
unit_dir=lib/systemd/system
[ "$arch" = arm64 ] && unit_dir=usr/lib/systemd/system
install -D -m 0644 systemd/ingestd.service "$pkg/$unit_dir/ingestd.service"
install -D -m 0644 systemd/ingestd.socket "$pkg/$unit_dir/ingestd.socket"
install -D -m 0644 etc/ingestd.toml "$pkg/etc/ingestd/ingestd.toml"
install -D -m 0644 systemd/ingestd-serial.conf "$pkg/usr/share/doc/ingestd/examples/ingestd-serial.conf"
install -D -m 0644 README.md "$pkg/usr/share/doc/ingestd/README.md"
for doc in docs/*.md; do install -m 0644 "$doc" "$pkg/usr/share/doc/ingestd/"; done
cat > "$pkg/usr/share/doc/ingestd/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: EdgeIngest
Source: https://github.com/edgeingest/edgeingest

Files: *
Copyright: the EdgeIngest authors
License: see the project's repository
COPYRIGHT
printf 'ingestd (%s) stable; urgency=medium\n\n  * Release %s.\n\n -- EdgeIngest <packages@edgeingest.invalid>  %s\n' \
    "$version" "$version" "$(date -R)" | gzip -9n > "$pkg/usr/share/doc/ingestd/changelog.Debian.gz"

# The man page: every subcommand's --help, verbatim, under one NAME/SYNOPSIS.
scripts/help-to-man.sh "$run" | gzip -9n > "$work/ingestd.8.gz"
install -D -m 0644 "$work/ingestd.8.gz" "$pkg/usr/share/man/man8/ingestd.8.gz"

# Depends: from the binary's NEEDED entries (dpkg-shlibdeps wants a
# debian/control beside it).
mkdir -p "$work/shlibs/debian"
printf 'Source: ingestd\n\nPackage: ingestd\nArchitecture: any\n' > "$work/shlibs/debian/control"
cp "$binary" "$work/shlibs/ingestd"
if [ "$arch" = arm64 ]; then
    rm -rf "$build_root/build/shlibs" && mkdir -p "$build_root/build" && cp -r "$work/shlibs" "$build_root/build/shlibs"
    depends="$(scripts/arm64/in-root.sh "$build_root" 'cd /build/shlibs && dpkg-architecture -a arm64 -c dpkg-shlibdeps -O ingestd 2>/dev/null' |
        sed -n 's/^shlibs:Depends=//p')"
else
    depends="$(cd "$work/shlibs" && dpkg-shlibdeps -O ingestd 2>/dev/null | sed -n 's/^shlibs:Depends=//p')"
fi
[ -n "$depends" ] || { echo "build-deb.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
# Packed relative relocations (DT_RELR, scripts/build-release.sh) need
# glibc 2.36, which dpkg-shlibdeps does not know: it derives libc6's version
# from the symbols used and wrote ">= 2.35", which would install on a libc
# that cannot load the binary ("version GLIBC_ABI_DT_RELR not found").
if readelf -V "$binary" | grep -q GLIBC_ABI_DT_RELR; then
    libc="$(sed -n 's/.*libc6 (>= \([^)]*\)).*/\1/p' <<<"$depends")"
    if [ -z "$libc" ] || dpkg --compare-versions "$libc" lt 2.36; then
        depends="$(sed -E 's/libc6( \(>= [^)]*\))?/libc6 (>= 2.36)/' <<<"$depends")"
    fi
fi

mkdir -p "$pkg/DEBIAN"
installed_kb="$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)"
# Suggests: libpq5, libmosquitto1 — the postgresql and mqtt sinks load them
# with dlopen when used; the binary links neither (docs/SINKS.md).
# Depends: passwd — the postinst makes the group "ingestd" with groupadd.
cat > "$pkg/DEBIAN/control" <<CONTROL
Package: ingestd
Version: $version
Architecture: $arch
Maintainer: EdgeIngest <packages@edgeingest.invalid>
Installed-Size: $installed_kb
Depends: $depends, passwd
Suggests: libpq5, libmosquitto1
Section: net
Priority: optional
Homepage: https://github.com/edgeingest/edgeingest
Description: edge telemetry ingest agent (sensor readings, exactly once)
 ingestd reads sensor readings from stdin, followed files and serial ports,
 validates them against declared record types, keeps them in a durable
 SQLite queue through crashes, power cuts and offline weeks, and streams them
 to the backend over HTTP, deleting each only after the backend confirmed it.
 .
 Runs as a hardened systemd notify service with a watchdog. The service is
 not started on install: edit /etc/ingestd/ingestd.toml, then
 systemctl enable --now ingestd.
CONTROL
echo /etc/ingestd/ingestd.toml > "$pkg/DEBIAN/conffiles"
for script in postinst prerm postrm; do
    install -m 0755 "packaging/debian/$script" "$pkg/DEBIAN/$script"
done

deb="$out/ingestd_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >/dev/null
echo "$deb"
