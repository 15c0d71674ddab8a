#!/usr/bin/env bash
# Runs a shell command inside one of the arm64 build's Debian 13 roots
# (scripts/arm64/build-root.sh), in a private mount namespace: /proc, /dev,
# a fresh /tmp, the machine's resolv.conf, and, read-only, the Swift package
# mirror /opt/swift-packages (for the build root's SwiftPM). Nothing stays
# mounted afterwards.
#
#   scripts/arm64/in-root.sh ROOT 'COMMAND'
#
# Needs root (mount, chroot). The command runs with a clean environment
# (PATH, HOME=/root, LANG=C.UTF-8) under bash -euo pipefail; its exit status
# is this script's.
set -euo pipefail
case "${1:-}" in
    -h|--help|"") awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; [ -n "${1:-}" ]; exit $? ;;
esac
[ $# -eq 2 ] || { echo "in-root.sh: wants ROOT and one COMMAND (see --help)" >&2; exit 2; }
root="$(realpath "$1")"
[ -x "$root/bin/sh" ] || { echo "in-root.sh: '$1' is not a root made by scripts/arm64/build-root.sh" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "in-root.sh: needs root (mount and chroot)" >&2; exit 1; }
export root command="$2"
exec unshare --mount --propagation private bash -euo pipefail -c '
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount -t tmpfs tmpfs "$root/tmp"
if [ -d /opt/swift-packages ] && [ -d "$root/opt/swift-packages" ]; then
    mount --bind -o ro /opt/swift-packages "$root/opt/swift-packages"
fi
[ -f /etc/resolv.conf ] && cp -L /etc/resolv.conf "$root/etc/resolv.conf"
exec chroot "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/usr/sbin:/bin:/sbin HOME=/root LANG=C.UTF-8 \
    bash -euo pipefail -c "$command"'
