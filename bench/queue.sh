#!/usr/bin/env bash
# Queue benchmark, one command: builds in release mode, measures this
# machine's raw SQLite limit for the same layout (bench/sqlite-limit), then
# the EdgeIngest queue, each on 1,000,000 WeatherSensor readings in batches
# of 1000, on the file system holding DIR; last, the drain into the SQLite
# archive sink (one row per reading, the raw one-row-per-reading figure is
# its limit).
#
#   bench/queue.sh [DIR]        (default /tmp/edgeingest-bench)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_usage "$0" "$@"
dir=${1:-/tmp/edgeingest-bench}
mkdir -p "$dir"

machine_line
echo "file system: $(df -h "$dir" | awk 'NR==2{print $1}'), swift $(swift --version 2>&1 | grep -o 'version [0-9.]*' | head -1)"
echo "--- raw SQLite C API, same layout (one row per 1000-reading batch), synchronous=FULL"
sqlite_limit "$dir" 1
echo "--- raw SQLite C API, one row per reading, synchronous=FULL"
sqlite_limit "$dir" 0

swift build -c release --product queue-bench >/dev/null
echo "--- EdgeIngest queue (power_loss_safe)"
.build/release/queue-bench --dir "$dir"
echo "--- EdgeIngest queue (crash_safe)"
.build/release/queue-bench --dir "$dir" --durability crash_safe
echo "--- EdgeIngest queue drained into the SQLite archive sink (upload.sink = \"sqlite\")"
.build/release/queue-bench --dir "$dir" --archive
