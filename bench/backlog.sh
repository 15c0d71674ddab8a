#!/usr/bin/env bash
# A long offline backlog (issue 7): READINGS queued (default 10,000,000), then
#   - the time from start to READY=1 with all of them queued (bench/footprint.sh)
#   - the drain rate of the whole backlog to the loopback receiver, with the
#     libcurl limit of the same run (bench/upload.sh, drain case only)
#   - bytes on disk per queued reading
#
#   bench/backlog.sh [READINGS]       # needs ~5 GB in /tmp and a few minutes
# (per 10 M: ~1 GB of input and ~1.5 GB of queue, for each of the two steps;
# the start-up step's directory is removed before the drain step)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_usage "$0" "$@"
readings=${1:-10000000}
require_count READINGS "$readings"
# ~150 bytes per queued reading: leave room above the backlog.
export QUEUE_MAX_BYTES=$(( readings * 200 + 268435456 ))
echo "== start-up with $readings queued"
IDLE_SECONDS=5 bench/footprint.sh "$readings" /tmp/edgeingest-bench-backlog-ready
rm -rf /tmp/edgeingest-bench-backlog-ready
echo "== drain of $readings queued"
CASES=drain bench/upload.sh "$readings" /tmp/edgeingest-bench-backlog-drain
