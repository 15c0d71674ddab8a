#!/usr/bin/env bash
# Runs the clickhouse and influxdb sinks of the built ingestd against real
# servers from Debian 12's packages, when they are installed:
#   clickhouse-server (18.16), influxdb (1.6), victoria-metrics (1.79)
#   apt-get install -y clickhouse-server influxdb victoria-metrics
# Each server is started by hand on loopback in a temporary directory (none
# of the packages' services is used). For each: N readings with fixed _ids
# go through `ingestd run` (stdin) into the engine, then the same N again (a
# re-send, as after a crash before the queue's delete); the engine must
# hold N, each once. An engine that is not installed is skipped and said so.
#
# Usage: scripts/sink-engines.sh [N]        (default 2000)
# Env:   INGESTD (default .build/release/ingestd, else .build/debug/ingestd)
# Exit:  0 every installed engine passed, 1 one failed, 2 none is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-2000}"
ingestd="${INGESTD:-}"
if [ -z "$ingestd" ]; then
    if [ -x .build/release/ingestd ]; then ingestd=.build/release/ingestd; else ingestd=.build/debug/ingestd; fi
fi
[ -x "$ingestd" ] || { echo "sink-engines: no ingestd at $ingestd (swift build first, or set INGESTD)" >&2; exit 1; }
ingestd="$(cd "$(dirname "$ingestd")" && pwd)/$(basename "$ingestd")"

work="$(mktemp -d /tmp/sink-engines.XXXXXX)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    sleep 0.5
    for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() {  # URL [expected status]
    for _ in $(seq 1 200); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" = "${2:-200}" ] && return 0
        sleep 0.05
    done
    echo "sink-engines: $1 did not answer" >&2
    return 1
}

# N readings with fixed _ids and times: the same records every time.
python3 - "$n" > "$work/readings.ndjson" <<'EOF'
import sys
for i in range(int(sys.argv[1])):
    print('{"_id":"%024x","deviceId":"D%d","temperatureInFahrenheit":%d.5,"windSpeedInMph":%d,"takenAt":"2026-11-21T10:%02d:%02d.%03dZ"}'
          % (0x65a1b2c3d4e5f60700000000 + i, i % 10, 60 + i % 30, i % 40, (i // 60000) % 60, (i // 1000) % 60, i % 1000))
EOF

# Streams the readings twice through an agent with `upload` as its [upload].
stream_twice() {  # NAME UPLOAD-TOML
    local dir="$work/$1"
    mkdir -p "$dir"
    cat > "$dir/ingestd.toml" <<EOF
[agent]
log_target = "stderr"
[types.WeatherSensor]
deviceId = "string"
temperatureInFahrenheit = "double"
windSpeedInMph = "int"
takenAt = "timestamp"
[[inputs]]
kind = "stdin"
format = "ndjson"
type = "WeatherSensor"
[upload]
linger_ms = 50
shutdown_timeout_ms = 30000
$2
EOF
    for round in 1 2; do
        if ! "$ingestd" run --config "$dir/ingestd.toml" --state-directory "$dir/state" < "$work/readings.ndjson" 2>> "$dir/agent.log"; then
            echo "sink-engines: $1: ingestd run failed ($ingestd):" >&2
            tail -20 "$dir/agent.log" >&2
            exit 1
        fi
    done
    "$ingestd" status --config "$dir/ingestd.toml" --state-directory "$dir/state" --json > "$dir/status.json" 2>/dev/null || true
}

queued() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("queued_records", "?"))' "$1" 2>/dev/null || echo "?"; }

results=()
failed=0
ran=0
report() {  # ENGINE STORED QUEUED NOTE
    local verdict=pass
    if [ "$2" != "$n" ] || [ "$3" != "0" ]; then verdict=FAIL; failed=1; fi
    results+=("| $1 | $n | $2 | $3 | $verdict | $4 |")
}

# --- ClickHouse 18.16 --------------------------------------------------------
if command -v clickhouse-server >/dev/null; then
    ran=1
    ch="$work/clickhouse"; mkdir -p "$ch"/{data,tmp,user_files,log}
    http_port="$(free_port)"; tcp_port="$(free_port)"
    cat > "$ch/users.xml" <<'EOF'
<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
EOF
    cat > "$ch/config.xml" <<EOF
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$ch/log/server.log</log><errorlog>$ch/log/server.err.log</errorlog><size>100M</size><count>1</count></logger>
  <http_port>$http_port</http_port><tcp_port>$tcp_port</tcp_port><listen_host>127.0.0.1</listen_host>
  <max_connections>64</max_connections><keep_alive_timeout>3</keep_alive_timeout><max_concurrent_queries>16</max_concurrent_queries>
  <uncompressed_cache_size>67108864</uncompressed_cache_size><mark_cache_size>67108864</mark_cache_size>
  <path>$ch/data/</path><tmp_path>$ch/tmp/</tmp_path><user_files_path>$ch/user_files/</user_files_path>
  <format_schema_path>$ch/format_schemas/</format_schema_path>
  <users_config>$ch/users.xml</users_config><default_profile>default</default_profile><default_database>default</default_database>
  <mlock_executable>false</mlock_executable>
</yandex>
EOF
    clickhouse-server --config-file="$ch/config.xml" > "$ch/stdout.log" 2>&1 &
    pids+=($!)
    wait_for "http://127.0.0.1:$http_port/ping"
    q() { curl -sS --fail-with-body "http://127.0.0.1:$http_port/" --data-binary "$1"; }
    q "CREATE DATABASE telemetry"
    q "CREATE TABLE telemetry.weather (_id String, deviceId String, temperatureInFahrenheit Float64, windSpeedInMph Int64, takenAt String) ENGINE = ReplacingMergeTree ORDER BY _id"
    # 18.16 predates insert_deduplication_token: the ReplacingMergeTree dedups.
    stream_twice clickhouse "sink = \"clickhouse\"
url = \"http://127.0.0.1:$http_port/\"
database = \"telemetry\"
table = \"weather\"
gzip = true
deduplication_token = false"
    final="$(q "SELECT count() FROM telemetry.weather FINAL")"
    stored="$(q "SELECT uniqExact(_id) FROM telemetry.weather")"
    raw="$(q "SELECT count() FROM telemetry.weather")"
    [ "$final" = "$stored" ] || stored="$final rows with FINAL vs $stored _ids"
    report "ClickHouse $(q 'SELECT version()')" "$stored" "$(queued "$work/clickhouse/status.json")" "$raw rows before merges, $final with FINAL"
else
    results+=("| ClickHouse | – | – | – | skipped | clickhouse-server not installed |")
fi

# --- InfluxDB 1.6 -----------------------------------------------------------
if command -v influxd >/dev/null; then
    ran=1
    ix="$work/influxdb"; mkdir -p "$ix"
    port="$(free_port)"; bind="$(free_port)"
    cat > "$ix/influxdb.conf" <<EOF
reporting-enabled = false
bind-address = "127.0.0.1:$bind"
[meta]
  dir = "$ix/meta"
[data]
  dir = "$ix/data"
  wal-dir = "$ix/wal"
  query-log-enabled = false
[monitor]
  store-enabled = false
[http]
  enabled = true
  bind-address = "127.0.0.1:$port"
  log-enabled = false
[continuous_queries]
  enabled = false
EOF
    influxd run -config "$ix/influxdb.conf" > "$ix/influxd.log" 2>&1 &
    pids+=($!)
    wait_for "http://127.0.0.1:$port/ping" 204
    curl -sS -o /dev/null "http://127.0.0.1:$port/query" --data-urlencode "q=CREATE DATABASE telemetry"
    stream_twice influxdb "sink = \"influxdb\"
url = \"http://127.0.0.1:$port/write?db=telemetry\"
measurement = \"weather\"
tags = [\"deviceId\"]
gzip = true"
    stored="$(curl -sS "http://127.0.0.1:$port/query" --data-urlencode "db=telemetry" --data-urlencode 'q=SELECT count(temperatureInFahrenheit) FROM weather' \
        | python3 -c 'import json,sys; r=json.load(sys.stdin)["results"][0]; print(r["series"][0]["values"][0][1] if "series" in r else 0)')"
    report "InfluxDB $(curl -sI "http://127.0.0.1:$port/ping" | sed -n 's/^X-Influxdb-Version: //Ip' | tr -d '\r')" "$stored" "$(queued "$ix/status.json")" "points (series + time: a re-sent point overwrites itself)"
else
    results+=("| InfluxDB | – | – | – | skipped | influxdb not installed |")
fi

# --- VictoriaMetrics 1.79 ----------------------------------------------------
if command -v victoria-metrics >/dev/null; then
    ran=1
    vm="$work/victoria-metrics"; mkdir -p "$vm"
    port="$(free_port)"
    # Without -dedup.minScrapeInterval a re-sent point is stored twice.
    victoria-metrics -storageDataPath="$vm/data" -httpListenAddr="127.0.0.1:$port" -retentionPeriod=100y -dedup.minScrapeInterval=1ms > "$vm/vm.log" 2>&1 &
    pids+=($!)
    wait_for "http://127.0.0.1:$port/health"
    stream_twice victoria-metrics "sink = \"influxdb\"
url = \"http://127.0.0.1:$port/write?db=telemetry\"
measurement = \"weather\"
tags = [\"deviceId\"]"
    curl -sS -o /dev/null "http://127.0.0.1:$port/internal/force_flush"
    sleep 2
    stored="$(curl -sS "http://127.0.0.1:$port/api/v1/export" --data-urlencode 'match[]={__name__="weather_temperatureInFahrenheit"}' \
        | python3 -c 'import json,sys; print(sum(len(json.loads(l)["values"]) for l in sys.stdin if l.strip()))')"
    report "VictoriaMetrics (package $(dpkg-query -W -f '${Version}' victoria-metrics 2>/dev/null))" "$stored" "$(queued "$vm/status.json")" "samples of weather_temperatureInFahrenheit, with -dedup.minScrapeInterval=1ms"
else
    results+=("| VictoriaMetrics | – | – | – | skipped | victoria-metrics not installed |")
fi

echo "| engine | readings (sent twice) | stored | left queued | result | note |"
echo "| --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${results[@]}"
if [ "$failed" = 1 ]; then
    for log in "$work"/*/agent.log; do echo "--- $log"; tail -20 "$log"; done
    exit 1
fi
[ "$ran" = 1 ] || { echo "sink-engines: none of clickhouse-server, influxdb, victoria-metrics is installed" >&2; exit 2; }
