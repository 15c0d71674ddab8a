#!/usr/bin/env bash
# The JetStream sink against the NATS C client's own rate (issue 42): Debian's
# nats-server with JetStream, started here as one node and as a 3-node cluster
# (a stream with 3 replicas), COUNT varied readings (bench/lib.sh
# make_varied_input: random values, each its own _id). Per run, interleaved,
# on each stream (deleted and created again before every measurement, so no
# message id is a duplicate of an earlier one):
#   c-client  Tests/Support/jetstream/js-tool.c (libnats 3.4, -O2): every
#             reading one message with its Nats-Msg-Id, js_PublishAsync with
#             65,536 pending at most, until every PubAck came;
#   ingestd   the agent draining a queue of COUNT readings into the stream
#             (the queue is filled first, without upload; the drain deletes
#             each record after its PubAck, as in the field);
#   c-batch   the C client with 1000 readings per message (one id per
#             batch): the most a batch message could gain.
# CPU seconds (the publisher's own, user + sys) per million readings and
# readings/s; the servers' CPU is not counted for either.
#
#   bench/jetstream.sh [RUNS] [COUNT] [DIR]   # defaults: 5 runs, 200000, /var/tmp/edgeingest-jetstream
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_usage "$0" "$@"
runs=${1:-5}
count=${2:-200000}
require_count RUNS "$runs"
require_count COUNT "$count"
dir=${3:-/var/tmp/edgeingest-jetstream}
mkdir -p "$dir"
[ -x /usr/sbin/nats-server ] || { echo "needs nats-server (apt-get install nats-server)" >&2; exit 69; }
[ -e /usr/include/nats/nats.h ] || { echo "needs libnats-dev (apt-get install libnats-dev)" >&2; exit 69; }
swift build -c release --product ingestd >/dev/null
gcc -O2 -o "$dir/js-tool" Tests/Support/jetstream/js-tool.c -lnats
make_varied_input "$dir/in.ndjson" "$count"

# free_ports N: N distinct free loopback ports (bound at once, so none repeats).
free_ports() {
    python3 -c 'import socket, sys
s = [socket.socket() for _ in range(int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))' "$1"
}
pids=()
trap 'kill -9 "${pids[@]}" 2>/dev/null || true' EXIT

# start_nodes NAME N: N nats-server nodes (a cluster when N > 1); sets urls.
start_nodes() {
    local name=$1 n=$2 client=() route=() ports i
    read -r -a ports <<< "$(free_ports $((2 * n)))"
    client=("${ports[@]:0:$n}")
    route=("${ports[@]:$n:$n}")
    urls=""
    for i in $(seq 0 $((n - 1))); do
        rm -rf "$dir/$name-store-$i"
        {
            echo "server_name: $name-$i"
            echo "listen: 127.0.0.1:${client[$i]}"
            echo "jetstream { store_dir: \"$dir/$name-store-$i\" }"
            if [ "$n" -gt 1 ]; then
                printf 'cluster { name: %s, listen: 127.0.0.1:%s, routes: [' "$name" "${route[$i]}"
                printf 'nats-route://127.0.0.1:%s, ' "${route[@]}" | sed 's/, $//'
                echo '] }'
            fi
        } > "$dir/$name-$i.conf"
        /usr/sbin/nats-server -c "$dir/$name-$i.conf" > "$dir/$name-$i.log" 2>&1 &
        pids+=($!)
        urls+="${urls:+,}nats://127.0.0.1:${client[$i]}"
    done
    for _ in $(seq 200); do "$dir/js-tool" info "$urls" NONE 2>&1 | grep -q "stream not found\|10059" && return; sleep 0.1; done
}

# fresh_stream URLS REPLICAS: the stream BENCH on subjects bench.>, empty.
fresh_stream() {
    "$dir/js-tool" delete "$1" BENCH >/dev/null 2>&1 || true
    for _ in $(seq 100); do "$dir/js-tool" create "$1" BENCH 'bench.>' "$2" 600 >/dev/null 2>&1 && return; sleep 0.2; done
    echo "the stream could not be created on $1" >&2
    exit 1
}

start_nodes one 1
one_urls=$urls
start_nodes three 3
three_urls=$urls

agent_config() {  # URLS
    realistic_config
    printf '[upload]\nsink = "jetstream"\nurls = [%s]\nstream = "BENCH"\nsubject = "bench.{type}"\nshutdown_timeout_ms = 600000\n' \
        "$(echo "$1" | sed 's/[^,]*/"&"/g')"
}
agent_config "$one_urls" > "$dir/one.toml"
agent_config "$three_urls" > "$dir/three.toml"
realistic_config > "$dir/fill.toml"

report() {  # RUN STREAM WHAT PROC-IO-LINE
    awk -v l="$4" -v n="$count" -v m="$3" -v r="$1" -v s="$2" 'BEGIN {
        split(l, f, /[ =]/); for (i = 1; i in f; i += 2) v[f[i]] = f[i + 1]
        printf "run %d %-5s %-8s %d readings: %.0f/s, %.2f CPU-s per million; %s\n", r, s, m ":", n, n / v["wall_s"], v["cpu_s"] * 1e6 / n, l }'
}

machine_line
echo "ingestd $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)'); $count readings; $(/usr/sbin/nats-server --version); libnats $(dpkg-query -W -f '${Version}' libnats-dev 2>/dev/null); load $(cut -d' ' -f1 /proc/loadavg)"
for run in $(seq "$runs"); do
    for stream in one three; do
        urls_var=${stream}_urls
        replicas=$([ "$stream" = one ] && echo 1 || echo 3)
        fresh_stream "${!urls_var}" "$replicas"
        line=$(bench/proc-io.py /dev/null "$dir/js-tool" publish "${!urls_var}" bench.WeatherSensor "$dir/in.ndjson" 1)
        report "$run" "$stream" c-client "$line"
        fresh_stream "${!urls_var}" "$replicas"
        rm -rf "$dir/state"
        .build/release/ingestd run --config "$dir/fill.toml" --state-directory "$dir/state" < "$dir/in.ndjson" > /dev/null 2>&1
        line=$(bench/proc-io.py /dev/null .build/release/ingestd run --config "$dir/$stream.toml" --state-directory "$dir/state" 2>> "$dir/agent.log")
        report "$run" "$stream" ingestd "$line"
        stored=$("$dir/js-tool" info "${!urls_var}" BENCH | awk '/^messages/ { print $2 }')
        [ "$stored" = "$count" ] || echo "  the stream holds $stored messages, not $count" >&2
        fresh_stream "${!urls_var}" "$replicas"
        line=$(bench/proc-io.py /dev/null "$dir/js-tool" publish "${!urls_var}" bench.WeatherSensor "$dir/in.ndjson" 1000)
        report "$run" "$stream" c-batch "$line"
    done
done
