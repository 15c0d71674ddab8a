# Sourced by scripts/test-powercut-vm.sh and scripts/test-powercut-replay.sh
# with ROOT and WORK set: checks what the guest needs (skipping, or failing
# with CI=true, where it cannot be had), fetches Debian's cloud kernel
# (kept in .build-powercut-vm/) and builds the guest's root file system in
# $WORK/rootfs. Sets KERNEL, ROOTFS,
# INGESTD and MODULES (the kernel's module directory). With
# GUEST_KERNEL_ONLY=1 only skip() and the kernel (scripts/test-memory-vm.sh).
NAME=$(basename "$0" .sh)
mkdir -p "$WORK"

skip() {
    if [ "${CI:-}" = true ]; then
        echo "$NAME: cannot run in CI: $*" >&2
        exit 1
    fi
    echo "$NAME: skipped: $*"
    exit 0
}
command -v qemu-system-x86_64 >/dev/null || skip "no qemu-system-x86_64 (apt-get install qemu-system-x86)"
command -v mkfs.ext4 >/dev/null || skip "no mkfs.ext4"
if [ "${GUEST_KERNEL_ONLY:-}" != 1 ]; then
BUSYBOX=$(command -v busybox || true)
[ -n "$BUSYBOX" ] && file -L "$BUSYBOX" | grep -q 'statically linked' || skip "no static busybox (apt-get install busybox-static)"
command -v sqlite3 >/dev/null || skip "no sqlite3"
command -v cc >/dev/null || skip "no C compiler"
INGESTD=${INGESTD:-}
if [ -z "$INGESTD" ]; then
    for candidate in "$ROOT/.build-release/release/ingestd" "$ROOT/.build/release/ingestd" "$ROOT/.build/debug/ingestd"; do
        [ -x "$candidate" ] && INGESTD=$candidate && break
    done
fi
[ -n "$INGESTD" ] && [ -x "$INGESTD" ] || skip "no built ingestd (swift build -c release)"
fi

# The kernel: Debian's cloud kernel (NVMe and ext4 built in: no initramfs;
# device-mapper and dm-log-writes are modules, copied into the root).
CACHE=$ROOT/.build-powercut-vm
mkdir -p "$CACHE"
KERNEL=$CACHE/vmlinuz
if [ ! -s "$KERNEL" ] || ! ls "$CACHE"/kernel/lib/modules/*/kernel/drivers/md/dm-log-writes.ko >/dev/null 2>&1; then
    package=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | sed -n 's/.*Depends: \(linux-image-[^ ]*\)/\1/p' | head -1)
    [ -n "$package" ] || skip "apt knows no linux-image-cloud-amd64"
    (cd "$CACHE" && rm -f ./*.deb && apt-get download "$package" >/dev/null 2>&1) || skip "cannot download $package"
    rm -rf "$CACHE/kernel" && dpkg-deb -x "$CACHE"/linux-image-*.deb "$CACHE/kernel"
    cp "$CACHE"/kernel/boot/vmlinuz-* "$KERNEL"
fi
MODULES=$(echo "$CACHE"/kernel/lib/modules/*/kernel/drivers/md)
# scripts/test-memory-vm.sh boots a Debian root of its own: the kernel is all it needs.
[ "${GUEST_KERNEL_ONLY:-}" = 1 ] && return 0

# The root file system: busybox, ingestd, sqlite3 and dmsetup with their
# libraries, the device-mapper modules, the init script, one configuration
# per durability.
ROOTFS=$WORK/rootfs
rm -rf "$ROOTFS"
mkdir -p "$ROOTFS"/{bin,sbin,usr/bin,etc/ingestd,proc,sys,dev,run,tmp,var/lib/ingestd,var/log,lib/modules}
cp "$BUSYBOX" "$ROOTFS/bin/busybox"
for applet in $("$BUSYBOX" --list); do
    [ -e "$ROOTFS/bin/$applet" ] || ln -s busybox "$ROOTFS/bin/$applet"
done
copy_with_libraries() {
    cp "$1" "$ROOTFS/usr/bin/$(basename "$1")"
    ldd "$1" | awk '/=> \//{print $3} /^\t\/lib/{print $1}' | while read -r library; do
        mkdir -p "$ROOTFS$(dirname "$library")"
        cp -L "$library" "$ROOTFS$library"
    done
}
copy_with_libraries "$INGESTD"
copy_with_libraries "$(command -v sqlite3)"
DMSETUP=$(command -v dmsetup || true)
[ -n "$DMSETUP" ] && copy_with_libraries "$DMSETUP"
cp "$MODULES/dm-mod.ko" "$MODULES/dm-log-writes.ko" "$ROOTFS/lib/modules/"
mkdir -p "$ROOTFS/lib64" && cp -L /lib64/ld-linux-x86-64.so.2 "$ROOTFS/lib64/"
mkdir -p "$ROOTFS/usr/lib"
cc -shared -fPIC -O1 -o "$ROOTFS/usr/lib/nofsync.so" "$ROOT/scripts/powercut-vm/nofsync.c"
cp "$ROOT/scripts/powercut-vm/guest-init.sh" "$ROOTFS/init"
# The agent's configurations, ingestd-DURABILITY-UPLOAD.toml: uploads to
# the gateway in the VM (scripts/test-powercut-vm.sh) or to an archive on
# its own disk (scripts/test-powercut-replay.sh).
for durability in power_loss_safe crash_safe; do
    for upload in gateway archive; do
        config=$ROOTFS/etc/ingestd/ingestd-$durability-$upload.toml
        sed "s/@DURABILITY@/$durability/" "$ROOT/scripts/powercut-vm/ingestd.toml.in" >"$config"
        echo "[upload]" >>"$config"
        if [ "$upload" = gateway ]; then
            echo 'url = "http://127.0.0.1:8480/ingest/v1/batches"' >>"$config"
        else
            printf 'sink = "sqlite"\npath = "/var/lib/ingestd/archive.sqlite"\n' >>"$config"
        fi
        printf 'max_records = 50\nlinger_ms = 200\n' >>"$config"
    done
done
cp "$ROOT/scripts/powercut-vm/gateway.toml" "$ROOTFS/etc/ingestd/gateway.toml"
