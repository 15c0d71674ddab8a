#!/usr/bin/env bash
# How soon an alarm arrives when it was queued behind a backlog (issue 40):
# 1,000,000 realistic readings (bench/lib.sh make_realistic_input) are
# queued with no sink (an outage), then one Alarm; then the agent starts
# with the SQLite archive as its sink and drains everything. A trigger per
# archive table writes each row's arrival time, so the archive itself says
# when the alarm came and when the last reading did. Runs alternate
# `[delivery.Alarm] priority = 10` and no priority (the alarm then waits
# its turn behind the backlog). Prints, per run, the ms from the agent's
# start to the alarm's arrival and to the last reading's.
#
#   bench/priority.sh [RUNS] [DIR]     # defaults: 3 runs of each, /var/tmp/edgeingest-priority
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_usage "$0" "$@"
runs=${1:-3}
require_count RUNS "$runs"
dir=${2:-/var/tmp/edgeingest-priority}
mkdir -p "$dir"
swift build -c release --product ingestd >/dev/null
binary=.build/release/ingestd
make_realistic_input "$dir/in.ndjson" 1000000
echo '{"deviceId":"pump-3","level":2}' > "$dir/alarm.ndjson"

# config PRIORITY UPLOAD TYPE: the agent's configuration, with a sink or
# without, reading TYPE from stdin.
config() {
    realistic_config | sed 's/^\[types.WeatherSensor\]/[types.Alarm]\ndeviceId = "string"\nlevel = "int"\n\n[types.WeatherSensor]/'
    printf '\n[[inputs]]\nkind = "stdin"\ntype = "%s"\n' "${3:-WeatherSensor}"
    printf '\n[delivery.Alarm]\npriority = %s\n' "$1"
    if [ "$2" = upload ]; then
        printf '\n[upload]\nsink = "sqlite"\npath = "%s/archive.sqlite"\nshutdown_timeout_ms = 600000\n' "$dir"
    fi
}

machine_line
echo "ingestd $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)'); 1,000,000 readings queued, then 1 alarm; sink: SQLite archive"
for run in $(seq "$runs"); do
    for priority in 10 0; do
        rm -rf "$dir/state" "$dir/archive.sqlite"*
        config "$priority" none > "$dir/offline.toml"
        config "$priority" none Alarm > "$dir/alarm.toml"
        config "$priority" upload > "$dir/online.toml"
        "$binary" run --config "$dir/offline.toml" --state-directory "$dir/state" < "$dir/in.ndjson"
        "$binary" run --config "$dir/alarm.toml" --state-directory "$dir/state" < "$dir/alarm.ndjson"
        sqlite3 "$dir/archive.sqlite" <<'SQL'
CREATE TABLE arrivals(type TEXT NOT NULL, at REAL NOT NULL);
CREATE TABLE "WeatherSensor"("_id" TEXT NOT NULL, PRIMARY KEY ("_id"));
CREATE TABLE "Alarm"("_id" TEXT NOT NULL, PRIMARY KEY ("_id"));
CREATE TRIGGER reading_arrives AFTER INSERT ON "WeatherSensor" BEGIN INSERT INTO arrivals VALUES ('WeatherSensor', (julianday('now') - 2440587.5) * 86400000.0); END;
CREATE TRIGGER alarm_arrives AFTER INSERT ON "Alarm" BEGIN INSERT INTO arrivals VALUES ('Alarm', (julianday('now') - 2440587.5) * 86400000.0); END;
SQL
        start=$(($(date +%s%N) / 1000000))
        "$binary" run --config "$dir/online.toml" --state-directory "$dir/state" < /dev/null
        alarm=$(sqlite3 "$dir/archive.sqlite" "SELECT CAST(max(at) AS INTEGER) - $start FROM arrivals WHERE type = 'Alarm'")
        last=$(sqlite3 "$dir/archive.sqlite" "SELECT CAST(max(at) AS INTEGER) - $start FROM arrivals")
        readings=$(sqlite3 "$dir/archive.sqlite" "SELECT count(*) FROM arrivals WHERE type = 'WeatherSensor'")
        echo "run $run, priority $priority: alarm after ${alarm} ms, last reading after ${last} ms ($readings readings)"
    done
done
