#!/usr/bin/env bash
# Tests the self-contained binary and the Debian package the way an operator
# meets them, on a throwaway copy of this machine: an overlay over / (all
# changes land in a tmpfs and vanish at exit) with the Swift toolchain
# (/opt/swift) hidden, entered with chroot in a private mount namespace.
# Nothing is installed on the machine itself.
#
#   scripts/test-package.sh [--arch amd64|arm64] [--deb FILE]
#
#   --arch arm64   the arm64 package (default: built by scripts/build-deb.sh
#                  --arch arm64) on a throwaway copy of a Debian 13 arm64
#                  root (scripts/arm64/make-root.sh run) instead of this
#                  machine, its programs run by qemu-user through binfmt_misc
#   --deb FILE     the package to test (default: builds dist/ingestd and the .deb)
#
# Checks: the binary links only Debian's shared libraries and runs with no
# toolchain and an empty LD_LIBRARY_PATH; dpkg -i installs it without
# starting or enabling anything (a recording systemctl stands in for systemd's:
# only daemon-reload may be asked for); ingestd --version, the man page,
# check-config on the installed conffile, systemd-analyze verify of the
# installed unit; readings piped through the installed binary are queued;
# dpkg -r stops the service and keeps configuration and queue, dpkg -P removes them; after the
# purge no file of the package is left anywhere.
# Needs root (mount, chroot): the package is built as the calling user, then
# the checks re-run this script with sudo when it is not root.
# Exit codes: 0 every check passed, 1 a check failed (the failure is printed),
# 2 bad usage.
set -euo pipefail
self="$(realpath "$0")"  # "$0" is relative to where we were called from
cd "$(dirname "$self")/.."
repo="$PWD"

deb=""
arch="$(dpkg --print-architecture)"
while [ $# -gt 0 ]; do
    case "$1" in
        --deb) [ $# -ge 2 ] || { echo "test-package.sh: --deb needs a file" >&2; exit 2; }; deb="$2"; shift 2 ;;
        --arch) [ $# -ge 2 ] || { echo "test-package.sh: --arch needs amd64 or arm64" >&2; exit 2; }; arch="$2"; shift 2 ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$self"; exit 0 ;;
        *) echo "test-package.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
# Build as the calling user (sudo would reset PATH, losing the toolchain, and
# leave root-owned build directories behind), then check as root.
if [ -z "$deb" ]; then
    deb="$(scripts/build-deb.sh --arch "$arch" | tail -1)"
fi
[ -f "$deb" ] || { echo "test-package.sh: no package at '$deb'" >&2; exit 1; }
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "test-package.sh: needs root (mount and chroot) and there is no sudo" >&2; exit 1; }
    exec sudo "$self" --arch "$arch" --deb "$(realpath "$deb")"
fi
# The system the package is installed on: this machine, or an arm64 root.
lower=/
if [ "$arch" != "$(dpkg --print-architecture)" ]; then
    [ "$arch" = arm64 ] || { echo "test-package.sh: cannot test '$arch' packages here (amd64 or arm64)" >&2; exit 2; }
    scripts/arm64/make-root.sh run
    scripts/arm64/binfmt.sh
    lower="$repo/.build-arm64/run-root"
fi
[ "$(dpkg-deb -f "$deb" Architecture)" = "$arch" ] || { echo "test-package.sh: '$deb' is not an $arch package" >&2; exit 2; }

checks=0
ok() { checks=$((checks + 1)); echo "ok $checks - $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# --- The package's metadata --------------------------------------------------
version="$(dpkg-deb -f "$deb" Version)"
depends="$(dpkg-deb -f "$deb" Depends)"
# libcurl4t64: Debian 13's name for libcurl4 (the 64-bit time_t transition).
for lib in libsqlite3-0 libcurl4 libsystemd0 libc6; do
    pattern=", $lib(t64)?[ ,]"
    [[ ", $depends," =~ $pattern ]] || fail "Depends: '$depends' does not name $lib"
done
ok "Depends: $depends"
[ "$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)" = "/etc/ingestd/ingestd.toml" ] || fail "conffiles is not exactly /etc/ingestd/ingestd.toml"
ok "the example configuration is the one conffile"

# --- The binary: only Debian's shared libraries, no toolchain ----------------
work="$(mktemp -d /tmp/ingestd-package-test.XXXXXX)"
cleanup() { umount -R "$work" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
dpkg-deb -x "$deb" "$work/extracted"
binary="$work/extracted/usr/bin/ingestd"
# Packed relocations (DT_RELR) load only on glibc >= 2.36: Depends must say so.
if readelf -V "$binary" | grep -q GLIBC_ABI_DT_RELR; then
    libc="$(sed -n 's/.*libc6 (>= \([^)]*\)).*/\1/p' <<<"$depends")"
    { [ -n "$libc" ] && dpkg --compare-versions "$libc" ge 2.36; } ||
        fail "Depends: the binary has packed relocations (glibc >= 2.36) but asks for libc6 '$libc'"
    ok "Depends asks for libc6 >= 2.36, which the binary's packed relocations need"
fi
# libzstd1: dpkg (Essential) pre-depends on it, and libsystemd0 depends on it.
# libssl.so.3 (the MQTT input's TLS) comes in libssl3 with libcrypto.so.3,
# which libcurl4 depends on anyway.
allowed='^(libc\.so\.6|libm\.so\.6|ld-linux-[a-z0-9_-]+\.so\.[0-9]+|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libsqlite3\.so\.0|libcurl\.so\.4|libssl\.so\.3|libcrypto\.so\.3|libz\.so\.1|libzstd\.so\.1|libsystemd\.so\.0)$'
needed="$(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')"
unexpected="$(printf '%s\n' "$needed" | grep -Ev "$allowed" || true)"
[ -z "$unexpected" ] || fail "the binary needs libraries outside Debian's base set: $unexpected"
ok "NEEDED: $(printf '%s' "$needed" | tr '\n' ' ')"
echo "# stripped binary: $(stat -c %s "$binary") bytes"

# --- A throwaway root: overlay over / (or the arm64 root), toolchain hidden ---
export deb work lower
unshare --mount --pid --fork --propagation private bash -euo pipefail -s <<'NAMESPACE' || fail "the checks in the throwaway root failed (see above)"
mkdir -p "$work/layers" "$work/root"
mount -t tmpfs tmpfs "$work/layers"
mkdir -p "$work/layers/upper" "$work/layers/work"
mount -t overlay overlay -o "lowerdir=$lower,upperdir=$work/layers/upper,workdir=$work/layers/work" "$work/root"
root="$work/root"
[ -d "$root/opt/swift" ] && mount -t tmpfs tmpfs "$root/opt/swift"
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount -t tmpfs tmpfs "$root/tmp"
mount -t tmpfs tmpfs "$root/run"
cp "$deb" "$root/tmp/ingestd.deb"
inside() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LD_LIBRARY_PATH= HOME=/root bash -euo pipefail -c "$1"; }
n=0
ok() { n=$((n + 1)); echo "ok (throwaway root) $n - $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
# What the overlay holds beyond the machine: files, and directories the machine
# does not have (a directory of the machine's is copied up when written into;
# a file of the machine's counts only if its content changed: /etc/group is
# rewritten when the package's group is made and removed; shadow's backups
# of the account files, /etc/group- and the like, are not the package's).
snapshot() {
    (cd "$work/layers/upper" && find . -mindepth 1 \( -path ./var/lib/dpkg -o -path ./var/log -o -path ./var/cache -o -path ./root -o -path ./etc/ld.so.cache -o -path './etc/*-' \) -prune -o -print |
        while IFS= read -r path; do
            [ -d "$path" ] && [ ! -L "$path" ] && [ -d "$lower/${path#./}" ] && continue
            [ -f "$path" ] && [ ! -L "$path" ] && [ -f "$lower/${path#./}" ] && cmp -s "$path" "$lower/${path#./}" && continue
            printf '%s\n' "$path"
        done | sort)
}

inside '! command -v swift && [ ! -e /opt/swift/usr/bin/swift ]' || fail "the toolchain is still visible"
# Pretend systemd is the init (the maintainer scripts only talk to systemctl
# then) and put a systemctl in place that records what it is asked to do.
mkdir -p "$root/run/systemd/system"
printf '#!/bin/sh\necho "$*" >> /tmp/systemctl.log\n' > "$root/usr/bin/systemctl"
chmod 0755 "$root/usr/bin/systemctl"
before="$(snapshot)"

inside 'dpkg -i /tmp/ingestd.deb >/dev/null' || fail "dpkg -i failed"
ok "dpkg -i"
inside '[ "$(dpkg-query -W -f "\${Status}" ingestd)" = "install ok installed" ]' || fail "dpkg does not list ingestd as installed"
inside 'grep -qx -- "--system daemon-reload" /tmp/systemctl.log' || fail "postinst did not reload systemd (did it see /run/systemd/system?)"
asked="$(inside 'grep -Ev "^--system daemon-reload$" /tmp/systemctl.log || true')"
[ -z "$asked" ] || fail "the install asked systemctl for more than a daemon-reload: $asked"
inside '[ -z "$(find /etc/systemd/system -name ingestd.service)" ] && ! pgrep -x ingestd >/dev/null' || fail "the install enabled or started the service"
ok "nothing enabled or started on install (systemctl was asked for: daemon-reload)"
inside 'out=$(ldd /usr/bin/ingestd) || exit 1; ! grep -qE "not found|swift" <<<"$out"' || fail "ldd fails, or finds a missing or toolchain library"
inside '[ "$(ingestd --version)" = "'"$(dpkg-deb -f "$deb" Version)"'" ]' || fail "ingestd --version does not print the package version"
ok "ingestd --version without the toolchain"
inside 'zcat /usr/share/man/man8/ingestd.8.gz | grep -q "^.SH \"INGESTD RUN\""' || fail "the man page lacks the run section"
ok "man page installed"
inside '[ "$(stat -c %a /etc/ingestd/credentials)" = 700 ]' || fail "/etc/ingestd/credentials is not 0700"
inside 'ingestd check-config --config /etc/ingestd/ingestd.toml >/dev/null' || fail "check-config refuses the installed configuration"
ok "check-config accepts /etc/ingestd/ingestd.toml"
inside 'systemd-analyze verify /lib/systemd/system/ingestd.service /lib/systemd/system/ingestd.socket' || fail "systemd-analyze verify found problems in the installed units"
ok "systemd-analyze verify ingestd.service ingestd.socket"

readings='{"deviceId":"pkg-1","temperatureInFahrenheit":61.5,"barometricPressureInHg":29.6,"windSpeedInMph":4}
{"deviceId":"pkg-2","temperatureInFahrenheit":62.5,"barometricPressureInHg":29.7,"windSpeedInMph":5}
not json
{"deviceId":"pkg-3","temperatureInFahrenheit":63.5,"barometricPressureInHg":29.8,"windSpeedInMph":6}'
# The installed configuration's socket input, as a service would run it: the
# agent in the background, readings sent with `ingestd send` (exit 65: one
# line is refused, the three others are committed), then a graceful stop.
inside "mkdir -p -m 0700 /var/lib/ingestd && export STATE_DIRECTORY=/var/lib/ingestd && { ingestd run --config /etc/ingestd/ingestd.toml --log-target stderr 2>/tmp/run.log & agent=\$!; }
    for i in \$(seq 100); do [ -S /var/lib/ingestd/ingestd.sock ] && break; sleep 0.1; done
    rc=0; printf '%s\n' '$readings' | ingestd send --config /etc/ingestd/ingestd.toml 2>/tmp/send.log || rc=\$?
    kill -TERM \$agent; wait \$agent; [ \$rc = 65 ] && grep -q '^line 3: malformed_json' /tmp/send.log" ||
    { inside 'cat /tmp/run.log /tmp/send.log' >&2; fail "the installed ingestd did not take readings from ingestd send"; }
status="$(inside 'rc=0; STATE_DIRECTORY=/var/lib/ingestd ingestd status --config /etc/ingestd/ingestd.toml --json || rc=$?; [ $rc = 3 ]')" || fail "ingestd status did not report a stopped agent (exit 3)"
printf '%s' "$status" | grep -Eq '"accepted_total" *: *3([^0-9]|$)' || fail "status does not count 3 accepted readings: $status"
printf '%s' "$status" | grep -Eq '"rejected_total" *: *1([^0-9]|$)' || fail "status does not count 1 rejected line: $status"
inside '[ -s /var/lib/ingestd/queue.sqlite ]' || fail "no queue file in /var/lib/ingestd"
ok "3 readings sent with ingestd send queued, 1 bad line refused and reported, by the installed binary"

inside 'umask 077 && echo secret > /etc/ingestd/credentials/upload-token' || fail "cannot place a credential"
inside 'dpkg -r ingestd >/dev/null' || fail "dpkg -r failed"
inside 'grep -qx "stop ingestd.service" /tmp/systemctl.log && grep -qx "stop ingestd.socket" /tmp/systemctl.log' || fail "dpkg -r did not stop the service and its socket"
inside '[ ! -e /usr/bin/ingestd ] && [ ! -e /lib/systemd/system/ingestd.service ] && [ ! -e /lib/systemd/system/ingestd.socket ] && [ ! -e /usr/share/man/man8/ingestd.8.gz ]' || fail "dpkg -r left the package's files"
inside '[ -f /etc/ingestd/ingestd.toml ] && [ -s /etc/ingestd/credentials/upload-token ] && [ -s /var/lib/ingestd/queue.sqlite ]' ||
    fail "dpkg -r removed the configuration, a credential or the queue (only a purge may)"
inside '[ "$(dpkg-query -W -f "\${Status}" ingestd)" = "deinstall ok config-files" ]' || fail "after dpkg -r the package is not in config-files state"
ok "dpkg -r: program gone, configuration, credentials and queue kept"

inside 'dpkg -P ingestd >/dev/null' || fail "dpkg -P failed"
inside '[ ! -e /etc/ingestd ] && [ ! -e /var/lib/ingestd ]' || fail "dpkg -P left /etc/ingestd or /var/lib/ingestd"
inside '! dpkg-query -W ingestd >/dev/null 2>&1' || fail "dpkg still knows the purged package"
after="$(snapshot)"
leftover="$(diff <(printf '%s\n' "$before") <(printf '%s\n' "$after") | grep '^>' || true)"
[ -z "$leftover" ] || fail "files left behind after the purge: $leftover"
ok "dpkg -P: nothing left behind"
echo "# $n checks in the throwaway root passed"
NAMESPACE
echo "# all checks passed ($checks outside the throwaway root)"
