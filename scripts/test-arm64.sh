#!/usr/bin/env bash
# Builds the arm64 package and proves it under qemu-user on this machine
# (docs/ARM64.md):
#
#   scripts/test-arm64.sh [--deb FILE] [--rounds N]
#
#   --deb FILE   test this arm64 package instead of building one
#                (scripts/build-deb.sh --arch arm64)
#   --rounds N   kill -9 rounds of the crash test (default: 10, as the short
#                fault suite; each kill 0.5 to 2 s after the start, as qemu
#                starts the agent more slowly)
#
# Checks, each against the arm64 binary run by qemu-aarch64-static with the
# Debian 13 arm64 root's libraries (scripts/arm64/make-root.sh run):
#   1. it is an aarch64 executable and `ingestd --version` prints the
#      package's version;
#   2. `ingestd check-config` accepts the packaged configuration;
#   3. readings piped into `ingestd run` are validated and queued (a bad line
#      refused with its line number), then uploaded to a receiver on loopback
#      (Tests/Support/ingest-test-server.py): each arrives once, the queue
#      ends empty;
#   4. the kill -9 crash test (scripts/fault-suite.py's kill9 scenario):
#      SIGKILL at random moments while readings are followed, committed,
#      uploaded and acknowledged; nothing lost or duplicated;
#   5. the queue's own SIGKILL test (QueueCrashTests in the Swift suite) with
#      the arm64 queue-crash-probe (cross-built beside ingestd) as the child
#      that commits and is killed: every committed batch whole in the queue
#      file, none partial, as this machine's code reads it;
#   6. the package test (scripts/test-package.sh --arch arm64): dpkg -i, the
#      installed binary, dpkg -r, dpkg -P, in a throwaway copy of the arm64 root.
# Needs root (chroot, mounts, binfmt_misc), qemu-user-static, mmdebstrap and
# python3. Takes ≈ 8 minutes from nothing on 2 cores (build root and cross
# build ≈ 4.5, arm64 root ≈ 2.5, checks ≈ 1), ≈ 1.5 once the roots exist.
# Exit codes: 0 every check passed, 1 a check failed, 2 bad usage.
set -euo pipefail
self="$(realpath "$0")"
cd "$(dirname "$self")/.."
deb=""
# 10 rounds gave 20 requests under qemu and, once in CI (5a60176), not one
# kill between the backend's store and its acknowledgement: the check
# that proves a re-send then fails. 25 rounds cost ~25 s more.
rounds=25
while [ $# -gt 0 ]; do
    case "$1" in
        --deb|--rounds)
            [ $# -ge 2 ] || { echo "test-arm64.sh: $1 needs a value" >&2; exit 2; }
            if [ "$1" = --deb ]; then deb="$2"; else rounds="$2"; fi
            shift 2 ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$self"; exit 0 ;;
        *) echo "test-arm64.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "test-arm64.sh: --rounds wants a positive number, not '$rounds'" >&2; exit 2; }
if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "test-arm64.sh: needs root (chroot, mounts, binfmt_misc) and there is no sudo" >&2; exit 1; }
    # PATH kept: step 5 runs this machine's swift test.
    exec sudo env PATH="$PATH" "$self" --rounds "$rounds" ${deb:+--deb "$(realpath "$deb")"}
fi
started=$SECONDS
step() { echo "# $* ($((SECONDS - started)) s)"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

if [ -z "$deb" ]; then
    step "building the arm64 package"
    deb="$(scripts/build-deb.sh --arch arm64 | tail -1)"
fi
[ "$(dpkg-deb -f "$deb" Architecture)" = arm64 ] || fail "'$deb' is not an arm64 package"
step "making the arm64 root"
scripts/arm64/make-root.sh run
scripts/arm64/binfmt.sh
root="$PWD/.build-arm64/run-root"

work="$(mktemp -d /tmp/ingestd-arm64.XXXXXX)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
dpkg-deb -x "$deb" "$work/pkg"
binary="$work/pkg/usr/bin/ingestd"
# What the tests call "ingestd": the arm64 binary under qemu-user.
ingestd="$work/ingestd"
printf '#!/bin/sh\nexec qemu-aarch64-static -L "%s" "%s" "$@"\n' "$root" "$binary" > "$ingestd"
chmod 0755 "$ingestd"
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }

# 1. The binary and its version.
machine="$(readelf -h "$binary" | sed -n 's/^ *Machine: *//p')"
[ "$machine" = AArch64 ] || fail "the packaged binary is not an aarch64 executable (machine: $machine)"
version="$("$ingestd" --version)" || fail "ingestd --version failed under qemu"
[ "$version" = "$(dpkg-deb -f "$deb" Version)" ] || fail "ingestd --version printed '$version', the package is $(dpkg-deb -f "$deb" Version)"
ok "aarch64 binary, ingestd --version = $version (qemu-user)"

# 2. The packaged configuration.
"$ingestd" check-config --config "$work/pkg/etc/ingestd/ingestd.toml" >/dev/null ||
    fail "check-config refuses the packaged configuration"
ok "check-config accepts the packaged /etc/ingestd/ingestd.toml"

# 3. Readings piped in, queued, uploaded to a receiver on loopback.
python3 Tests/Support/ingest-test-server.py --port 0 --key-field deviceId > "$work/server.out" 2> "$work/server.log" &
for _ in $(seq 100); do grep -q '^PORT ' "$work/server.out" 2>/dev/null && break; sleep 0.1; done
port="$(sed -n 's/^PORT //p' "$work/server.out")"
[ -n "$port" ] || fail "the receiver did not start: $(cat "$work/server.log")"
cat > "$work/agent.toml" <<TOML
[agent]
state_directory = "$work/state"

[upload]
url = "http://127.0.0.1:$port/ingest/v1/batches"

[types.WeatherSensor]
deviceId = "string"
temperatureInFahrenheit = "double"
barometricPressureInHg = "double"
windSpeedInMph = "int"
TOML
readings=500
{
    for i in $(seq 0 $((readings - 1))); do
        printf '{"deviceId":"A%d","temperatureInFahrenheit":%d.5,"barometricPressureInHg":29.9,"windSpeedInMph":%d}\n' "$i" $((i % 90)) $((i % 40))
        [ "$i" = 250 ] && echo '{"deviceId":"bad","temperatureInFahrenheit":"warm"}'
    done
} > "$work/readings.ndjson"
rc=0
"$ingestd" run --config "$work/agent.toml" --log-target stderr < "$work/readings.ndjson" 2> "$work/run.log" || rc=$?
[ "$rc" = 0 ] || { tail -20 "$work/run.log" >&2; fail "ingestd run exited $rc"; }
grep -q 'line 252' "$work/run.log" || { tail -20 "$work/run.log" >&2; fail "the bad line was not reported by its number (252)"; }
status="$("$ingestd" status --config "$work/agent.toml" --json || true)"
for pair in "accepted_total $readings" "uploaded_total $readings" "rejected_total 1" "queued_records 0"; do
    printf '%s' "$status" | grep -Eq "\"${pair% *}\" *: *${pair#* }([^0-9]|$)" || fail "status: ${pair% *} is not ${pair#* }: $status"
done
stats="$(curl -sf "http://127.0.0.1:$port/stats")" || fail "the receiver does not answer /stats"
python3 - "$stats" "$readings" <<'PY' || fail "the receiver did not get each reading once: $stats"
import json, sys
s, n = json.loads(sys.argv[1]), int(sys.argv[2])
sys.exit(0 if s["content_unique"] == n and s["content_duplicates"] == 0 else 1)
PY
ok "$readings readings piped in, 1 bad line refused (line 252), all uploaded once, queue empty"

# 4. kill -9 at random moments.
step "kill -9 crash test, $rounds rounds"
python3 scripts/fault-suite.py --binary "$ingestd" --only kill9 --rounds "$rounds" --kill-delay 0.5:2.0 --quiet ||
    fail "the kill -9 crash test failed against the arm64 binary"
ok "kill -9 crash test, $rounds rounds: nothing lost or duplicated"

# 5. The queue's SIGKILL test, the arm64 probe as its child.
step "the queue's SIGKILL test with the arm64 queue-crash-probe"
build_root=.build-arm64/build-root
[ -f "$build_root/src/Package.swift" ] || fail "no sources in $build_root/src: run without --deb (or scripts/build-release.sh --arch arm64) first"
scripts/arm64/in-root.sh "$build_root" "cd /src && swift build --quiet -c release --static-swift-stdlib --product queue-crash-probe \
    --scratch-path /build/swiftpm --destination /opt/arm64-sdk/swift-sdk.json" || fail "cannot cross-build queue-crash-probe"
probe="$work/queue-crash-probe"
printf '#!/bin/sh\nexec qemu-aarch64-static -L "%s" "%s" "$@"\n' "$root" "$PWD/$build_root/build/swiftpm/aarch64-unknown-linux-gnu/release/queue-crash-probe" > "$probe"
chmod 0755 "$probe"
QUEUE_CRASH_PROBE="$probe" swift test --quiet --filter sigkillNeverLosesACommittedBatchNorLeavesAPartialOne > "$work/queue-crash.log" 2>&1 ||
    { tail -30 "$work/queue-crash.log" >&2; fail "the queue's SIGKILL test failed with the arm64 probe"; }
grep -q 'Test run with 1 test' "$work/queue-crash.log" || { tail -5 "$work/queue-crash.log" >&2; fail "swift test did not run exactly the queue's SIGKILL test"; }
ok "queue SIGKILL test, 8 rounds, the arm64 probe killed: every committed batch whole, none partial"

# 6. The package in a throwaway arm64 root.
step "package test in the arm64 root"
scripts/test-package.sh --arch arm64 --deb "$deb" || fail "the package test failed in the arm64 root"
ok "install / remove / purge in an arm64 root"
step "all $n checks passed"
