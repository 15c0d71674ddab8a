#!/usr/bin/env bash
# Idle wakeups of Swift concurrency on Linux (issue 8), two programs that do
# nothing but sleep 5 s at a time in a task (static Swift runtime, like
# ingestd), counted as bench/footprint.py counts ingestd (voluntary and
# involuntary context switches of all threads over SECONDS, default 60):
#   - bench/wakeup-floor/main.swift on the platform's executors (libdispatch):
#     its worker-pool monitor wakes a thread every second (a 1 Hz timer
#     started with the first worker, never stopped;
#     swift-corelibs-libdispatch src/event/workqueue.c);
#   - bench/wakeup-floor-agent/main.swift on ingestd's own executors
#     (Sources/IngestAgent/Runtime), which sleep until a job or timer is due.
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
swift build --quiet -c release --static-swift-stdlib --product wakeup-floor-agent --scratch-path .build-release
cp .build-release/release/wakeup-floor-agent "$dir/sleeper-agent"
machine_line

switches() {
    local total=0 t v
    for t in /proc/"$1"/task/*; do
        v=$(awk '/^(non)?voluntary_ctxt_switches/ { s += $2 } END { print s + 0 }' "$t/status" 2>/dev/null || echo 0)
        total=$((total + v))
    done
    echo "$total"
}

"$dir/sleeper" & dispatch_pid=$!
"$dir/sleeper-agent" & agent_pid=$!
trap 'kill $dispatch_pid $agent_pid 2>/dev/null' EXIT
sleep 6  # past start-up and the first sleep
dispatch_before=$(switches $dispatch_pid)
agent_before=$(switches $agent_pid)
sleep "$seconds"
dispatch_after=$(switches $dispatch_pid)
agent_after=$(switches $agent_pid)
report() {
    awk -v n="$2" -v s="$seconds" -v what="$1" 'BEGIN { printf "idle wakeups of a task sleeping 5 s at a time, %s: %.2f per second (%d context switches in %d s)\n", what, n / s, n, s }'
}
report "libdispatch (the platform's executors)" $((dispatch_after - dispatch_before))
report "ingestd's executors" $((agent_after - agent_before))
