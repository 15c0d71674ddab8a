#!/usr/bin/env bash
# The whole loop on one machine: sample readings -> an edge ingestd (the
# example configuration etc/ingestd.toml, its own SQLite queue, plus an
# [upload] to the backend below) -> a backend ingestd (etc/backend.toml: the
# ingest protocol's server side, committing to its own queue, then into a
# SQLite archive) -> stored once per _id.
#
# usage: scripts/full-loop.sh [N]     N readings (default 5)
# env:   INGESTD    the binary (default .build/release/ingestd)
#        LOOP_DIR   where both agents keep their state (default
#                   ${XDG_STATE_HOME:-~/.local/state}/ingestd-loop; kept, so
#                   the archive grows with every run)
#        LOOP_PORT  the backend's loopback port (default 8480; 0: any free one)
#
# Exit status: 0 when the archive gained exactly N rows and both queues are
# empty; 1 otherwise (the agents' logs are in LOOP_DIR); 2 on bad usage.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
case "${1:-}" in -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
n=${1:-5}
[[ "$n" =~ ^[0-9]+$ ]] || { echo "full-loop: N must be a number of readings, got '$n'" >&2; exit 2; }
port=${LOOP_PORT:-8480}
[[ "$port" =~ ^[0-9]+$ ]] || { echo "full-loop: LOOP_PORT must be a port number, got '$port'" >&2; exit 2; }
bin=${INGESTD:-$root/.build/release/ingestd}
[ -x "$bin" ] || { echo "full-loop: no ingestd at $bin: build it first (swift build -c release) or set INGESTD" >&2; exit 2; }
work=${LOOP_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/ingestd-loop}
mkdir -p "$work"
archive="$work/backend/archive.sqlite"

# field STATE_DIR CONFIG KEY: one field of `ingestd status --json` (empty if none yet).
field() {
    "$bin" status --config "$2" --state-directory "$1" --json 2>/dev/null |
        python3 -c 'import json, sys
try: s = json.load(sys.stdin)
except ValueError: sys.exit()
v = s.get(sys.argv[1]) if sys.argv[1] != "listen" else (s.get("inputs") or [{}])[0].get("listen")
print("" if v is None else v, s.get("pid", ""))' "$3" || true
}
rows() { [ -f "$archive" ] && sqlite3 "$archive" 'SELECT count(*) FROM WeatherSensor' 2>/dev/null || echo 0; }

# The backend: etc/backend.toml on the chosen port.
sed "s/^listen = .*/listen = \"127.0.0.1:$port\"/" "$root/etc/backend.toml" >"$work/backend.toml"
"$bin" run --config "$work/backend.toml" --state-directory "$work/backend" --log-target stderr 2>>"$work/backend.log" &
backend=$!
trap 'kill "$backend" 2>/dev/null || true; wait "$backend" 2>/dev/null || true' EXIT
# Listening once its own status (this pid) names the address: not another
# server that happens to hold the port.
address=""
for _ in $(seq 100); do
    kill -0 "$backend" 2>/dev/null || { echo "full-loop: the backend did not start:" >&2; tail -5 "$work/backend.log" >&2; exit 1; }
    read -r address pid <<<"$(field "$work/backend" "$work/backend.toml" listen)"
    [ "${pid:-}" = "$backend" ] && [ -n "$address" ] && break
    address=""
    sleep 0.1
done
[ -n "$address" ] || { echo "full-loop: the backend did not report its address within 10 s (log: $work/backend.log)" >&2; exit 1; }
before=$(rows)

# The example configuration (its socket input), plus where to upload; the
# readings go in with `ingestd send`, which returns once they are committed.
{ cat "$root/etc/ingestd.toml"; printf '\n[upload]\nurl = "http://%s/ingest/v1/batches"\nlinger_ms = 50\n' "$address"; } >"$work/edge.toml"
echo "full-loop: $n readings -> ingestd send -> edge ingestd ($work/edge) -> backend ingestd ($address) -> $archive" >&2
"$bin" run --config "$work/edge.toml" --state-directory "$work/edge" --log-target stderr 2>>"$work/edge.log" &
edge=$!
trap 'kill "$edge" "$backend" 2>/dev/null || true; wait "$edge" "$backend" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    kill -0 "$edge" 2>/dev/null || { echo "full-loop: the edge agent did not start:" >&2; tail -5 "$work/edge.log" >&2; exit 1; }
    [ -S "$work/edge/ingestd.sock" ] && break
    sleep 0.1
done
"$root/scripts/sample-sensor.sh" "$n" | "$bin" send --config "$work/edge.toml" --state-directory "$work/edge" ||
    { echo "full-loop: ingestd send failed (log: $work/edge.log)" >&2; exit 1; }

# The backend archives within its linger time; wait for it.
want=$((before + n))
for _ in $(seq 100); do
    [ "$(rows)" -ge "$want" ] && [ "$(field "$work/backend" "$work/backend.toml" queued_records | cut -d' ' -f1)" = 0 ] && break
    sleep 0.1
done
got=$(rows)
# Stop the edge agent (it writes its final status) before reading its queue.
kill "$edge" 2>/dev/null || true
wait "$edge" 2>/dev/null || true
edge_queued=$(field "$work/edge" "$work/edge.toml" queued_records | cut -d' ' -f1)
backend_queued=$(field "$work/backend" "$work/backend.toml" queued_records | cut -d' ' -f1)
echo "full-loop: edge queue $edge_queued, backend queue $backend_queued, archive $got rows" >&2
if [ "$got" != "$want" ] || [ "$edge_queued" != 0 ] || [ "$backend_queued" != 0 ]; then
    echo "full-loop: the archive gained $((got - before)) rows, expected $n, with both queues empty (logs: $work/*.log)" >&2
    exit 1
fi
echo "full-loop: stored $n readings ($want in the archive in all)" >&2
