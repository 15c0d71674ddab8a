#!/usr/bin/env bash
# Writes scripts/ingestd.symbol-order: the functions ingestd runs, in the
# order the release link should lay them out (scripts/build-release.sh gives
# it to lld as --symbol-ordering-file).
#
#   scripts/make-symbol-order.sh [INGESTD]
#
# Why: the kernel maps a program's code in 64 KB windows around each page it
# touches, so code run once at start-up, scattered through a 9.5 MB .text,
# kept 7.5 MB of it resident for as long as the agent ran (docs/
# BENCHMARKS.md, "Idle memory and code layout"). Laid out together, the code
# a running agent uses fills far fewer windows.
#
# How: runs the release build under callgrind (valgrind) in four scenarios
# and lists every function of the binary that ran, grouped by when it first
# matters:
#   1. start-up and 10 s idle with an HTTP upload configured;
#   2. 20,000 readings on stdin, uploaded, then drained;
#   3. the same uploaded with gzip;
#   4. a followed file of 20,000 readings, uploaded.
# Within a group, the functions that cost most come first. Names are mangled
# (lld matches them); a function renamed since the file was written is only
# left out of the order (the link stays correct, the layout less tight), so
# regenerate after large changes. Takes about a minute.
#
# INGESTD: a release build with one section per function (default: the one
# scripts/build-release.sh leaves in .build-release/). Needs valgrind and
# python3. Exit codes: 0 written, 1 a scenario or tool failed, 2 bad usage.
set -euo pipefail
case "${1:-}" in
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "make-symbol-order.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
esac
self="$(realpath "$0")"
cd "$(dirname "$self")/.."
ingestd="$(realpath "${1:-.build-release/release/ingestd}")"
[ -x "$ingestd" ] || { echo "make-symbol-order.sh: no ingestd at $ingestd: run scripts/build-release.sh first" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "make-symbol-order.sh: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
. bench/lib.sh

work="$(mktemp -d)"
receiver=""
agent=""
cleanup() {
    [ -z "$agent" ] || kill "$agent" 2>/dev/null || true
    [ -z "$receiver" ] || kill "$receiver" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
say() { [ -t 2 ] && echo "make-symbol-order.sh: $*" >&2 || true; }

make_varied_input "$work/readings.ndjson" 20000
python3 Tests/Support/ingest-test-server.py --fast --port-file "$work/port" >/dev/null 2>&1 &
receiver=$!
for _ in $(seq 200); do [ -s "$work/port" ] && break; sleep 0.05; done
port="$(cut -d' ' -f1 < "$work/port")"

config() {  # config NAME [EXTRA TOML]: a fresh state directory and the upload
    rm -rf "$work/state"
    { realistic_config | sed "s|^\[agent\]$|[agent]\nstate_directory = \"$work/state\"|"
      printf '[upload]\nurl = "http://127.0.0.1:%s/ingest/v1/batches"\n' "$port"
      printf '%b' "${2:-}"; } > "$work/$1.toml"
}
profile() {  # profile NAME: runs the agent under callgrind in the background
    valgrind --tool=callgrind --demangle=no --dump-instr=no --callgrind-out-file="$work/$1.out" \
        "$ingestd" run --config "$work/$1.toml" 2>>"$work/valgrind.log" &
    agent=$!
}
received() { python3 -c "import json,urllib.request;print(json.load(urllib.request.urlopen('http://127.0.0.1:$port/stats'))['unique'])"; }
wait_received() {  # wait_received N
    for _ in $(seq 1200); do [ "$(received)" -ge "$1" ] && return 0; sleep 0.5; done
    echo "make-symbol-order.sh: the receiver never got $1 readings; the agent's last words:" >&2
    tail -20 "$work/valgrind.log" >&2; exit 1
}

say "start-up and idle (about 25 s)"
config idle
sleep 30 | { profile idle; wait "$agent"; } &
idle=$!
sleep 25
pkill -TERM -f "$work/idle.toml" || true
wait "$idle" || true
say "stdin, uploaded"
config stdin
profile stdin < "$work/readings.ndjson"; wait "$agent"
say "stdin, uploaded with gzip"
config gzip 'gzip = true\n'
profile gzip < "$work/readings.ndjson"; wait "$agent"
say "a followed file, uploaded"
before="$(received)"
config follow "[[inputs]]\nkind = \"file\"\npaths = [\"$work/readings-follow.ndjson\"]\ntype = \"WeatherSensor\"\n"
profile follow < /dev/null
sleep 5
sed 's/"_id":"6741/"_id":"6742/' "$work/readings.ndjson" > "$work/readings-follow.ndjson"
wait_received "$((before + 20000))"
kill -TERM "$agent"; wait "$agent" || true
agent=""

# Written beside the profiles first: a failed run leaves the committed order as it was.
python3 - "$ingestd" "$work" idle stdin gzip follow > "$work/order" <<'PY'
import os, re, shutil, subprocess, sys
binary, work, scenarios = os.path.realpath(sys.argv[1]), sys.argv[2], sys.argv[3:]

def costs(path):
    """Self cost of each function of `binary` in a callgrind file.

    Names are compressed ("(id) name" the first time, "(id)" after); the
    cost line after "calls=" is a call's inclusive cost, not the caller's own."""
    names, objects, result = {}, {}, {}
    obj = fn = None
    after_call = False
    def name(table, text):
        text = text.strip()
        if text.startswith("("):
            key, _, rest = text.partition(")")
            if rest.strip():
                table[key] = rest.strip()
            return table.get(key)
        return text
    for line in open(path, errors="replace"):
        if line.startswith("ob="):
            obj = name(objects, line[3:])
        elif line.startswith("fn="):
            fn = name(names, line[3:])
        elif line.startswith("cob="):
            name(objects, line[4:])
        elif line.startswith("cfn="):
            name(names, line[4:])
        elif line.startswith("calls="):
            after_call = True
        elif line[:1].isdigit() or line[:1] in "+-*":
            if after_call:
                after_call = False
            elif obj and os.path.realpath(obj) == binary and fn:
                parts = line.split()
                if len(parts) >= 2:
                    result[fn] = result.get(fn, 0) + int(parts[1])
    return result

# A name defined in several files (a local helper such as "objectdestroyTm")
# pulls every copy forward, and with each the section that holds it. The
# standard library's regex parser and string algorithms come as one
# section each (0.5 and 0.4 MB) that a running agent never enters, so names
# they also define go last: those two sections land after all the code that
# runs, and the small copies that do run beside them. Callgrind marks
# recursion levels with "'N"; symbols have none.
static = os.path.join(os.path.dirname(os.path.realpath(shutil.which("swiftc"))), "../lib/swift_static/linux")
unsplit = set()
for archive in ("libswift_RegexParser.a", "libswift_StringProcessing.a"):
    listing = subprocess.run(["nm", "--defined-only", os.path.join(static, archive)], capture_output=True, text=True, check=True)
    unsplit.update(line.split()[-1] for line in listing.stdout.splitlines() if len(line.split()) == 3)
defined = set()
for line in subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout.splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[1] in "tTwW":
        defined.add(parts[2])
seen, order, last = set(), [], []
for scenario in scenarios:
    found = {}
    for fn, cost in costs(os.path.join(work, scenario + ".out")).items():
        fn = re.sub(r"'[0-9]+$", "", fn)
        found[fn] = found.get(fn, 0) + cost
    for fn, _ in sorted(found.items(), key=lambda item: -item[1]):
        if fn not in seen and fn in defined:
            seen.add(fn)
            (last if fn in unsplit else order).append(fn)
print("\n".join(order + last))
PY
count="$(wc -l < "$work/order")"
if [ "$count" -le 1000 ]; then
    echo "make-symbol-order.sh: only $count functions found: the profiles look wrong; the agent's last words:" >&2
    tail -20 "$work/valgrind.log" >&2; exit 1
fi
mv "$work/order" scripts/ingestd.symbol-order
echo "scripts/ingestd.symbol-order: $count functions"
