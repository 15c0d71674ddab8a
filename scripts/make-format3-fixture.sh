#!/usr/bin/env bash
# Makes Tests/Fixtures/queue-format3-gateway.sqlite with the previous
# release (format 3, the commit in scripts/systemd-tests/previous-release),
# for the migration test (Tests/ingestdTests/FormatMigrationTests.swift):
# a gateway that received 2 batches of 50 readings from account gw-17
# (session "fixture-7") and could not upload them, so they are queued,
# with its received ids and sessions in the tables format 3 kept outside
# the format; and 30 readings from stdin with generated ids.
#
#   scripts/make-format3-fixture.sh [path/to/previous/ingestd]
#
# Without an argument it uses the previous release's package that
# scripts/test-systemd.sh builds and caches (.build-systemd/previous-<commit>/).
set -euo pipefail
cd "$(dirname "$0")/.."
commit=$(awk '/^commit /{print $2}' scripts/systemd-tests/previous-release)
binary=${1:-}
if [ -z "$binary" ]; then
    deb=.build-systemd/previous-$commit/ingestd.deb
    if [ ! -f "$deb" ]; then
        echo "make-format3-fixture.sh: no $deb: run scripts/test-systemd.sh 70-upgrade once (it builds it), or give the previous ingestd's path" >&2
        exit 64
    fi
    extract=$(mktemp -d)
    dpkg-deb -x "$deb" "$extract"
    binary=$extract/usr/bin/ingestd
fi
"$binary" --version >&2

work=$(mktemp -d)
trap 'kill $(cat "$work/pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT
key="k3y-0f-the-gateway-17-0123456789" # HTTPInputTests.apiKey
printf 'gw-17 %s\n' "$(printf '%s\n' "$key" | "$binary" hash-secret --api-key)" >"$work/keys"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/ingestd.toml" <<TOML
[agent]
state_directory = "$work/state"
log_target = "stderr"
status_interval_ms = 100

[queue]
schema_version = 1
commit_max_records = 10

[upload]
url = "http://127.0.0.1:9/nobody-listens"
retry_base_ms = 60000

[types.WeatherSensor]
deviceId = "string"
temperatureInFahrenheit = "double"
barometricPressureInHg = "double"
windSpeedInMph = "int"

[[inputs]]
kind = "http"
listen = "127.0.0.1:$port"
app_id = "weather"
api_keys_file = "$work/keys"

[[inputs]]
kind = "stdin"
TOML
mkfifo "$work/stdin"
"$binary" run --config "$work/ingestd.toml" <"$work/stdin" 2>"$work/stderr" &
echo $! >"$work/pid"
exec 3>"$work/stdin"
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
line() { printf '{"_id":"%s","deviceId":"F%d","temperatureInFahrenheit":%d.5,"barometricPressureInHg":29.9,"windSpeedInMph":%d}\n' "$1" "$2" "$2" "$2"; }
for batch in 0 1; do
    body=$(for i in $(seq $((batch * 50)) $((batch * 50 + 49))); do line "$(printf '65f1c2a9e1b2c3d4e5f7%04x' "$i")" "$i"; done)
    curl -fs -X POST "http://127.0.0.1:$port/ingest/v1/apps/weather/batches" \
        -H "Authorization: Bearer $key" -H "EdgeIngest-Record-Type: WeatherSensor" \
        -H "EdgeIngest-Schema-Version: 1" -H "EdgeIngest-Session: fixture-7" --data-binary "$body" >&2
    echo >&2
done
for i in $(seq 30); do
    printf '{"deviceId":"S%d","temperatureInFahrenheit":1.5,"barometricPressureInHg":2.5,"windSpeedInMph":%d}\n' "$i" "$i" >&3
done
exec 3>&-
for _ in $(seq 100); do
    grep -q '"accepted_total" *: *130' "$work/state/status.json" 2>/dev/null && break
    sleep 0.1
done
kill -TERM "$(cat "$work/pid")"
wait "$(cat "$work/pid")" || true
out=Tests/Fixtures/queue-format3-gateway.sqlite
sqlite3 "$work/state/queue.sqlite" "PRAGMA wal_checkpoint(TRUNCATE); VACUUM INTO '$PWD/$out.tmp';" >/dev/null
mv "$out.tmp" "$out"
echo "$out: format $(sqlite3 "$out" 'PRAGMA user_version'), $(sqlite3 "$out" 'SELECT sum(record_count - consumed) FROM segments') readings queued, $(sqlite3 "$out" 'SELECT count(*) FROM received_groups_0') + $(sqlite3 "$out" 'SELECT count(*) FROM received_groups_1') received groups, $(sqlite3 "$out" 'SELECT count(*) FROM received_sessions') sessions" >&2
