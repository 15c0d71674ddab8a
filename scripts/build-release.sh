#!/usr/bin/env bash
# Builds the self-contained ingestd that packages ship: release mode, the
# Swift standard library and Foundation linked in statically, so the binary
# needs only Debian's own shared libraries (libc, libstdc++, libsqlite3,
# libcurl, libssl, zlib, libsystemd) and no Swift toolchain at run time.
#
#   scripts/build-release.sh [--arch amd64|arm64] [OUT_DIR]
#
#   --arch arm64  cross-compiles for aarch64 (Debian 13 / Raspberry Pi OS):
#                 Debian 13's Swift 6.0.3 in a Debian 13 root made by
#                 scripts/arm64/make-root.sh (needs root, qemu-user-static and
#                 mmdebstrap; the first run makes the root, ≈ 2 minutes, and a
#                 clean build takes ≈ 4 more). Default OUT_DIR: dist/arm64/.
#   --arch amd64  (the default) this machine's Swift; default OUT_DIR: dist/.
#
# Writes OUT_DIR/ingestd (stripped) and OUT_DIR/ingestd.debug (its debug
# symbols, for symbolizing a crash: gdb -s ingestd.debug -e ingestd).
# Builds in .build-release/ (arm64: in the root's /build) so it never
# disturbs the debug build of `swift test`.
# Exit codes: 0 built, 1 the build or a tool failed, 2 bad usage.
set -euo pipefail
arch="$(dpkg --print-architecture)"
out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --arch)
            [ $# -ge 2 ] || { echo "build-release.sh: --arch needs amd64 or arm64" >&2; exit 2; }
            arch="$2"; shift 2 ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        -*) echo "build-release.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
        *) out="$1"; shift ;;
    esac
done
self="$(realpath "$0")"  # "$0" is relative to where we were called from
cd "$(dirname "$self")/.."
quiet=()
[ -t 1 ] || quiet=(--quiet)

case "$arch" in
    "$(dpkg --print-architecture)")
        out="${out:-dist}"
        mkdir -p "$out"
        # Code layout (docs/BENCHMARKS.md, "Idle memory and code layout"): one
        # section per function, laid out by lld in the order the agent runs
        # them (scripts/ingestd.symbol-order, from scripts/make-symbol-order.sh;
        # scripts/ingestd-text.ld puts the compiler's unnamed helpers together),
        # relative relocations packed (DT_RELR, glibc >= 2.36) and no exported
        # symbols: the code a running agent keeps resident fell from 10.4 to
        # 4.5 MB. A stale order only loosens the layout; the link is the same.
        flags=(-Xswiftc -Xfrontend -Xswiftc -function-sections -Xswiftc -use-ld=lld
            -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --no-export-dynamic
            -Xlinker "--symbol-ordering-file=$PWD/scripts/ingestd.symbol-order" -Xlinker --no-warn-symbol-ordering
            -Xlinker -T -Xlinker "$PWD/scripts/ingestd-text.ld")
        # SwiftPM does not rebuild objects when only -Xswiftc flags change: a
        # build folder made with other flags is emptied first (its package
        # checkouts kept). The order file and the script are inputs too.
        stamp="$(printf '%s\n' "${flags[@]}" | cat - scripts/ingestd.symbol-order scripts/ingestd-text.ld | sha256sum | cut -c1-16)"
        if [ "$(cat .build-release/flags.stamp 2>/dev/null)" != "$stamp" ]; then
            rm -rf .build-release/x86_64-unknown-linux-gnu .build-release/release
        fi
        swift build "${quiet[@]}" -c release --static-swift-stdlib --product ingestd --scratch-path .build-release "${flags[@]}"
        echo "$stamp" > .build-release/flags.stamp
        # How much of the order this build could follow: renamed or removed
        # functions drop out of it silently, so say when it is out of date.
        ordered="$(wc -l < scripts/ingestd.symbol-order)"
        found="$(nm --defined-only .build-release/release/ingestd | awk 'NF == 3 { print $3 }' | sort -u |
            comm -12 - <(sort -u scripts/ingestd.symbol-order) | wc -l)"
        echo "code layout: $found of the $ordered functions in scripts/ingestd.symbol-order are in this build"
        if [ $((found * 10)) -lt $((ordered * 9)) ]; then
            echo "build-release.sh: warning: the symbol order is out of date (under 90 % found): the agent keeps more" \
                "code resident than it needs; run scripts/make-symbol-order.sh and commit scripts/ingestd.symbol-order" >&2
        fi
        cp .build-release/release/ingestd "$out/ingestd.unstripped"
        objcopy --only-keep-debug "$out/ingestd.unstripped" "$out/ingestd.debug"
        strip --strip-unneeded -o "$out/ingestd" "$out/ingestd.unstripped"
        objcopy --add-gnu-debuglink="$out/ingestd.debug" "$out/ingestd"
        rm "$out/ingestd.unstripped"
        run=() ;;
    arm64)
        out="${out:-dist/arm64}"
        mkdir -p "$out"
        scripts/arm64/make-root.sh build
        root=.build-arm64/build-root
        # The sources as they are (tracked and new files, not ignored ones:
        # no Package.resolved, no build folders), into the root's /src.
        rm -rf "$root/src"
        mkdir -p "$root/src"
        git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$root/src"
        scripts/arm64/in-root.sh "$root" "cd /src && swift build ${quiet[*]} -c release --static-swift-stdlib --product ingestd \
            --scratch-path /build/swiftpm --destination /opt/arm64-sdk/swift-sdk.json"
        # Split and strip with the root's binutils for aarch64.
        scripts/arm64/in-root.sh "$root" "cd /build && rm -rf out && mkdir out &&
            cp swiftpm/aarch64-unknown-linux-gnu/release/ingestd out/ingestd.unstripped &&
            aarch64-linux-gnu-objcopy --only-keep-debug out/ingestd.unstripped out/ingestd.debug &&
            aarch64-linux-gnu-strip --strip-unneeded -o out/ingestd out/ingestd.unstripped &&
            cd out && aarch64-linux-gnu-objcopy --add-gnu-debuglink=ingestd.debug ingestd"
        cp "$root/build/out/ingestd" "$root/build/out/ingestd.debug" "$out/"
        run=(qemu-aarch64-static -L "$root") ;;
    *) echo "build-release.sh: cannot build for '$arch' (amd64 on amd64, or arm64)" >&2; exit 2 ;;
esac
chmod 0755 "$out/ingestd"

echo "built $out/ingestd ($arch): $(stat -c %s "$out/ingestd") bytes stripped ($("${run[@]}" "$out/ingestd" --version))"
