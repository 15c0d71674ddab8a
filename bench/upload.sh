#!/usr/bin/env bash
# Upload benchmarks, one command (release build):
#   1. the machine's raw libcurl limit: bench/curl-limit/post.c, one reused
#      handle posting 1000-reading bodies back to back to the receiver (this is
#      also the receiver measured alone: it must not be the bottleneck)
#   2. drain: LINES queued readings -> loopback receiver -> deleted (plain, gzip)
#   3. end to end: LINES NDJSON lines on stdin -> queue -> receiver -> deleted
#   4. end to end from a followed file (file input) -> receiver -> deleted
# Prints readings/s, CPU seconds of the agent, its peak RSS, bytes on disk per
# queued reading, and each rate as a share of the libcurl limit of the same run.
#
#   bench/upload.sh [LINES] [DIR]     # default 1,000,000, /tmp/edgeingest-bench-upload
#   CASES="drain" bench/upload.sh …   # only some cases: drain drain-gzip e2e e2e-gzip file
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

# 1. The raw libcurl limit (and the receiver alone): 1000-reading bodies, one handle.
head -n 1000 "$input" > "$dir/batch.ndjson"
cc -O2 -o "$dir/curl-limit" bench/curl-limit/post.c -lcurl
read -r limit_rps limit_seconds < <("$dir/curl-limit" "$url" "$dir/batch.ndjson" 2000)
limit=$(( limit_rps * 1000 ))
echo "libcurl limit (one handle, 1000-reading bodies, receiver alone): $limit_rps requests/s = $limit readings/s"
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
        -v limit="$limit" \
        'BEGIN { printf "%s: %d readings in %.2f s = %d readings/s (%.0f %% of the libcurl limit); agent CPU %.2f s (%.2f s per million); peak RSS %.1f MB; received %d, left queued %s\n", l, n, e - s, n / (e - s), 100 * n / (e - s) / limit, u + sy, (u + sy) * 1000000 / n, rss / 1024, got, q }'
    # A run that lost readings or left them queued measured something else.
    if [ "$got" -lt "$4" ] || [ "$queued" != 0 ]; then
        echo "$1: the receiver got $got of $4 readings and $queued are left queued: this run does not count" >&2
        exit 1
    fi
}

cases=" ${CASES:-drain drain-gzip e2e e2e-gzip file} "
wanted() { [[ "$cases" == *" $1 "* ]]; }
for gz in false true; do
    wanted "drain$([ "$gz" = true ] && echo -gzip)" || continue
    config "$gz" no > "$dir/fill.toml"
    config "$gz" yes > "$dir/drain.toml"
    rm -rf "$dir/state"
    .build/release/ingestd run --config "$dir/fill.toml" --state-directory "$dir/state" < "$input"
    [ "$gz" = false ] && echo "bytes on disk per queued reading (queue file + WAL): $(( $(cat "$dir"/state/queue.sqlite* | wc -c) / lines ))"
    measure "drain (gzip $gz)" "$dir/drain.toml" /dev/null "$lines"
done
for gz in false true; do
    wanted "e2e$([ "$gz" = true ] && echo -gzip)" || continue
    config "$gz" yes > "$dir/e2e.toml"
    rm -rf "$dir/state"
    measure "end to end stdin -> receiver (gzip $gz)" "$dir/e2e.toml" "$input" "$lines"
done

# 4. A followed file: the agent does not exit by itself, so wait for the
# receiver and an empty queue, then stop it.
wanted file || exit 0
rm -rf "$dir/state" "$dir/in"
mkdir -p "$dir/in"
{ config false yes; printf '[[inputs]]\nkind = "file"\npaths = ["%s/in/*.ndjson"]\n' "$dir"; } > "$dir/file.toml"
before=$(count)
start=$(date +%s.%N)
/usr/bin/time -f "%M %U %S" -o "$dir/time.txt" .build/release/ingestd run --config "$dir/file.toml" --state-directory "$dir/state" < /dev/null &
agent=$!
cp "$input" "$dir/in/readings.ndjson"
while [ $(( $(count) - before )) -lt "$lines" ]; do
    sleep 0.05
    kill -0 $agent 2>/dev/null || { echo "file input: the agent exited early" >&2; exit 1; }
done
end=$(date +%s.%N)
got=$(( $(count) - before ))
# The last acknowledgement commits just after the receiver answered.
for _ in $(seq 100); do
    queued=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["queued_records"])' "$dir/state/status.json" 2>/dev/null || echo "?")
    [ "$queued" = 0 ] && break
    sleep 0.1
done
kill -TERM "$(pgrep -P $agent ingestd || echo $agent)" 2>/dev/null || true
wait $agent || true
read -r rss user sys < "$dir/time.txt"
awk -v n="$lines" -v s="$start" -v e="$end" -v rss="$rss" -v u="$user" -v sy="$sys" -v got="$got" -v q="$queued" -v limit="$limit" \
    'BEGIN { printf "end to end file input -> receiver (gzip false): %d readings in %.2f s = %d readings/s (%.0f %% of the libcurl limit); agent CPU %.2f s (%.2f s per million, including idle polling until stopped); peak RSS %.1f MB; received %d, left queued %s\n", n, e - s, n / (e - s), 100 * n / (e - s) / limit, u + sy, (u + sy) * 1000000 / n, rss / 1024, got, q }'
if [ "$got" -lt "$lines" ] || [ "$queued" != 0 ]; then
    echo "file input: the receiver got $got of $lines readings and $queued are left queued: this run does not count" >&2
    exit 1
fi
