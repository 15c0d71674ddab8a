#!/usr/bin/env bash
# The idle-RSS floor set by Debian's shared libraries (issue 8): builds
# bench/rss-floor/floor.c (libcurl + libsqlite3 + libsystemd, nothing else)
# and prints its VmRSS after loading, after curl_global_init, after an SQLite
# WAL insert and after one HTTP request to a loopback server, then its idle
# RSS, PSS, private and anonymous memory. Any agent that links Debian's
# libcurl4 starts above these numbers. Then the same steps from a Swift
# program built as ingestd is (bench/rss-floor/swift-floor.swift, -O, the
# standard library linked statically; issue 43): the floor of a Swift agent.
#
#   bench/rss-floor.sh [DIR]        # default /tmp/edgeingest-bench-rss-floor
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_usage "$0" "$@"
dir=${1:-/tmp/edgeingest-bench-rss-floor}
mkdir -p "$dir"
cc -O2 -o "$dir/floor" bench/rss-floor/floor.c -lcurl -lsqlite3 -lsystemd
machine_line
python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$dir" > "$dir/server.log" 2>&1 &
server=$!
trap 'kill -9 $server 2>/dev/null' EXIT
port=""
for _ in $(seq 100); do
    port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$dir/server.log" | head -1)
    [ -n "$port" ] && break
    sleep 0.05
done
[ -n "$port" ] || { echo "the loopback HTTP server did not start" >&2; exit 1; }
rm -f "$dir/floor.sqlite"*
echo "shared libraries mapped: $(ldd "$dir/floor" | wc -l)"
"$dir/floor" "http://127.0.0.1:$port/" "$dir/floor.sqlite"
cc -O2 -DFLOOR_NO_MAIN -c -o "$dir/floor-steps.o" bench/rss-floor/floor.c
swiftc -O -static-stdlib -o "$dir/swift-floor" bench/rss-floor/swift-floor.swift "$dir/floor-steps.o" \
    -lcurl -lsqlite3 -lsystemd
rm -f "$dir/floor.sqlite"*
echo "Swift, static standard library:"
"$dir/swift-floor" "http://127.0.0.1:$port/" "$dir/floor.sqlite"
