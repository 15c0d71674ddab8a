#!/usr/bin/env bash
# A stand-in sensor: prints N WeatherSensor readings as NDJSON (default 5),
# one every INTERVAL seconds (default 0). Pipe it into ingestd:
#   scripts/sample-sensor.sh 5 | ingestd send --config etc/ingestd.toml   # to a running agent
#   scripts/sample-sensor.sh 5 | ingestd run --config FILE                # an agent with a stdin input
n=${1:-5}
interval=${2:-0}
for ((i = 0; i < n; i++)); do
    printf '{"deviceId":"WX1278UIT","temperatureInFahrenheit":%d.%d,"barometricPressureInHg":29.65,"windSpeedInMph":%d}\n' \
        $((60 + RANDOM % 20)) $((RANDOM % 10)) $((RANDOM % 30))
    [ "$interval" = 0 ] || sleep "$interval"
done
