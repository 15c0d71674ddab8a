# Shared by the bench scripts: source it, don't run it.

# bench_usage SCRIPT ARGS...: prints the script's header comment for -h/--help
# (exit 0), refuses other options (exit 2); call first, with "$0" "$@".
bench_usage() {
    local script="$1"
    shift
    case "${1:-}" in
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$script"; exit 0 ;;
        -*) echo "$(basename "$script"): unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
}

# require_count NAME VALUE: VALUE must be a positive integer (exit 2 otherwise).
require_count() {
    [[ "$2" =~ ^[1-9][0-9]*$ ]] || { echo "$1 must be a positive number, got '$2' (see --help)" >&2; exit 2; }
}

# make_input FILE LINES: LINES WeatherSensor NDJSON readings in FILE (kept if already right).
make_input() {
    if [ ! -s "$1" ] || [ "$(wc -l < "$1")" != "$2" ]; then
        awk -v n="$2" 'BEGIN { for (i = 0; i < n; i++) printf "{\"deviceId\":\"WX%d\",\"temperatureInFahrenheit\":%d.%d,\"barometricPressureInHg\":29.65,\"windSpeedInMph\":%d}\n", i % 100, 60 + i % 30, i % 10, i % 40 }' > "$1"
    fi
}

# make_realistic_input FILE LINES: issue 22's realistic workload: WeatherSensor
# readings of ~172 bytes, each with its own _id (24 hex digits), a `ts` ISO 8601
# UTC timestamp with milliseconds, deviceId (50 distinct), two doubles with 1–2
# decimals and an int. Deterministic (same file every time).
make_realistic_input() {
    if [ ! -s "$1" ] || [ "$(wc -l < "$1")" != "$2" ]; then
        awk -v n="$2" 'BEGIN {
            for (i = 0; i < n; i++) {
                ms = i * 100; s = int(ms / 1000); m = int(s / 60); h = int(m / 60)
                printf "{\"_id\":\"6740%020x\",\"ts\":\"2026-11-21T%02d:%02d:%02d.%03dZ\",\"deviceId\":\"WX1278UIT-%02d\",\"temperatureInFahrenheit\":%d.%d,\"barometricPressureInHg\":29.%02d,\"windSpeedInMph\":%d}\n",
                    i, (10 + h) % 24, m % 60, s % 60, ms % 1000, i % 50, 55 + i % 40, i % 10, 40 + i % 60, i % 45
            }
        }' > "$1"
    fi
}

# make_varied_input FILE LINES: make_realistic_input's shape with values as
# varied as users' (docs: "benchmark on random values"): each reading its own
# _id and a ts with milliseconds, one of 50 devices at random, a temperature
# and a pressure with one or two decimals at random, a random int wind.
# Deterministic (srand(41)): the same file every time.
make_varied_input() {
    if [ ! -s "$1" ] || [ "$(wc -l < "$1")" != "$2" ]; then
        awk -v n="$2" 'BEGIN {
            srand(41)
            for (i = 0; i < n; i++) {
                ms = i * 100 + int(rand() * 100); s = int(ms / 1000); m = int(s / 60); h = int(m / 60)
                t = 20 + rand() * 80; p = 28 + rand() * 3
                printf "{\"_id\":\"6741%020x\",\"ts\":\"2026-11-28T%02d:%02d:%02d.%03dZ\",\"deviceId\":\"WX1278UIT-%02d\",\"temperatureInFahrenheit\":%s,\"barometricPressureInHg\":%s,\"windSpeedInMph\":%d}\n",
                    i, (10 + h) % 24, m % 60, s % 60, ms % 1000, int(rand() * 50),
                    sprintf(rand() < 0.5 ? "%.1f" : "%.2f", t), sprintf(rand() < 0.5 ? "%.1f" : "%.2f", p), int(rand() * 60)
            }
        }' > "$1"
    fi
}

# realistic_config: base_config's agent with the realistic type (ts declared
# as a timestamp, so it is validated).
realistic_config() {
    base_config | sed '/^\[types.WeatherSensor\]/,$d'
    cat <<TOML
[types.WeatherSensor]
ts = "timestamp"
deviceId = "string"
temperatureInFahrenheit = "double"
barometricPressureInHg = "double"
windSpeedInMph = "int"
TOML
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

# sqlite_limit DIR PER_BATCH: this machine's raw SQLite append and drain rate
# (bench/sqlite-limit/layout.c, synchronous=FULL), one row per 1000-reading
# batch (PER_BATCH 1) or per reading (0); prints the program's line.
sqlite_limit() {
    gcc -O2 bench/sqlite-limit/layout.c -lsqlite3 -o "$1/sqlite-limit"
    "$1/sqlite-limit" "$1/raw.sqlite" "$2" FULL
    rm -f "$1"/raw.sqlite*
}

# start_receiver DIR: the loopback receiver (ingest-test-server.py --fast)
# in the background, killed when the script exits; sets receiver_port.
start_receiver() {
    rm -f "$1/port"
    python3 Tests/Support/ingest-test-server.py --fast --port-file "$1/port" >/dev/null 2>&1 &
    receiver_pid=$!
    trap 'kill -9 $receiver_pid 2>/dev/null' EXIT
    for _ in $(seq 100); do [ -s "$1/port" ] && break; sleep 0.05; done
    [ -s "$1/port" ] || { echo "the loopback receiver did not start" >&2; exit 1; }
    receiver_port=$(cut -d' ' -f1 "$1/port")
}

# received: the lines the receiver started by start_receiver has taken so
# far (its --fast mode counts lines, re-sends included).
received() {
    curl -s "http://127.0.0.1:$receiver_port/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["unique"])'
}

# status_field STATE_DIR FIELD: one field of `ingestd status --json` (the
# release build's), for a stopped agent.
status_field() {
    local out
    out=$(.build/release/ingestd status --state-directory "$1" --json || true)
    python3 -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$out" "$2"
}

# start_mosquitto DIR [CONF_LINES]: Debian's mosquitto on a free loopback port
# (anonymous, no persistence, more lines of mosquitto.conf in CONF_LINES), in
# the background, until it listens; sets port and broker (its pid: the caller
# kills it in its EXIT trap).
start_mosquitto() {
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\n%s\n%s\n' "$port" "${2:-}" \
        "$([ "$(id -u)" = 0 ] && echo 'user root')" > "$1/mosquitto.conf"
    /usr/sbin/mosquitto -c "$1/mosquitto.conf" > "$1/broker.log" 2>&1 &
    broker=$!
    for _ in $(seq 100); do (echo > "/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
}
