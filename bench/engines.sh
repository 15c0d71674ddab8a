#!/usr/bin/env bash
# What the engines behind a fleet take (issue 23, docs/FLEET.md): LINES
# realistic readings (~172 B, own _id, ISO-8601 ts) piped through one
# ingestd (release build) into a local PostgreSQL (its sink creates the
# table, keyed on _id; one INSERT … ON CONFLICT DO NOTHING per batch) and
# into a local ClickHouse (JSONEachRow into a ReplacingMergeTree ordered by
# _id; Debian 12's 18.16 takes no insert_deduplication_token, so the sink's
# deduplication_token = false and `ts` is a String), one engine at a
# time, each started by this script from Debian's packages in DIR. Prints
# per engine: readings/s end to end (the run exits when every reading is
# stored), the agent's and the engine's CPU seconds per million, and the
# rows the engine holds (must be LINES, else exit 1).
#
#   bench/engines.sh [LINES] [DIR] [BATCH]   # default 1,000,000, /tmp/edgeingest-bench-engines, 1000
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_usage "$0" "$@"
lines=${1:-1000000}
require_count LINES "$lines"
dir=${2:-/tmp/edgeingest-bench-engines}
batch=${3:-1000}
require_count BATCH "$batch"
rm -rf "$dir" && mkdir -p "$dir"
swift build -c release --product ingestd >/dev/null
make_realistic_input "$dir/readings.ndjson" "$lines"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
cpu_of() { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$1/stat"; }  # with waited-for children
engine_pids=()
trap 'kill -9 ${engine_pids[*]:-} 2>/dev/null || true' EXIT
machine_line
echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes'), $lines readings, $batch per batch"
printf '%-12s %12s %18s %19s %10s\n' engine "readings/s" "agent CPU-s/million" "engine CPU-s/million" rows

# run NAME ENGINE_PID UPLOAD_TOML COUNT_COMMAND
run() {
    local name=$1 engine_pid=$2 upload=$3 count=$4 state="$dir/agent-$1"
    { realistic_config; printf '[upload]\n%s\nmax_records = %s\nlinger_ms = 50\nshutdown_timeout_ms = 600000\n' "$upload" "$batch"; } > "$dir/$name.toml"
    local engine_before start end
    engine_before=$(sum_cpu "$engine_pid")
    start=$(date +%s.%N)
    /usr/bin/time -f "%U %S" -o "$dir/$name.time" .build/release/ingestd run --config "$dir/$name.toml" \
        --state-directory "$state" < "$dir/readings.ndjson" 2> "$dir/$name.log"
    end=$(date +%s.%N)
    local engine_after rows
    engine_after=$(sum_cpu "$engine_pid")
    rows=$(eval "$count")
    python3 - "$name" "$lines" "$start" "$end" "$(cat "$dir/$name.time")" "$engine_before" "$engine_after" "$(getconf CLK_TCK)" "$rows" <<'PY'
import sys
name, lines, start, end, agent, eb, ea, tck, rows = sys.argv[1:]
lines = int(lines); m = lines / 1e6
agent_cpu = sum(float(x) for x in agent.split())
engine_cpu = (float(ea) - float(eb)) / float(tck)
print(f'{name:<12} {lines / (float(end) - float(start)):>12,.0f} {agent_cpu / m:>18.2f} {engine_cpu / m:>19.2f} {rows:>10}')
PY
    [ "$rows" = "$lines" ] || { echo "$name holds $rows rows, not $lines" >&2; exit 1; }
}

# sum_cpu PID: the CPU ticks of PID, its children that ended (PostgreSQL's
# backends, reaped by the postmaster) and those still running.
sum_cpu() {
    local total p
    total=$(cpu_of "$1")
    for p in $(pgrep -P "$1" || true); do
        [ -r "/proc/$p/stat" ] && total=$((total + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
    done
    echo $total
}

# PostgreSQL (Debian's postgresql-15), trust on loopback, fsync as configured by default.
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | tail -1)
pg_port=$(free_port)
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
mkdir -p "$dir/pg" && [ "$(id -u)" != 0 ] || chown postgres "$dir" "$dir/pg"
as_postgres "$pg_bin/initdb" -D "$dir/pg/data" -A trust -U postgres >/dev/null
as_postgres "$pg_bin/pg_ctl" -D "$dir/pg/data" -o "-p $pg_port -k $dir/pg -c listen_addresses=127.0.0.1" -l "$dir/pg/log" start >/dev/null
engine_pids+=("$(head -1 "$dir/pg/data/postmaster.pid")")
as_postgres "$pg_bin/psql" -h 127.0.0.1 -p "$pg_port" -U postgres -qc "CREATE DATABASE telemetry" postgres
run postgresql "${engine_pids[0]}" "sink = \"postgresql\"
url = \"postgresql://postgres@127.0.0.1:$pg_port/telemetry\"" \
    "as_postgres $pg_bin/psql -h 127.0.0.1 -p $pg_port -U postgres -Atc 'SELECT count(*) FROM \"WeatherSensor\"' telemetry"
as_postgres "$pg_bin/pg_ctl" -D "$dir/pg/data" stop -m fast >/dev/null

# ClickHouse (Debian's clickhouse-server), a ReplacingMergeTree ordered by _id.
ch_port=$(free_port)
mkdir -p "$dir/ch"
cat > "$dir/ch/users.xml" <<XML
<?xml version="1.0"?>
<yandex><profiles><default></default></profiles>
<users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
<quotas><default></default></quotas></yandex>
XML
cat > "$dir/ch/config.xml" <<XML
<?xml version="1.0"?>
<yandex><logger><level>warning</level><log>$dir/ch/clickhouse.log</log><errorlog>$dir/ch/clickhouse.err.log</errorlog><size>10M</size><count>1</count></logger>
<http_port>$ch_port</http_port><listen_host>127.0.0.1</listen_host><max_concurrent_queries>16</max_concurrent_queries>
<mark_cache_size>67108864</mark_cache_size><path>$dir/ch/data/</path><tmp_path>$dir/ch/tmp/</tmp_path>
<user_files_path>$dir/ch/user_files/</user_files_path><format_schema_path>$dir/ch/format_schemas/</format_schema_path>
<users_config>$dir/ch/users.xml</users_config><default_profile>default</default_profile>
<default_database>default</default_database><mlock_executable>false</mlock_executable></yandex>
XML
/usr/sbin/clickhouse-server --config-file="$dir/ch/config.xml" > "$dir/ch/stdout" 2>&1 &
engine_pids+=($!)
for _ in $(seq 300); do [ "$(curl -s "http://127.0.0.1:$ch_port/ping" || true)" = "Ok." ] && break; sleep 0.1; done
ch() { curl -sf "http://127.0.0.1:$ch_port/" --data-binary "$1"; }
ch "CREATE DATABASE telemetry"
ch "CREATE TABLE telemetry.WeatherSensor (_id String, ts String, deviceId String, temperatureInFahrenheit Float64, barometricPressureInHg Float64, windSpeedInMph Int64) ENGINE = ReplacingMergeTree ORDER BY _id"
run clickhouse "${engine_pids[1]}" "sink = \"clickhouse\"
url = \"http://127.0.0.1:$ch_port/\"
database = \"telemetry\"
deduplication_token = false" "ch 'SELECT count() FROM telemetry.WeatherSensor FINAL'"
