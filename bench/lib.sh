# Shared by the bench scripts: source it, don't run it.

# make_input FILE LINES: LINES WeatherSensor NDJSON readings in FILE (kept if already right).
make_input() {
    if [ ! -s "$1" ] || [ "$(wc -l < "$1")" != "$2" ]; then
        awk -v n="$2" 'BEGIN { for (i = 0; i < n; i++) printf "{\"deviceId\":\"WX%d\",\"temperatureInFahrenheit\":%d.%d,\"barometricPressureInHg\":29.65,\"windSpeedInMph\":%d}\n", i % 100, 60 + i % 30, i % 10, i % 40 }' > "$1"
    fi
}

# base_config: an agent configuration for benchmarks (quiet logs, WeatherSensor, a
# queue bound of QUEUE_MAX_BYTES, default 1 GiB: ~7 M readings; a fill beyond the
# bound blocks, as overflow_policy "block" says, and the benchmark would wait for ever).
base_config() {
    cat <<TOML
[agent]
log_target = "stderr"
log_level = "warning"
stats_interval_seconds = 0
[queue]
max_bytes = ${QUEUE_MAX_BYTES:-1073741824}
[types.WeatherSensor]
deviceId = "string"
temperatureInFahrenheit = "double"
barometricPressureInHg = "double"
windSpeedInMph = "int"
TOML
}

machine_line() {
    echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(date -u +%Y-%m-%dT%H:%MZ)"
}
