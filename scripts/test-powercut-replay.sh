#!/usr/bin/env bash
# Every crash state at the flush points (issue 45): the agent runs in a
# Debian kernel under qemu with its state directory (queue and archive) on
# ext4 over dm-log-writes, which logs every write, flush and FUA that reach
# the disk, in order. `ingestd send` commits BATCHES batches of 25
# readings; after each exit 0 the guest adds a mark "batch-N" to the log;
# the agent uploads to the archive meanwhile and drains it at the end.
# Then write-log-replay (Tests/Support/write-log-replay) replays the log
# onto the disk as it was before logging began, up to every flush and FUA
# (a power cut right after it) and, between two flushes, SUBSETS subsets
# of the writes the disk had not been told to flush (its cache wrote some
# back, not others), and checks each state with
# scripts/powercut-vm/check-crash-state.sh: the file system mends, the
# queue verifies without repair, every reading confirmed before the cut
# is in the queue or the archive, none twice in either, none garbled.
#
#   scripts/test-powercut-replay.sh [BATCHES] [SUBSETS]
#       BATCHES default 12, SUBSETS default 2
#   scripts/test-powercut-replay.sh --control [BATCHES]
#       the negative control: the agent's fsyncs made no-ops; exits 0
#       only if some crash state lost a confirmed reading
#   INGESTD=path            the binary in the VM and for the checks (as
#                           scripts/test-powercut-vm.sh)
#   WRITE_LOG_REPLAY=path   default .build/debug/write-log-replay (built
#                           by `swift build` when missing)
#
# Skips (exit 0, with a message) where qemu, busybox, dmsetup, e2fsck or
# the kernel cannot be had; with CI=true that is a failure.
# Work files: .build-powercut-vm/replay/.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CONTROL=0
if [ "${1:-}" = --control ]; then
    CONTROL=1
    shift
fi
BATCHES=${1:-12}
SUBSETS=${2:-2}
WORK=$ROOT/.build-powercut-vm/replay
# shellcheck source=scripts/powercut-vm/make-guest.sh
. "$ROOT/scripts/powercut-vm/make-guest.sh"
for tool in dmsetup e2fsck debugfs; do
    command -v "$tool" >/dev/null || skip "no $tool (apt-get install dmsetup e2fsprogs)"
done
REPLAY=${WRITE_LOG_REPLAY:-$ROOT/.build/debug/write-log-replay}
if [ ! -x "$REPLAY" ]; then
    (cd "$ROOT" && swift build --product write-log-replay >/dev/null) || skip "cannot build write-log-replay"
fi
echo "test-powercut-replay: $INGESTD, $BATCHES batches of 25 readings over dm-log-writes$([ "$CONTROL" = 1 ] && echo ", fsyncs made no-ops (the control)")"

# Disks: the guest's root, the logged device (as it is before logging
# began: base.img, kept), the log.
mkfs.ext4 -q -F -d "$ROOTFS" "$WORK/root.img" 512M
rm -f "$WORK/data.img" "$WORK/log.img"
truncate -s 64M "$WORK/data.img"
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$WORK/data.img"
cp --sparse=always "$WORK/data.img" "$WORK/base.img"
truncate -s 4G "$WORK/log.img"
console=$WORK/record.log
timeout 900 qemu-system-x86_64 -machine q35 -accel tcg -cpu max -m 768 -smp 1 -nographic -no-reboot \
    -kernel "$KERNEL" \
    -append "root=/dev/nvme0n1 rw rootfstype=ext4 console=ttyS0 init=/init panic=-1 powercut.mode=record powercut.round=0 powercut.batches=$BATCHES powercut.durability=power_loss_safe powercut.upload=archive powercut.nofsync=$CONTROL" \
    -drive "file=$WORK/root.img,if=none,id=root,format=raw,cache=none" -device nvme,drive=root,serial=root \
    -drive "file=$WORK/data.img,if=none,id=data,format=raw,cache=none" -device nvme,drive=data,serial=data \
    -drive "file=$WORK/log.img,if=none,id=log,format=raw,cache=none" -device nvme,drive=log,serial=log \
    >"$console" 2>&1 </dev/null || true
if ! tr -d '\r' <"$console" | grep -q '^RECORDED$'; then
    echo "test-powercut-replay: the recording run did not finish (see $console):" >&2
    tr -d '\r' <"$console" | grep -a '^RECORD\|^DRAINED\|^AGENT\|Kernel panic\|error' | tail -5 >&2
    exit 1
fi
confirmed=$(tr -d '\r' <"$console" | grep -c '^CONFIRMED batch-' || true)
echo "test-powercut-replay: recorded $confirmed confirmed batches, $(tr -d '\r' <"$console" | sed -n 's/^DRAINED /queue left /p'), ${SECONDS} s"
[ "$confirmed" -gt 0 ] || { echo "test-powercut-replay: no batch was confirmed (see $console)" >&2; exit 1; }

mkdir -p "$WORK/states"
status=0
"$REPLAY" check "$WORK/log.img" "$WORK/base.img" "$WORK/states" --subsets "$SUBSETS" --jobs 2 -- \
    "$ROOT/scripts/powercut-vm/check-crash-state.sh" "$INGESTD" "$ROOT/scripts/powercut-vm/ingestd.toml.in" \
    >"$WORK/replay.log" 2>&1 || status=$?
grep -v '^FAILED\|^barrier@\|^subset@' "$WORK/replay.log" || true
failed=$(grep -c '^FAILED' "$WORK/replay.log" || true)
if [ "$CONTROL" = 1 ]; then
    echo "test-powercut-replay --control: $failed crash states lost or garbled confirmed readings, ${SECONDS} s"
    [ "$status" = 1 ] && [ "$failed" -gt 0 ] || {
        echo "test-powercut-replay --control: no crash state lost a confirmed reading: the check cannot tell a build that skips its syncs" >&2
        exit 1
    }
    exit 0
fi
if [ "$status" != 0 ]; then
    echo "test-powercut-replay: $failed crash states failed (first ones below; all in $WORK/replay.log)" >&2
    grep '^FAILED\|^barrier@\|^subset@' "$WORK/replay.log" | head -10 >&2
    exit 1
fi
echo "test-powercut-replay: passed, ${SECONDS} s"
