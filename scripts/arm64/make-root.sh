#!/usr/bin/env bash
# Makes one of the two Debian 13 (trixie) roots of the arm64 build in
# .build-arm64/ (git ignores it), with mmdebstrap and Debian's packages only:
#
#   scripts/arm64/make-root.sh build   # .build-arm64/build-root: the cross compiler
#   scripts/arm64/make-root.sh run     # .build-arm64/run-root: an arm64 system
#
# build: amd64 with arm64 as a foreign architecture. Debian's swiftlang 6.0.3
#   (amd64) is the compiler; the arm64 C libraries the package links
#   (libc6-dev, libsqlite3-dev, libcurl4-openssl-dev, libsystemd-dev,
#   zlib1g-dev, libssl-dev, libzstd-dev, libstdc++ and libgcc) are installed
#   multiarch, so / is the target's sysroot; the arm64 swiftlang and
#   libswiftlang (the standard library for aarch64, static and shared) are
#   unpacked with dpkg-deb -x into /opt/swift-arm64; /opt/arm64-sdk holds the
#   Swift SDK description (scripts/arm64/swift-sdk.json). Swift packages come
#   from the machine's mirror (/opt/swift-packages, mounted read-only by
#   scripts/arm64/in-root.sh), except two whose only mirrored versions need
#   Swift 6.2 (swift-log 1.16.2, swift-service-lifecycle 2.13.0): /mirror
#   holds them at the same tags with one commit on top, a manifest for Swift
#   6.0 (scripts/arm64/manifests/) and scripts/arm64/swift-6.0-syntax.pl
#   applied to their sources.
# run: arm64 only (maintainer scripts run through qemu-user, see
#   scripts/arm64/binfmt.sh), with the libraries the package depends on,
#   systemd (systemd-analyze) and procps: the lower layer of the package test
#   (scripts/test-package.sh --root) and the library root of qemu-aarch64 -L.
#
# A root is made again only when this script or the files it uses change
# (a stamp in the root says which). Downloads only Debian packages, through
# apt (from deb.debian.org, or $ARM64_DEBIAN_MIRROR). Needs root. About 1 to 2
# minutes for build (≈ 5 GB), 2 to 4 for run (≈ 400 MB) on 2 cores.
# Exit codes: 0 made or up to date, 1 failed, 2 bad usage.
set -euo pipefail
self="$(realpath "$0")"
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$self"; }
case "${1:-}" in
    build|run) kind="$1" ;;
    -h|--help) usage; exit 0 ;;
    *) echo "make-root.sh: wants 'build' or 'run' (see --help)" >&2; exit 2 ;;
esac
cd "$(dirname "$self")/../.."
here="scripts/arm64"
root=".build-arm64/$kind-root"
mirror="${ARM64_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
[ "$(id -u)" = 0 ] || { echo "make-root.sh: needs root (mmdebstrap, chroot)" >&2; exit 1; }
command -v mmdebstrap >/dev/null || { echo "make-root.sh: mmdebstrap is missing: apt-get install mmdebstrap" >&2; exit 1; }

# The arm64 libraries the cross build links, as in scripts/debian-packages.txt.
target_dev="libc6-dev:arm64 libsqlite3-dev:arm64 libcurl4-openssl-dev:arm64 libsystemd-dev:arm64
    zlib1g-dev:arm64 libssl-dev:arm64 libzstd-dev:arm64 libstdc++-14-dev:arm64 libgcc-14-dev:arm64"
case "$kind" in
    build)
        architectures=amd64,arm64 variant=apt
        include="swiftlang git ca-certificates libc6-dev dpkg-dev binutils-aarch64-linux-gnu $target_dev"
        inputs=("$self" "$here"/manifests/*.swift "$here/swift-6.0-syntax.pl" "$here/swift-sdk.json" "$here/toolset.json") ;;
    run)
        architectures=arm64 variant=minbase
        include="systemd procps libcurl4t64 libsqlite3-0 libssl3t64 zlib1g libzstd1 libsystemd0"
        inputs=("$self") ;;
esac
stamp="$(cat "${inputs[@]}" | sha256sum | cut -c1-16)"
if [ -f "$root/.edgeingest-root" ] && [ "$(cat "$root/.edgeingest-root")" = "$stamp" ]; then
    exit 0
fi

[ "$kind" = build ] || "$here/binfmt.sh"
echo "make-root.sh: making $root (Debian 13, $architectures) …" >&2
rm -rf "$root"
mkdir -p .build-arm64
quiet=(--quiet)
[ -t 2 ] && quiet=()
mmdebstrap "${quiet[@]}" --variant="$variant" --architectures="$architectures" \
    --include="$(printf '%s' "$include" | tr -s ' \n' ',,')" \
    trixie "$root" "deb $mirror trixie main"

if [ "$kind" = build ]; then
    # The standard library for aarch64, the same version as the compiler.
    mkdir -p "$root/opt/swift-packages" "$root/opt/arm64-sdk"
    "$here/in-root.sh" "$root" '
        apt-get update -qq
        version="$(dpkg-query -W -f "\${Version}" swiftlang)"
        cd /tmp && apt-get download -qq "swiftlang:arm64=$version" "libswiftlang:arm64=$version"
        mkdir -p /opt/swift-arm64
        for deb in /tmp/*.deb; do dpkg-deb -x "$deb" /opt/swift-arm64; done
        rm -rf /var/lib/apt/lists/*'
    cp "$here/swift-sdk.json" "$here/toolset.json" "$root/opt/arm64-sdk/"

    # The two packages that need a Swift newer than 6.0, made to build with it.
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    gitconfig=""
    for spec in apple/swift-log@1.16.2 swift-server/swift-service-lifecycle@2.13.0; do
        repo="${spec%@*}" tag="${spec#*@}" name="${repo#*/}"
        git clone -q --no-checkout "/opt/swift-packages/$repo.git" "$work/$name"
        git -C "$work/$name" checkout -q "$tag" ||
            { echo "make-root.sh: the mirror has no $repo $tag; update scripts/arm64/ for the version Package.swift resolves" >&2; exit 1; }
        cp "$here/manifests/$name.swift" "$work/$name/Package@swift-6.0.swift"
        find "$work/$name/Sources" -name '*.swift' -exec perl -0pi "$here/swift-6.0-syntax.pl" {} +
        git -C "$work/$name" add -A
        git -C "$work/$name" -c user.name="EdgeIngest arm64 build" -c user.email=arm64@edgeingest.invalid \
            commit -q -m "Build with Swift 6.0 (scripts/arm64/make-root.sh)"
        git -C "$work/$name" tag -f "$tag" >/dev/null
        mkdir -p "$root/mirror/${repo%/*}"
        git clone -q --bare "$work/$name" "$root/mirror/$repo.git"
        gitconfig+="[url \"/mirror/$repo\"]"$'\n'"	insteadOf = https://github.com/$repo"$'\n'
    done
    gitconfig+='[url "/opt/swift-packages/"]'$'\n''	insteadOf = https://github.com/'$'\n'
    printf '%s' "$gitconfig" > "$root/root/.gitconfig"
fi
echo "$stamp" > "$root/.edgeingest-root"
echo "make-root.sh: $root ready ($(du -sh "$root" | cut -f1))" >&2
