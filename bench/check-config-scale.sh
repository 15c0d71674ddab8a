#!/usr/bin/env bash
# How check-config's time grows with the size of the configuration: many
# record types, and many inputs. Linear means each doubling roughly
# doubles the time (issue 27: 200,000 types used to take over a minute).
#
#   bench/check-config-scale.sh [path/to/ingestd]   (default: a release build)
set -euo pipefail
cd "$(dirname "$0")/.."
binary="${1:-}"
if [ -z "$binary" ]; then
    swift build -c release --product ingestd >/dev/null
    binary=.build/release/ingestd
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

measure() { # kind count
    local file="$work/$1-$2.toml"
    python3 - "$1" "$2" >"$file" <<'PY'
import sys
kind, n = sys.argv[1], int(sys.argv[2])
if kind == "types":
    for i in range(n):
        print(f'[types.T{i}]\nx = "int"')
else:
    print('[types.T]\nx = "int"')
    for i in range(n):
        print(f'[[inputs]]\nkind = "file"\npaths = ["/srv/in/f{i}.ndjson"]\ntype = "T"')
PY
    local seconds
    seconds=$(python3 -c 'import subprocess, sys, time
t = time.monotonic()
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(f"{time.monotonic() - t:.2f}")' "$binary" check-config --config "$file")
    echo "$1 $2 $seconds"
}

echo "kind count seconds"
for n in 25000 50000 100000 200000; do measure types "$n"; done
for n in 10000 20000 40000 80000; do measure inputs "$n"; done
