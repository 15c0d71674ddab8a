#!/usr/bin/env bash
# Footprint benchmark (issue 8), one command:
#   bench/footprint.sh [QUEUED] [DIR]       # default 1,000,000 queued, /tmp/edgeingest-bench-footprint
# Builds the shipped binary (scripts/build-release.sh: static Swift runtime,
# stripped), reports its size, then per case the time from start to READY=1,
# idle RSS (and its anonymous / file-backed / proportional parts) and idle
# wakeups per second over IDLE_SECONDS (default 60) — see bench/footprint.py.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_usage "$0" "$@"
queued=${1:-1000000}
require_count QUEUED "$queued"
dir=${2:-/tmp/edgeingest-bench-footprint}
# Start clean, but only ever delete a directory this script made.
if [ -e "$dir" ] && [ ! -e "$dir/.edgeingest-bench" ]; then
    echo "footprint.sh: '$dir' exists and was not made by this script; name another directory" >&2
    exit 1
fi
rm -rf "$dir"
mkdir -p "$dir"
touch "$dir/.edgeingest-bench"
scripts/build-release.sh dist >/dev/null
machine_line
echo "stripped binary: $(stat -c %s dist/ingestd) bytes ($(numfmt --to=iec --suffix=B "$(stat -c %s dist/ingestd)"))"
start_receiver "$dir"
base_config > "$dir/base.toml"
make_input "$dir/readings.ndjson" "$queued"
python3 bench/footprint.py "$PWD/dist/ingestd" "http://127.0.0.1:$receiver_port/ingest/v1/batches" "$dir" "$dir/base.toml" "$dir/readings.ndjson"
