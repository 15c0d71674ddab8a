#!/usr/bin/env bash
# The MQTT input (issue 25): COUNT realistic readings (bench/lib.sh
# make_realistic_input), each one QoS 1 message published by mosquitto_pub
# -l to a local mosquitto (Debian's; max_queued_messages 10000000 so the broker
# drops nothing), subscribed to by ingestd and committed to its durable
# queue (no upload). Per run, interleaved:
#   per-message  receive_maximum = 1: one message in flight, so one commit
#                (one fsync) per message — what a client library that
#                acknowledges when its message callback returns (paho
#                MQTTAsync) makes of "acknowledge after commit";
#   batched      the defaults (receive_maximum = 1000): a commit per half
#                window or commit interval, then every PUBACK of it;
#   no-window    batched with dedup_window_s = 0: what the persisted _id
#                window (stored once after a redelivery) costs.
# Figures: readings/s from the first publish until the agent's queue holds
# them all (read from status.json, written every 20 ms here), and the
# agent's CPU seconds per million readings over the same span (/proc/PID/stat). The publisher's own limit is printed too: the same
# messages to a broker whose subscriber is mosquitto_sub. (30,000 by
# default: with 100,000, mosquitto 2.0.11 here disconnected mosquitto_pub
# "due to out of memory" after ~34,500 messages queued for mosquitto_sub,
# whatever max_queued_messages said; the agent's runs were not affected.)
#
#   bench/mqtt-input.sh [RUNS] [COUNT] [DIR]   # defaults: 3 runs, 30000, /var/tmp/edgeingest-mqtt-input
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_usage "$0" "$@"
runs=${1:-3}
count=${2:-30000}
require_count RUNS "$runs"
require_count COUNT "$count"
dir=${3:-/var/tmp/edgeingest-mqtt-input}
mkdir -p "$dir"
command -v mosquitto_pub >/dev/null && [ -x /usr/sbin/mosquitto ] || { echo "needs mosquitto and mosquitto-clients" >&2; exit 69; }
swift build -c release --product ingestd >/dev/null
make_realistic_input "$dir/in.ndjson" "$count"
tick=$(getconf CLK_TCK)

start_mosquitto "$dir" 'max_queued_messages 10000000'
agent=
trap 'kill $broker ${agent:-} 2>/dev/null || true' EXIT

for window in 1 1000 0; do
    # status.json every 20 ms (the default is 1 s), as the end is read from it.
    { realistic_config | sed 's/^\[agent\]$/[agent]\nstatus_interval_ms = 20/'
      if [ "$window" = 0 ]; then extra='dedup_window_s = 0'; w=1000; else extra=''; w=$window; fi
      printf '[[inputs]]\nkind = "mqtt"\nurl = "mqtt://127.0.0.1:%s"\ntopics = ["bench/#"]\nreceive_maximum = %s\ntype = "WeatherSensor"\n%s\n' "$port" "$w" "$extra"
    } > "$dir/window$window.toml"
done

accepted() {  # STATE_DIR CONFIG
    .build/release/ingestd status --json --config "$2" --state-directory "$1" 2>/dev/null |
        python3 -c 'import json, sys; print(json.load(sys.stdin).get("accepted_total", 0))' 2>/dev/null || echo 0
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
now() { date +%s.%N; }
probe='{"_id":"674000000000000000ffffff","ts":"2026-11-21T10:00:00.000Z","deviceId":"probe","temperatureInFahrenheit":1.5,"barometricPressureInHg":29.5,"windSpeedInMph":1}'

run_agent() {  # RUN WINDOW
    local state="$dir/state" config="$dir/window$2.toml"
    rm -rf "$state"
    .build/release/ingestd run --config "$config" --state-directory "$state" > "$dir/agent.log" 2>&1 &
    agent=$!
    # Subscribed once a probe is committed (a new client id per run: a fresh session).
    until [ "$(accepted "$state" "$config")" -ge 1 ]; do
        mosquitto_pub -p "$port" -q 1 -t bench/probe -m "$probe"
        sleep 0.1
    done
    local c0 t0 c1 t1
    c0=$(cpu_ticks "$agent")
    t0=$(now)
    mosquitto_pub -p "$port" -q 1 -V mqttv5 -t bench/wx -l < "$dir/in.ndjson"
    until [ "$(accepted "$state" "$config")" -ge $((count + 1)) ]; do sleep 0.02; done
    t1=$(now)
    c1=$(cpu_ticks "$agent")
    kill "$agent"
    wait "$agent" || true
    agent=
    local label
    case "$2" in 1) label=per-message ;; 1000) label=batched ;; *) label=no-window ;; esac
    awk -v r="$1" -v w="$label" -v n="$count" -v t0="$t0" -v t1="$t1" -v c="$((c1 - c0))" -v hz="$tick" 'BEGIN {
        printf "run %d %-12s %d readings: %.0f/s, %.2f CPU-s per million\n", r, w ":", n, n / (t1 - t0), c / hz * 1e6 / n }'
}

publisher_limit() {  # RUN
    local file="$dir/sub.out"
    mosquitto_sub -p "$port" -q 1 -V mqttv5 -t limit/# -C "$count" > "$file" &
    local sub=$!
    sleep 0.3
    local t0 t1
    t0=$(now)
    mosquitto_pub -p "$port" -q 1 -V mqttv5 -t limit/wx -l < "$dir/in.ndjson"
    wait "$sub"
    t1=$(now)
    awk -v r="$1" -v n="$count" -v t0="$t0" -v t1="$t1" 'BEGIN {
        printf "run %d %-12s %d readings: %.0f/s (mosquitto_pub -> mosquitto -> mosquitto_sub, no agent)\n", r, "publisher:", n, n / (t1 - t0) }'
}

machine_line
echo "ingestd $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)'); $count readings, one per message, QoS 1; mosquitto $(/usr/sbin/mosquitto -h 2>/dev/null | sed -n 's/^mosquitto version \([0-9.]*\).*/\1/p' | head -1)"
for run in $(seq "$runs"); do
    publisher_limit "$run"
    run_agent "$run" 1
    run_agent "$run" 1000
    run_agent "$run" 0
done
