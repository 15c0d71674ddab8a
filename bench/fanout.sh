#!/usr/bin/env bash
# Issue 41: what a second sink costs. The same 1,000,000 readings with random
# values (bench/lib.sh make_varied_input) from stdin through the durable
# queue to loopback receivers (Tests/Support/ingest-test-server.py --fast)
# and deleted, state on the real disk at the default durability, so the
# bytes written to the device count. Three runs per round, interleaved:
#
#   B   REV (the build before several sinks), one sink
#   A1  the working tree, one sink ([upload])
#   A2  the working tree, two sinks ([upload] and [sinks.second], each its
#       own receiver, cursor, uploader and acknowledgements)
#
# Prints each run (CPU s, wall s, peak RSS, device bytes), then per round
# the ratios A2/A1 (what the second sink costs: targets <= 1.30 CPU and
# <= 1.20 bytes) and A1/B (one sink against the build before), and their
# medians.
#
#   bench/fanout.sh REV [ROUNDS]    # e.g. bench/fanout.sh 96025c5 5; ROUNDS default 5
#
# DOWN=1: A2's second sink is down (a loopback port nothing listens on;
# its uploader retries with backoff and gives up 1 s after stdin ends), so
# A2/A1 is what a dead sink costs the one that works (device bytes then
# differ by design: the dead sink's readings stay queued).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_usage "$0" "$@"
rev=${1:?"usage: bench/fanout.sh REV [ROUNDS]"}
rounds=${2:-5}
require_count ROUNDS "$rounds"
dir=/var/tmp/edgeingest-fanout
mkdir -p "$dir"
old=/tmp/edgeingest-ab-$(git rev-parse --short "$rev")
[ -d "$old" ] || git worktree add -q --detach "$old" "$rev"
echo "building A (working tree) and B ($rev)" >&2
swift build -c release --product ingestd >/dev/null
(cd "$old" && swift build -c release --product ingestd --scratch-path "$old/.build-ab" >/dev/null)
cp .build/release/ingestd "$dir/A"
cp "$old/.build-ab/release/ingestd" "$dir/B"
make_varied_input "$dir/in.ndjson" 1000000
start_receiver "$dir"
first=$receiver_port
rm -f "$dir/port2"
python3 Tests/Support/ingest-test-server.py --fast --port-file "$dir/port2" >/dev/null 2>&1 &
second_pid=$!
trap 'kill -9 $receiver_pid $second_pid 2>/dev/null' EXIT
for _ in $(seq 100); do [ -s "$dir/port2" ] && break; sleep 0.05; done
second=$(cut -d' ' -f1 "$dir/port2")
upload() { printf '\n[%s]\nurl = "http://127.0.0.1:%s/ingest/v1/batches"\nshutdown_timeout_ms = 600000\nlinger_ms = 50\n' "$1" "$2"; }
{ realistic_config; upload upload "$first"; } > "$dir/one.toml"
if [ "${DOWN:-0}" = 1 ]; then
    second=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    { realistic_config; upload upload "$first"; upload sinks.second "$second"; echo 'shutdown_timeout_ms = 1000'; } \
        | awk '/^\[sinks.second\]/ { s = 1 } s && /^shutdown_timeout_ms = 600000/ { next } { print }' > "$dir/two.toml"
else
    { realistic_config; upload upload "$first"; upload sinks.second "$second"; } > "$dir/two.toml"
fi
machine_line
echo "A: working tree at $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)'); B: $rev; $rounds rounds; 1,000,000 varied readings ($(stat -c %s "$dir/in.ndjson") bytes); state on the real disk$([ "${DOWN:-0}" = 1 ] && echo '; the second sink down')"

# run NAME BINARY CONFIG: one run; prints its line, appends "cpu bytes" to $dir/NAME.txt.
run() {
    rm -rf "$dir/state"
    sync
    local line
    line=$(bench/proc-io.py "$dir/in.ndjson" "$dir/$2" run --config "$dir/$3" --state-directory "$dir/state")
    echo "  $1: $line"
    # With DOWN=1 the two-sink run ends with the dead sink's readings queued (75).
    local ok=0
    if [ "${DOWN:-0}" = 1 ] && [ "$3" = two.toml ]; then ok=75; fi
    grep -q "exit=$ok" <<<"$line" || { echo "$1 failed" >&2; exit 1; }
    sed -n 's/.*cpu_s=\([0-9.]*\).*write_bytes=\([0-9]*\).*/\1 \2/p' <<<"$line" >> "$dir/$1.txt"
}

rm -f "$dir"/B.txt "$dir"/A1.txt "$dir"/A2.txt
run warm-up A two.toml >/dev/null
for round in $(seq "$rounds"); do
    echo "round $round"
    run B B one.toml
    run A1 A one.toml
    run A2 A two.toml
done
paste "$dir/B.txt" "$dir/A1.txt" "$dir/A2.txt" | awk '
    function median(v, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
        return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
    { c21[NR] = $5 / $3; b21[NR] = $6 / $4; c1b[NR] = $3 / $1; b1b[NR] = $4 / $2
      printf "round %d: A2/A1 CPU %.3f, bytes %.3f; A1/B CPU %.3f, bytes %.3f; CPU-s per million B %.2f, A1 %.2f, A2 %.2f; device bytes per reading B %.0f, A1 %.0f, A2 %.0f\n",
          NR, c21[NR], b21[NR], c1b[NR], b1b[NR], $1, $3, $5, $2 / 1e6, $4 / 1e6, $6 / 1e6 }
    END { printf "medians: A2/A1 CPU %.3f, bytes %.3f; A1/B CPU %.3f, bytes %.3f\n", median(c21, NR), median(b21, NR), median(c1b, NR), median(b1b, NR) }'
