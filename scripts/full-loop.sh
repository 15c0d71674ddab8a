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
#
# The backend listens on 127.0.0.1:8480 (etc/backend.toml). Exit status: 0
# when the archive gained exactly N readings and both queues are empty; 1
# otherwise (the agents' logs are in LOOP_DIR); 2 on bad usage.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
case "${1:-}" in -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
n=${1:-5}
[[ "$n" =~ ^[0-9]+$ ]] || { echo "full-loop: N must be a number of readings, got '$n'" >&2; exit 2; }
bin=${INGESTD:-$root/.build/release/ingestd}
[ -x "$bin" ] || { echo "full-loop: no ingestd at $bin: build it first (swift build -c release) or set INGESTD" >&2; exit 2; }
work=${LOOP_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/ingestd-loop}
mkdir -p "$work"

backend_status() { "$bin" status --config "$root/etc/backend.toml" --state-directory "$work/backend" 2>/dev/null || true; }
uploaded() { backend_status | awk '$1 == "uploaded:" { print $2 }'; }

"$bin" run --config "$root/etc/backend.toml" --state-directory "$work/backend" --log-target stderr 2>>"$work/backend.log" &
backend=$!
trap 'kill "$backend" 2>/dev/null || true; wait "$backend" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    curl -sf -o /dev/null http://127.0.0.1:8480/healthz && break
    kill -0 "$backend" 2>/dev/null || { echo "full-loop: the backend did not start:" >&2; tail -5 "$work/backend.log" >&2; exit 1; }
    sleep 0.1
done
before=$(uploaded)
before=${before:-0}

# The example configuration, with its stdin input, plus where to upload.
{ cat "$root/etc/ingestd.toml"; printf '\n[upload]\nurl = "http://127.0.0.1:8480/ingest/v1/batches"\nlinger_ms = 50\n'; } >"$work/edge.toml"
echo "full-loop: $n readings -> edge ingestd ($work/edge) -> backend ingestd (127.0.0.1:8480) -> $work/backend/archive.sqlite" >&2
"$root/scripts/sample-sensor.sh" "$n" | "$bin" run --config "$work/edge.toml" --state-directory "$work/edge" --log-target stderr 2>>"$work/edge.log"
echo "full-loop: edge:    $("$bin" status --config "$work/edge.toml" --state-directory "$work/edge" 2>/dev/null | head -1 || true)" >&2

# The backend archives within its linger time; wait for it.
want=$((before + n))
for _ in $(seq 100); do
    [ "$(uploaded)" = "$want" ] && break
    sleep 0.1
done
echo "full-loop: backend: $(backend_status | head -1)" >&2
got=$(uploaded)
if [ "${got:-0}" != "$want" ]; then
    echo "full-loop: the archive gained $((${got:-0} - before)) readings, expected $n (logs: $work/*.log)" >&2
    exit 1
fi
echo "full-loop: stored $n readings ($want in the archive in all)" >&2
