#!/usr/bin/env bash
# The idle-wakeup floor of the Swift runtime on Linux (issue 8): builds
# bench/wakeup-floor/main.swift (a task that sleeps 5 s at a time, nothing
# else; static Swift runtime like ingestd) and counts the voluntary and
# involuntary context switches of all its threads over SECONDS (default 60),
# as bench/footprint.py counts ingestd's. libdispatch's internal workqueue
# monitor (a 1 Hz timer on its manager thread, started with the first
# worker thread; swift-corelibs-libdispatch src/event/workqueue.c) sets it.
#
#   bench/wakeup-floor.sh [SECONDS] [DIR]   # default 60, /tmp/edgeingest-bench-wakeup-floor
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_usage "$0" "$@"
seconds=${1:-60}
require_count SECONDS "$seconds"
dir=${2:-/tmp/edgeingest-bench-wakeup-floor}
mkdir -p "$dir"
swiftc -O -static-stdlib bench/wakeup-floor/main.swift -o "$dir/sleeper"
machine_line
"$dir/sleeper" &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
sleep 6  # past start-up and the first sleep
switches() {
    local total=0 t v
    for t in /proc/"$pid"/task/*; do
        v=$(awk '/^(non)?voluntary_ctxt_switches/ { s += $2 } END { print s + 0 }' "$t/status" 2>/dev/null || echo 0)
        total=$((total + v))
    done
    echo "$total"
}
before=$(switches)
sleep "$seconds"
after=$(switches)
awk -v n=$((after - before)) -v s="$seconds" 'BEGIN { printf "idle wakeups of a sleeping Swift task: %.2f per second (%d context switches in %d s)\n", n / s, n, s }'
