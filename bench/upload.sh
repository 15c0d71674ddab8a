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
# A run counts only if the receiver got exactly LINES readings (its --fast
# mode counts lines, re-sends included), the agent's own counters say all
# were uploaded, none dead-lettered, none left queued; else exit 1.
#
#   bench/upload.sh [LINES] [DIR]     # default 1,000,000, /tmp/edgeingest-bench-upload
#   CASES="drain" bench/upload.sh …   # only some cases: drain drain-gzip e2e e2e-gzip file
#   RUNS=7 bench/upload.sh …          # each end-to-end case 7 times (default 1), then
#                                     # its median CPU per million and RSS range: the
#                                     # run-to-run spread is real (docs/BENCHMARKS.md)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_usage "$0" "$@"
lines=${1:-1000000}
require_count LINES "$lines"
runs=${RUNS:-1}
require_count RUNS "$runs"
dir=${2:-/tmp/edgeingest-bench-upload}
mkdir -p "$dir"
swift build -c release --product ingestd >/dev/null
input="$dir/readings.ndjson"
make_input "$input" "$lines"
start_receiver "$dir"
url="http://127.0.0.1:$receiver_port/ingest/v1/batches"

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

# report LABEL START END GOT [NOTE]: prints one case (rss, user, sys from
# time.txt) and fails the script unless it delivered exactly $lines readings.
report() {
    local queued uploaded dead
    read -r rss user sys < "$dir/time.txt"
    queued=$(status_field "$dir/state" queued_records)
    uploaded=$(status_field "$dir/state" uploaded_total)
    dead=$(status_field "$dir/state" dead_letter_records)
    awk -v l="$1" -v n="$lines" -v s="$2" -v e="$3" -v rss="$rss" -v u="$user" -v sy="$sys" -v got="$4" -v q="$queued" \
        -v limit="$limit" -v note="${5:-}" \
        'BEGIN { printf "%s: %d readings in %.2f s = %d readings/s (%.0f %% of the libcurl limit); agent CPU %.2f s (%.2f s per million%s); peak RSS %.1f MB; received %d, left queued %s\n", l, n, e - s, n / (e - s), 100 * n / (e - s) / limit, u + sy, (u + sy) * 1000000 / n, note, rss / 1024, got, q }'
    awk -v n="$lines" -v rss="$rss" -v u="$user" -v sy="$sys" 'BEGIN { printf "%.4f %.1f\n", (u + sy) * 1000000 / n, rss / 1024 }' >> "$dir/runs.txt"
    # A run that lost, re-sent, dead-lettered or kept readings measured something else.
    if [ "$4" != "$lines" ] || [ "$queued" != 0 ] || [ "$uploaded" != "$lines" ] || [ "$dead" != 0 ]; then
        echo "$1: the receiver got $4 of $lines readings, the agent uploaded $uploaded, dead-lettered $dead and left $queued queued: this run does not count" >&2
        exit 1
    fi
}

measure() {  # $1 = label, $2 = config, $3 = stdin file
    local before start end
    before=$(received)
    start=$(date +%s.%N)
    /usr/bin/time -f "%M %U %S" -o "$dir/time.txt" .build/release/ingestd run --config "$2" --state-directory "$dir/state" < "$3"
    end=$(date +%s.%N)
    report "$1" "$start" "$end" $(( $(received) - before ))
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
    measure "drain (gzip $gz)" "$dir/drain.toml" /dev/null
done
for gz in false true; do
    wanted "e2e$([ "$gz" = true ] && echo -gzip)" || continue
    config "$gz" yes > "$dir/e2e.toml"
    : > "$dir/runs.txt"
    for run in $(seq "$runs"); do
        rm -rf "$dir/state"
        measure "end to end stdin -> receiver (gzip $gz)$([ "$runs" -gt 1 ] && echo ", run $run of $runs")" "$dir/e2e.toml" "$input"
    done
    if [ "$runs" -gt 1 ]; then
        sort -n "$dir/runs.txt" | awk -v gz="$gz" '{ cpu[NR] = $1; rss[NR] = $2 } END {
            lo = rss[1]; hi = rss[1]; for (i = 2; i <= NR; i++) { if (rss[i] < lo) lo = rss[i]; if (rss[i] > hi) hi = rss[i] }
            m = NR % 2 ? cpu[(NR + 1) / 2] : (cpu[NR / 2] + cpu[NR / 2 + 1]) / 2
            printf "end to end (gzip %s), %d runs: CPU per million median %.2f s (%.2f-%.2f); peak RSS %.1f-%.1f MB\n", gz, NR, m, cpu[1], cpu[NR], lo, hi }'
    fi
done

# 4. A followed file: the agent does not exit by itself, so wait for the
# receiver and an empty queue, then stop it.
wanted file || exit 0
rm -rf "$dir/state" "$dir/in"
mkdir -p "$dir/in"
{ config false yes; printf '[[inputs]]\nkind = "file"\npaths = ["%s/in/*.ndjson"]\n' "$dir"; } > "$dir/file.toml"
before=$(received)
start=$(date +%s.%N)
/usr/bin/time -f "%M %U %S" -o "$dir/time.txt" .build/release/ingestd run --config "$dir/file.toml" --state-directory "$dir/state" < /dev/null &
agent=$!
cp "$input" "$dir/in/readings.ndjson"
deadline=$(( $(date +%s) + 600 ))
while [ $(( $(received) - before )) -lt "$lines" ]; do
    sleep 0.05
    kill -0 $agent 2>/dev/null || { echo "file input: the agent exited early" >&2; exit 1; }
    [ "$(date +%s)" -lt "$deadline" ] || { echo "file input: not everything arrived within 600 s" >&2; exit 1; }
done
end=$(date +%s.%N)
got=$(( $(received) - before ))
# The last acknowledgement commits just after the receiver answered.
for _ in $(seq 100); do
    queued=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["queued_records"])' "$dir/state/status.json" 2>/dev/null || echo "?")
    [ "$queued" = 0 ] && break
    sleep 0.1
done
kill -TERM "$(pgrep -P $agent ingestd || echo $agent)" 2>/dev/null || true
wait $agent || { echo "file input: the agent did not stop cleanly on SIGTERM (status $?)" >&2; exit 1; }
report "end to end file input -> receiver (gzip false)" "$start" "$end" "$got" ", including idle polling until stopped"
