#!/usr/bin/env bash
# The MQTT sink against libmosquitto's own QoS 1 rate (issue 25): a local
# mosquitto (Debian's, started here with its defaults: 20 messages in flight
# per client), COUNT realistic readings (bench/lib.sh make_realistic_input).
# Per run, interleaved:
#   raw     bench/mqtt-raw-publish: every reading as one QoS 1 message, all
#           handed to libmosquitto at once, until every PUBACK came;
#   record  ingestd draining a queue of COUNT readings to the broker, one
#           message per record (upload.message = "record");
#   batch   the same, one NDJSON message per batch of 1000.
# The agent's figures are the drain only (the queue is filled first, without
# upload); CPU seconds are per million readings, the rate is readings/s.
#
#   bench/mqtt.sh [RUNS] [COUNT] [DIR]   # defaults: 3 runs, 200000, /var/tmp/edgeingest-mqtt
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_usage "$0" "$@"
runs=${1:-3}
count=${2:-200000}
require_count RUNS "$runs"
require_count COUNT "$count"
dir=${3:-/var/tmp/edgeingest-mqtt}
mkdir -p "$dir"
command -v mosquitto >/dev/null || [ -x /usr/sbin/mosquitto ] || { echo "needs mosquitto (apt-get install mosquitto)" >&2; exit 69; }
swift build -c release --product ingestd >/dev/null
swift build -c release --product mqtt-raw-publish >/dev/null
make_realistic_input "$dir/in.ndjson" "$count"

start_mosquitto "$dir"
trap 'kill $broker 2>/dev/null || true' EXIT

agent_config() {  # MESSAGE TOPIC
    realistic_config
    printf '[upload]\nsink = "mqtt"\nurl = "mqtt://127.0.0.1:%s"\ntopic = "%s"\nmessage = "%s"\nshutdown_timeout_ms = 600000\nlinger_ms = 50\n' "$port" "$2" "$1"
}
agent_config record "bench/{type}/{deviceId}" > "$dir/record.toml"
agent_config batch "bench/{type}" > "$dir/batch.toml"
realistic_config > "$dir/fill.toml"

report() {  # RUN WHAT PROC-IO-LINE
    awk -v l="$3" -v n="$count" -v m="$2" -v r="$1" 'BEGIN {
        split(l, f, /[ =]/); for (i = 1; i in f; i += 2) v[f[i]] = f[i + 1]
        printf "run %d %-7s %d readings: %.0f/s, %.2f CPU-s per million; %s\n", r, m ":", n, n / v["wall_s"], v["cpu_s"] * 1e6 / n, l }'
}

machine_line
echo "ingestd $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)'); $count readings; mosquitto $(/usr/sbin/mosquitto -h 2>/dev/null | sed -n 's/^mosquitto version \([0-9.]*\).*/\1/p' | head -1)"
for run in $(seq "$runs"); do
    line=$(bench/proc-io.py /dev/null .build/release/mqtt-raw-publish "$port" "$dir/in.ndjson" 1)
    report "$run" raw "$line"
    for message in record batch; do
        rm -rf "$dir/state"
        .build/release/ingestd run --config "$dir/fill.toml" --state-directory "$dir/state" < "$dir/in.ndjson" > /dev/null 2>&1
        line=$(bench/proc-io.py /dev/null .build/release/ingestd run --config "$dir/$message.toml" --state-directory "$dir/state")
        report "$run" "$message" "$line"
    done
done
