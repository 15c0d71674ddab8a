#!/usr/bin/env bash
# Upload benchmarks, one command (release build):
#   1. receiver alone: requests/s a raw libcurl loop (curl --parallel off) gets
#   2. drain: 1,000,000 queued readings -> loopback receiver -> deleted (plain, gzip)
#   3. end to end: 1,000,000 NDJSON lines on stdin -> queue -> receiver -> deleted
# Prints readings/s, CPU seconds of the agent and its peak RSS.
#
#   bench/upload.sh [LINES] [DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${1:-1000000}
dir=${2:-/tmp/edgeingest-bench-upload}
mkdir -p "$dir"
. bench/lib.sh
swift build -c release --product ingestd >/dev/null
input="$dir/readings.ndjson"
make_input "$input" "$lines"
rm -f "$dir/port"
python3 Tests/Support/ingest-test-server.py --fast --port-file "$dir/port" >/dev/null 2>&1 &
server=$!
trap 'kill -9 $server 2>/dev/null' EXIT
for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.05; done
port=$(cut -d' ' -f1 "$dir/port")
url="http://127.0.0.1:$port/ingest/v1/batches"
count() { curl -s "http://127.0.0.1:$port/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["unique"])'; }

machine_line

# 1. The receiver alone: 1000-record bodies posted back to back by curl.
head -n 1000 "$input" > "$dir/batch.ndjson"
start=$(date +%s.%N)
curl -s -o /dev/null $(for _ in $(seq 300); do printf -- "--next -X POST --data-binary @%s %s " "$dir/batch.ndjson" "$url"; done)
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" 'BEGIN { printf "receiver alone: %d requests/s of 1000 readings = %d readings/s (curl, one connection)\n", 300 / (e - s), 300000 / (e - s) }'

config() {  # $1 = gzip, $2 = with upload (yes/no)
    base_config
    if [ "$2" = yes ]; then printf '[upload]\nurl = "%s"\ngzip = %s\nshutdown_timeout_ms = 600000\nlinger_ms = 50\n' "$url" "$1"; fi
}

measure() {  # $1 = label, $2 = config, $3 = stdin file, $4 = expected receiver count
    local before; before=$(count)
    local start end
    start=$(date +%s.%N)
    /usr/bin/time -f "%M %U %S" -o "$dir/time.txt" .build/release/ingestd run --config "$2" --state-directory "$dir/state" < "$3"
    end=$(date +%s.%N)
    read -r rss user sys < "$dir/time.txt"
    local got=$(( $(count) - before ))
    local queued; queued=$(.build/release/ingestd status --state-directory "$dir/state" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["queued_records"])' || true)
    awk -v l="$1" -v n="$4" -v s="$start" -v e="$end" -v rss="$rss" -v u="$user" -v sy="$sys" -v got="$got" -v q="$queued" \
        'BEGIN { printf "%s: %d readings in %.2f s = %d readings/s; agent CPU %.2f s (%.2f s per million); peak RSS %.1f MB; received %d, left queued %s\n", l, n, e - s, n / (e - s), u + sy, (u + sy) * 1000000 / n, rss / 1024, got, q }'
    # A run that lost readings or left them queued measured something else.
    if [ "$got" -lt "$4" ] || [ "$queued" != 0 ]; then
        echo "$1: the receiver got $got of $4 readings and $queued are left queued: this run does not count" >&2
        exit 1
    fi
}

for gz in false true; do
    config "$gz" no > "$dir/fill.toml"
    config "$gz" yes > "$dir/drain.toml"
    rm -rf "$dir/state"
    .build/release/ingestd run --config "$dir/fill.toml" --state-directory "$dir/state" < "$input"
    measure "drain (gzip $gz)" "$dir/drain.toml" /dev/null "$lines"
done
for gz in false true; do
    config "$gz" yes > "$dir/e2e.toml"
    rm -rf "$dir/state"
    measure "end to end stdin -> receiver (gzip $gz)" "$dir/e2e.toml" "$input" "$lines"
done
