#!/usr/bin/env bash
# Issue 22's realistic workload through the release build, on the real disk
# (not tmpfs: the bytes written to the device are part of the result):
# 1,000,000 readings of ~174 bytes with their own _id and a validated `ts`
# timestamp (bench/lib.sh make_realistic_input), stdin -> durable queue at
# the default durability. Prints, per run, CPU seconds, wall seconds, peak
# RSS, bytes written to the device (and per reading, against its NDJSON
# size), and the queue file's size per reading.
#
#   bench/realistic.sh [RUNS] [DIR]     # defaults: 3 runs, /var/tmp/edgeingest-realistic
#
# MODE=e2e measures end to end instead: the readings are uploaded to the
# loopback receiver (Tests/Support/ingest-test-server.py --fast) and
# deleted from the queue as they are acknowledged, before the agent exits;
# GZIP=1 with it sends the batches gzip-compressed (upload.gzip).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_usage "$0" "$@"
runs=${1:-3}
require_count RUNS "$runs"
dir=${2:-/var/tmp/edgeingest-realistic}
mkdir -p "$dir"
swift build -c release --product ingestd >/dev/null
make_realistic_input "$dir/in.ndjson" 1000000
realistic_config > "$dir/ingest.toml"
case "${MODE:-ingest}" in
ingest) ;;
e2e)
    start_receiver "$dir"
    printf '[upload]\nurl = "http://127.0.0.1:%s/ingest/v1/batches"\nshutdown_timeout_ms = 600000\nlinger_ms = 50\n' "$receiver_port" >> "$dir/ingest.toml"
    [ "${GZIP:-0}" = 1 ] && echo 'gzip = true' >> "$dir/ingest.toml"
    ;;
*) echo "MODE must be ingest or e2e" >&2; exit 64 ;;
esac
input_bytes=$(stat -c %s "$dir/in.ndjson")
machine_line
echo "ingestd $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)'); input $input_bytes bytes, 1,000,000 readings, ${MODE:-ingest}$([ "${GZIP:-0}" = 1 ] && echo ', gzip')"
for run in $(seq "$runs"); do
    rm -rf "$dir/state"
    sync
    line=$(bench/proc-io.py "$dir/in.ndjson" .build/release/ingestd run --config "$dir/ingest.toml" --state-directory "$dir/state")
    written=$(sed -n 's/.*write_bytes=\([0-9]*\).*/\1/p' <<<"$line")
    queue=$(( $(stat -c %s "$dir/state/queue.sqlite") + $(stat -c %s "$dir/state/queue.sqlite-wal" 2>/dev/null || echo 0) ))
    awk -v l="$line" -v w="$written" -v q="$queue" -v size="$input_bytes" -v r="$run" 'BEGIN {
        printf "run %d: %s; device bytes per reading %.0f (%.2f x its NDJSON); queue bytes per reading %.0f\n",
            r, l, w / 1e6, w / size, q / 1e6 }'
done
