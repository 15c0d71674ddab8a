#!/usr/bin/env bash
# stdin → durable queue, one command: 1,000,000 WeatherSensor NDJSON lines
# piped into `ingestd run` (release build, default durability), repeated 3
# times on a fresh state directory. Prints readings/s, peak RSS, CPU and bytes
# on disk per reading per run, and each rate as a share of this machine's raw
# SQLite append limit for the same layout measured in the same run
# (bench/sqlite-limit/layout.c: one row per 1000-reading batch, synchronous=FULL).
#
# A run whose agent did not accept every line fails the script (exit 1).
#
#   bench/stdin.sh [LINES] [DIR]      # default 1,000,000, /tmp/edgeingest-bench-stdin
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_usage "$0" "$@"
lines=${1:-1000000}
require_count LINES "$lines"
dir=${2:-/tmp/edgeingest-bench-stdin}
mkdir -p "$dir"
swift build -c release --product ingestd >/dev/null
input="$dir/readings.ndjson"
make_input "$input" "$lines"
base_config > "$dir/bench.toml"
machine_line
limit=$(sqlite_limit "$dir" 1 | sed -n 's/.* append \([0-9]*\)\/s.*/\1/p')
echo "raw SQLite append limit (same layout, synchronous=FULL): $limit readings/s"
for run in 1 2 3; do
    rm -rf "$dir/state"
    start=$(date +%s.%N)
    /usr/bin/time -f "%M %U %S" -o "$dir/time.txt" .build/release/ingestd run --config "$dir/bench.toml" --state-directory "$dir/state" < "$input"
    end=$(date +%s.%N)
    read -r rss user sys < "$dir/time.txt"
    bytes=$(cat "$dir"/state/queue.sqlite* | wc -c)
    awk -v n="$lines" -v s="$start" -v e="$end" -v rss="$rss" -v u="$user" -v sy="$sys" -v limit="$limit" -v b="$bytes" \
        'BEGIN { printf "run: %d readings in %.2f s = %d readings/s (%.0f %% of the raw SQLite limit), peak RSS %.1f MB, CPU %.2f s user + %.2f s sys, %d bytes on disk per reading\n", n, e - s, n / (e - s), 100 * n / (e - s) / limit, rss / 1024, u, sy, b / n }'
    accepted=$(status_field "$dir/state" accepted_total)
    if [ "$accepted" != "$lines" ]; then
        echo "run: the agent accepted $accepted of $lines lines: this run does not count" >&2
        exit 1
    fi
done
