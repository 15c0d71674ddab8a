#!/usr/bin/env bash
# Every benchmark, one command (release builds; ~15 minutes on 2 cores and
# ~5 GB free in /tmp for the backlog). Each script prints its own machine
# line and results; docs/BENCHMARKS.md says which table each feeds. Run on an
# otherwise idle machine. The output also goes to bench/results/all.txt; the
# first benchmark that fails stops the run (exit 1).
#
#   bench/all.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_usage "$0" "$@"
mkdir -p bench/results
exec > >(tee bench/results/all.txt) 2>&1
for step in queue.sh stdin.sh upload.sh footprint.sh rss-floor.sh wakeup-floor.sh backlog.sh; do
    echo "=== bench/$step"
    "bench/$step"
done
