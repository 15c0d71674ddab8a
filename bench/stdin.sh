#!/usr/bin/env bash
# stdin → durable queue, one command: 1,000,000 WeatherSensor NDJSON lines
# piped into `ingestd run` (release build, default durability), repeated 3
# times on a fresh state directory. Prints readings/s and peak RSS per run.
#
#   bench/stdin.sh [LINES] [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${1:-1000000}
dir=${2:-/tmp/edgeingest-bench-stdin}
mkdir -p "$dir"
. bench/lib.sh
swift build -c release --product ingestd >/dev/null
input="$dir/readings.ndjson"
make_input "$input" "$lines"
base_config > "$dir/bench.toml"
machine_line
for run in 1 2 3; do
    rm -rf "$dir/state"
    start=$(date +%s.%N)
    /usr/bin/time -f "%M %U %S" -o "$dir/time.txt" .build/release/ingestd run --config "$dir/bench.toml" --state-directory "$dir/state" < "$input"
    end=$(date +%s.%N)
    read -r rss user sys < "$dir/time.txt"
    awk -v n="$lines" -v s="$start" -v e="$end" -v rss="$rss" -v u="$user" -v sy="$sys" \
        'BEGIN { printf "run: %d readings in %.2f s = %d readings/s, peak RSS %.1f MB, CPU %.2f s user + %.2f s sys\n", n, e - s, n / (e - s), rss / 1024, u, sy }'
done
queued=$(.build/release/ingestd status --state-directory "$dir/state" --json | grep -o '"accepted_total" : [0-9]*' || true)
echo "last run: $queued"
