#!/usr/bin/env bash
# The relay benchmark (release build): CLIENTS edge agents (default 4), each
# piping its share of LINES NDJSON readings through its own queue, upload
# at once to one gateway ingestd (HTTP input, docs/PROTOCOL.md), which
# validates, deduplicates and commits each batch to its own queue before
# answering and forwards everything to the loopback receiver
# (Tests/Support/ingest-test-server.py --fast).
# Prints for the gateway: readings/s accepted (until the last client has
# been answered for its last batch) and forwarded (until the receiver holds
# them all), its CPU seconds and peak RSS. A run counts only if the receiver
# got exactly LINES readings, the gateway accepted and uploaded exactly LINES,
# dropped none as re-sent and kept none queued; else exit 1.
#
#   bench/relay.sh [LINES] [DIR] [CLIENTS]   # default 1,000,000, /tmp/edgeingest-bench-relay, 4
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_usage "$0" "$@"
lines=${1:-1000000}
require_count LINES "$lines"
dir=${2:-/tmp/edgeingest-bench-relay}
clients=${3:-4}
require_count CLIENTS "$clients"
[ $((lines % clients)) = 0 ] || { echo "LINES must be a multiple of CLIENTS" >&2; exit 2; }
rm -rf "$dir" && mkdir -p "$dir"
swift build -c release --product ingestd >/dev/null
make_input "$dir/readings.ndjson" "$lines"
split -n "l/$clients" -d "$dir/readings.ndjson" "$dir/part-"
start_receiver "$dir"
{ base_config; printf '[[inputs]]\nkind = "http"\nlisten = "127.0.0.1:0"\n[upload]\nurl = "http://127.0.0.1:%s/ingest/v1/batches"\nlinger_ms = 50\nshutdown_timeout_ms = 600000\n' "$receiver_port"; } > "$dir/gateway.toml"

machine_line
pids=()
# Everything this script starts ends with it, whatever the way out.
trap 'kill -9 $receiver_pid ${gateway_pid:-} ${pids[*]:-} 2>/dev/null || true' EXIT
/usr/bin/time -f "%M %U %S" -o "$dir/time.txt" .build/release/ingestd run --config "$dir/gateway.toml" --state-directory "$dir/gateway" 2> "$dir/gateway.log" &
time_pid=$!
# The gateway's own address, from its status (port 0: no race for a port).
address=""
for _ in $(seq 200); do
    gateway_pid=$(pgrep -P "$time_pid" ingestd || true)
    address=$(python3 -c 'import json, sys
try: print(json.load(open(sys.argv[1]))["inputs"][0]["listen"])
except Exception: pass' "$dir/gateway/status.json" 2>/dev/null || true)
    [ -n "$address" ] && [ -n "$gateway_pid" ] && break
    sleep 0.05
done
[ -n "$address" ] && [ -n "$gateway_pid" ] || { echo "relay: the gateway did not start listening: $(tail -5 "$dir/gateway.log")" >&2; exit 1; }
{ base_config; printf '[upload]\nurl = "http://%s/ingest/v1/batches"\nlinger_ms = 50\nshutdown_timeout_ms = 600000\n' "$address"; } > "$dir/edge.toml"

start=$(date +%s.%N)
for part in "$dir"/part-*; do
    .build/release/ingestd run --config "$dir/edge.toml" --state-directory "$dir/edge-$(basename "$part")" < "$part" 2> "$part.log" &
    pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || { echo "an edge agent failed: $(tail -3 "$dir"/part-*.log)" >&2; exit 1; }; done
pids=()
accepted_end=$(date +%s.%N)
deadline=$((SECONDS + 600))
while [ "$(received)" -lt "$lines" ] && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
forwarded_end=$(date +%s.%N)
kill -TERM "$gateway_pid"
wait "$time_pid" || { echo "the gateway did not exit cleanly: $(tail -5 "$dir/gateway.log")" >&2; exit 1; }
read -r rss user sys < "$dir/time.txt"
got=$(received)
accepted=$(status_field "$dir/gateway" accepted_total)
uploaded=$(status_field "$dir/gateway" uploaded_total)
queued=$(status_field "$dir/gateway" queued_records)
# Absent from the status until the gateway dropped a re-sent record.
resent=$(status_field "$dir/gateway" received_duplicates_total 2>/dev/null || echo 0)
awk -v n="$lines" -v c="$clients" -v s="$start" -v a="$accepted_end" -v f="$forwarded_end" -v rss="$rss" -v u="$user" -v sy="$sys" \
    'BEGIN { printf "relay, %d clients: %d readings accepted in %.2f s = %d readings/s, all forwarded after %.2f s = %d readings/s; gateway CPU %.2f s (%.2f s per million), peak RSS %.1f MB\n", c, n, a - s, n / (a - s), f - s, n / (f - s), u + sy, (u + sy) * 1000000 / n, rss / 1024 }'
if [ "$got" != "$lines" ] || [ "$accepted" != "$lines" ] || [ "$uploaded" != "$lines" ] || [ "$queued" != 0 ] || [ "$resent" != 0 ]; then
    echo "relay: the receiver got $got of $lines, the gateway accepted $accepted, uploaded $uploaded, left $queued queued (dropped $resent re-sent): this run does not count" >&2
    exit 1
fi
