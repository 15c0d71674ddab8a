#!/usr/bin/env bash
# Lets the kernel run arm64 programs through qemu-user (Debian's
# qemu-user-static): registers qemu-aarch64 with binfmt_misc, with the F flag
# (the interpreter is opened now, so it also works inside chroots), unless
# it is registered already. Prints nothing when there is nothing to do.
#
#   scripts/arm64/binfmt.sh
#
# Needs root the first time (mounting binfmt_misc, registering). Exit codes:
# 0 registered, 1 it cannot be (the reason is printed).
set -euo pipefail
case "${1:-}" in
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
esac
qemu=/usr/bin/qemu-aarch64-static
[ -x "$qemu" ] || { echo "binfmt.sh: $qemu is missing: apt-get install qemu-user-static" >&2; exit 1; }
dir=/proc/sys/fs/binfmt_misc
if [ ! -e "$dir/register" ]; then
    mount -t binfmt_misc binfmt_misc "$dir" || { echo "binfmt.sh: cannot mount binfmt_misc on $dir (needs root)" >&2; exit 1; }
fi
if [ -e "$dir/qemu-aarch64" ]; then
    grep -q "^interpreter $qemu$" "$dir/qemu-aarch64" && grep -q '^flags: .*F' "$dir/qemu-aarch64" && exit 0
    echo -1 > "$dir/qemu-aarch64"  # registered otherwise (without F, or another qemu): replace it
fi
# The ELF header of an aarch64 executable (e_machine 0xb7), as qemu's own
# scripts/qemu-binfmt-conf.sh registers it.
magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
echo ":qemu-aarch64:M::$magic:$mask:$qemu:F" > "$dir/register" ||
    { echo "binfmt.sh: the kernel refused to register qemu-aarch64 (needs root)" >&2; exit 1; }
