#!/usr/bin/env bash
# Two builds of ingestd interleaved (A B A B …), so that a slow hour on this
# drifting VM slows both alike: the release build of the working tree (A)
# against the release build of REV (B), on the same 1,000,000 WeatherSensor
# readings, state on tmpfs (CPU, not fsync latency, is what differs between
# builds). Two cases: stdin -> queue (ingest), and stdin -> queue -> loopback
# receiver -> deleted (end to end). Prints per case the median CPU (user +
# sys) and peak RSS of each build and the median of the per-pair CPU ratios
# A/B (below 1: A is cheaper).
#
#   bench/ab.sh REV [PAIRS]     # e.g. bench/ab.sh 7b002ce 7; PAIRS default 7
#
# WORKLOAD=realistic runs issue 22's readings instead (~172 B, own _id, a
# validated ISO-8601 `ts`; bench/lib.sh make_realistic_input); the default,
# WORKLOAD=light, the ~102-byte readings without them.
#
# GZIP=1 sends the end-to-end case's batches gzip-compressed (upload.gzip).
#
# STATE_ON_DISK=1 puts the agents' state on the real disk
# (/var/tmp/edgeingest-ab-state) instead of tmpfs: fsync and the device
# count then, as at the default durability in the field.
#
# A_EXTRA='TOML' appends those lines to A's configurations only (a setting
# B does not know: e.g. '[delivery.WeatherSensor]' keys, to measure what
# turning them on costs against the build before).
#
# REV is built in a git worktree under /tmp (its own scratch folder); the
# receiver is Tests/Support/ingest-test-server.py --fast. A run counts only
# if it exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_usage "$0" "$@"
rev=${1:?"usage: bench/ab.sh REV [PAIRS]"}
pairs=${2:-7}
require_count PAIRS "$pairs"
dir=/dev/shm/edgeingest-ab
mkdir -p "$dir"
old=/tmp/edgeingest-ab-$(git rev-parse --short "$rev")
[ -d "$old" ] || git worktree add -q --detach "$old" "$rev"
echo "building A (working tree) and B ($rev)" >&2
swift build -c release --product ingestd >/dev/null
(cd "$old" && swift build -c release --product ingestd --scratch-path "$old/.build-ab" >/dev/null)
cp .build/release/ingestd "$dir/A"
cp "$old/.build-ab/release/ingestd" "$dir/B"
case "${WORKLOAD:-light}" in
light) input="$dir/in-light.ndjson"; make_input "$input" 1000000; config=base_config ;;
realistic) input="$dir/in-realistic.ndjson"; make_realistic_input "$input" 1000000; config=realistic_config ;;
*) echo "WORKLOAD must be light or realistic" >&2; exit 64 ;;
esac
$config > "$dir/ingest.toml"
start_receiver "$dir"
{
    $config
    printf '[upload]\nurl = "http://127.0.0.1:%s/ingest/v1/batches"\nshutdown_timeout_ms = 600000\nlinger_ms = 50\n' "$receiver_port"
    if [ "${GZIP:-0}" = 1 ]; then echo 'gzip = true'; fi
} > "$dir/e2e.toml"
for case in ingest e2e; do
    cp "$dir/$case.toml" "$dir/A-$case.toml"
    if [ -n "${A_EXTRA:-}" ]; then printf '\n%s\n' "$A_EXTRA" >> "$dir/A-$case.toml"; fi
    cp "$dir/$case.toml" "$dir/B-$case.toml"
done
machine_line
echo "A: working tree at $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')${A_EXTRA:+ with A_EXTRA}; B: $rev; $pairs pairs per case; ${WORKLOAD:-light} readings; state on $([ "${STATE_ON_DISK:-0}" = 1 ] && echo 'the real disk' || echo tmpfs)$([ "${GZIP:-0}" = 1 ] && echo '; gzip uploads')"

state=$dir
if [ "${STATE_ON_DISK:-0}" = 1 ]; then
    state=/var/tmp/edgeingest-ab-state
    mkdir -p "$state"
fi

# run BUILD CASE: one run; appends "cpu rss wall" to $dir/BUILD-CASE.txt.
run() {
    rm -rf "$state/state-$1"
    sync
    /usr/bin/time -f "%U %S %M %e" -o "$dir/time.txt" "$dir/$1" run --config "$dir/$1-$2.toml" --state-directory "$state/state-$1" < "$input"
    awk '{ printf "%.3f %.1f %.3f\n", $1 + $2, $3 / 1024, $4 }' "$dir/time.txt" >> "$dir/$1-$2.txt"
}

for case in ingest e2e; do
    rm -f "$dir/A-$case.txt" "$dir/B-$case.txt"
    run A "$case" && run B "$case" && rm -f "$dir/A-$case.txt" "$dir/B-$case.txt"  # warm-up pair, not counted
    for _ in $(seq "$pairs"); do
        run A "$case"
        run B "$case"
    done
    paste "$dir/A-$case.txt" "$dir/B-$case.txt" | awk -v c="$case" '
        function median(v, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
            return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
        { a[NR] = $1; ar[NR] = $2; aw[NR] = $3; b[NR] = $4; br[NR] = $5; bw[NR] = $6; r[NR] = $1 / $4 }
        END { printf "%s: CPU s A %.3f, B %.3f; wall s A %.3f, B %.3f; peak RSS MB A %.1f, B %.1f; A/B CPU per pair: median %.3f\n", c, median(a, NR), median(b, NR), median(aw, NR), median(bw, NR), median(ar, NR), median(br, NR), median(r, NR) }'
done
