#!/usr/bin/env bash
# The fleet benchmark (issue 23; release build): one gateway ingestd (HTTP
# input with an API key, realistic readings of ~172 B with their own _id and
# an ISO-8601 ts, the SQLite archive as its sink) and bench/fleet-load: N
# keep-alive clients posting 300-reading batches with real Idempotency-Keys
# for SECONDS, each waiting for its answer, as edge uploaders do. For N =
# 10, 100 and 1,000, then 100 and 1,000 again under a slowloris of 1,000
# connections trickling their heads, prints per run: readings/s stored
# (the answers' "accepted"), the gateway's CPU seconds per million stored,
# the answers' p50/p99 latency, the gateway's peak RSS, the load
# generator's own CPU seconds per million, and the answers by status. The
# gateway gets a fresh state directory per run.
# For a breakdown: DEDUP_WINDOW_S=0 turns the received-id check off;
# SINK=none points the gateway's upload at a closed port (nothing drains
# during the run); RUNS="10:0 100:1000" picks the runs (clients:slow);
# INGESTD=path runs another build of the gateway (A/B, run in turns);
# FLEET_IDS=random sends random `_id`s (no two in one received-id group:
# the gateway's worst case) instead of an edge box's counting ObjectIds.
#
#   bench/fleet.sh [SECONDS] [DIR]   # default 10, /tmp/edgeingest-bench-fleet
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_usage "$0" "$@"
seconds=${1:-10}
require_count SECONDS "$seconds"
dir=${2:-/tmp/edgeingest-bench-fleet}
rm -rf "$dir" && mkdir -p "$dir"
[ -n "${INGESTD:-}" ] || swift build -c release --product ingestd >/dev/null
ingestd=${INGESTD:-.build/release/ingestd}
swift build -c release --product fleet-load >/dev/null
ulimit -n 16384
key="fleet-bench-key-0123456789abcdef"
echo "$key" | "$ingestd" hash-secret --api-key | sed 's/^/fleet /' > "$dir/keys"
machine_line
echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes'), ${seconds} s per run, dedup_window_s ${DEDUP_WINDOW_S:-3600}, sink ${SINK:-archive}, ids ${FLEET_IDS:-counting}"
printf '%-8s %-6s %12s %14s %9s %9s %9s %11s  %s\n' clients slow "readings/s" "CPU-s/million" "p50 ms" "p99 ms" "RSS MB" "load CPU-s" statuses

run() {
    local clients=$1 slow=$2 state="$dir/gateway-$1-$2"
    { QUEUE_MAX_BYTES=8589934592 realistic_config; cat <<TOML
[[inputs]]
kind = "http"
listen = "127.0.0.1:0"
api_keys_file = "$dir/keys"
shared_id_space = true
max_connections = 4096
max_connections_per_address = 4096
dedup_window_s = ${DEDUP_WINDOW_S:-3600}
TOML
    if [ "${SINK:-archive}" = none ]; then
        printf '[upload]\nurl = "http://127.0.0.1:9/ingest/v1/batches"\n'
    else
        printf '[upload]\nsink = "sqlite"\npath = "%s/archive.sqlite"\n' "$state"
    fi
    } > "$dir/gateway.toml"
    "$ingestd" run --config "$dir/gateway.toml" --state-directory "$state" 2> "$dir/gateway-$clients-$slow.log" &
    local pid=$! address=""
    for _ in $(seq 200); do
        address=$(python3 -c 'import json, sys
try: print(json.load(open(sys.argv[1]))["inputs"][0]["listen"])
except Exception: pass' "$state/status.json" 2>/dev/null || true)
        [ -n "$address" ] && break
        sleep 0.05
    done
    [ -n "$address" ] || { echo "fleet: the gateway did not start: $(tail -3 "$dir/gateway-$clients-$slow.log")" >&2; kill -9 $pid; exit 1; }
    local before after out
    before=$(awk '{ print $14 + $15 }' /proc/$pid/stat)
    out=$(.build/release/fleet-load "${address##*:}" "$key" "$clients" "$seconds" 300 "$slow")
    after=$(awk '{ print $14 + $15 }' /proc/$pid/stat)
    local rss
    rss=$(awk '/^VmHWM/ { printf "%.1f", $2 / 1024 }' /proc/$pid/status)
    kill -TERM $pid; wait $pid || true
    python3 - "$out" "$before" "$after" "$(getconf CLK_TCK)" "$rss" <<'PY'
import json, sys
r = json.loads(sys.argv[1]); ticks = (float(sys.argv[3]) - float(sys.argv[2])) / float(sys.argv[4])
per_million = ticks / (r["records"] / 1e6) if r["records"] else float("nan")
load = r["cpu_s"] / (r["records"] / 1e6) if r["records"] else float("nan")
print(f'{r["clients"]:<8} {r["slow"]:<6} {r["records_per_s"]:>12,} {per_million:>14.2f} {r["p50_ms"]:>9.1f} {r["p99_ms"]:>9.1f} {sys.argv[5]:>9} {load:>11.2f}  {r["statuses"]}')
PY
}

for spec in ${RUNS:-10:0 100:0 1000:0 100:1000 1000:1000}; do
    run "${spec%%:*}" "${spec##*:}"
done
