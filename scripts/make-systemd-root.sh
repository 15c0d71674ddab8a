#!/usr/bin/env bash
# Makes the Debian 12 root with systemd 252 that scripts/test-systemd.sh
# boots in containers (systemd-nspawn) and scripts/test-memory-vm.sh boots
# in a qemu VM: mmdebstrap's minbase with systemd, dbus, python3, curl,
# sqlite3 and the package's libraries (~35 s, ~235 MB), no consoles to log
# in on, no timers, and a runner unit (ci-runner.service) that runs
# /ci/run-scenario.sh once the system is up when the kernel command line
# says systemd.wants=ci-runner.service, writes its output to
# /ci-out/results.txt, the journal to /ci-out/journal.txt and its exit
# status to /ci-out/status, then ends the container with that status
# (in a VM: powers off).
#
#   scripts/make-systemd-root.sh ROOT
#
# Made again only when what it is made of changes (a stamp in ROOT).
# Needs root and mmdebstrap. SYSTEMD_DEBIAN_MIRROR: the Debian mirror
# (default: the host's own).
set -euo pipefail
root=${1:?usage: scripts/make-systemd-root.sh ROOT}
quiet=(--quiet)
[ -t 2 ] && quiet=()
include="systemd,systemd-sysv,dbus,python3,procps,curl,sqlite3,libsqlite3-0,libcurl4,libssl3,libzstd1,zlib1g,libsystemd0"
masked="console-getty.service getty@.service serial-getty@.service apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer fstrim.timer systemd-timesyncd.service"
runner='[Unit]
Description=The scenario under test
After=multi-user.target
[Service]
Type=exec
StandardOutput=file:/ci-out/results.txt
StandardError=inherit
ExecStart=/bin/bash -c '"'"'rc=0; /bin/bash /ci/run-scenario.sh || rc=$?; journalctl -b --no-pager -o short-precise > /ci-out/journal.txt; echo $rc > /ci-out/status; sync; if systemd-detect-virt --quiet --container; then systemctl --no-block exit $rc; else systemctl --no-block poweroff; fi'"'"'
'
stamp="$(printf '%s\n' "$include" "$masked" "$runner" | sha256sum | cut -c1-16)"
if [ -f "$root/.edgeingest-root" ] && [ "$(cat "$root/.edgeingest-root")" = "$stamp" ]; then
    exit 0
fi
mirror="${SYSTEMD_DEBIAN_MIRROR:-$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)}"
mirror="${mirror:-http://deb.debian.org/debian}"
echo "make-systemd-root: making $root (Debian 12, systemd 252) …" >&2
rm -rf "$root"
mkdir -p "$(dirname "$root")"
mmdebstrap "${quiet[@]}" --variant=minbase --include="$include" bookworm "$root" "deb $mirror bookworm main"
for unit in $masked; do ln -sf /dev/null "$root/etc/systemd/system/$unit"; done
# Type=exec: a oneshot that waits for the boot to finish would deadlock it.
printf '%s' "$runner" >"$root/etc/systemd/system/ci-runner.service"
echo "$stamp" >"$root/.edgeingest-root"
