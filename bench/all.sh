#!/usr/bin/env bash
# Every benchmark, one command (release builds; ~15 minutes on 2 cores).
# Each script prints its own machine line and results; docs/BENCHMARKS.md
# says which table each feeds. Run on an otherwise idle machine.
#
#   bench/all.sh 2>&1 | tee bench/results/all.txt
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/results
for step in queue.sh stdin.sh upload.sh footprint.sh backlog.sh; do
    echo "=== bench/$step"
    "bench/$step"
done
