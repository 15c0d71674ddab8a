#!/usr/bin/env bash
# Builds the self-contained ingestd that packages ship: release mode, the
# Swift standard library and Foundation linked in statically, so the binary
# needs only Debian's own shared libraries (libc, libstdc++, libsqlite3,
# libcurl, libssl, zlib, libsystemd) and no Swift toolchain at run time.
#
#   scripts/build-release.sh [OUT_DIR]      # default: dist/
#
# Writes OUT_DIR/ingestd (stripped) and OUT_DIR/ingestd.debug (its debug
# symbols, for symbolizing a crash: gdb -s ingestd.debug -e ingestd).
# Builds in .build-release/ so it never disturbs the debug build of `swift test`.
# Exit codes: 0 built, 1 the build or a tool failed, 2 bad usage.
set -euo pipefail
case "${1:-}" in
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "build-release.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
esac
self="$(realpath "$0")"  # "$0" is relative to where we were called from
cd "$(dirname "$self")/.."
out="${1:-dist}"
mkdir -p "$out"

quiet=()
[ -t 1 ] || quiet=(--quiet)
swift build "${quiet[@]}" -c release --static-swift-stdlib --product ingestd --scratch-path .build-release

built=".build-release/release/ingestd"
cp "$built" "$out/ingestd.unstripped"
objcopy --only-keep-debug "$out/ingestd.unstripped" "$out/ingestd.debug"
strip --strip-unneeded -o "$out/ingestd" "$out/ingestd.unstripped"
objcopy --add-gnu-debuglink="$out/ingestd.debug" "$out/ingestd"
rm "$out/ingestd.unstripped"
chmod 0755 "$out/ingestd"

echo "built $out/ingestd: $(stat -c %s "$out/ingestd") bytes stripped ($("$out/ingestd" --version))"
