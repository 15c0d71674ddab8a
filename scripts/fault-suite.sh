#!/usr/bin/env bash
# The fault-injection suite in one command (docs/RELIABILITY.md).
#
#   scripts/fault-suite.sh            short run (~4 minutes; CI runs the same parts)
#   scripts/fault-suite.sh --full     full run (~35 minutes): release binary,
#                                     100 kill -9 and 100 power-cut rounds, the
#                                     backend down for 10 minutes, 200,000
#                                     readings through a flapping network,
#                                     5 minutes of fuzzing per parser
#   scripts/fault-suite.sh --help
#
# Runs, in order: the end-to-end scenarios of scripts/fault-suite.py against
# the built ingestd (its table goes to stdout; with --full also to
# bench/results/fault-suite.md); the crash, disk-full, hostile-input, shutdown
# and upload-fault tests of the Swift suite; the parser fuzz targets
# (scripts/fuzz.sh). Stops at the first part that fails.
# Extra arguments after -- go to fault-suite.py (e.g. -- --seed 7 --keep).
# Exit codes: 0 everything passed; 1 a scenario, test or fuzz target failed;
# 2 bad usage or a missing tool.
set -euo pipefail
cd "$(dirname "$0")/.."

full=false
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --full) full=true ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        --) shift; extra=("$@"); break ;;
        *) echo "fault-suite.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

if $full; then
    scripts/build-release.sh
    binary=dist/ingestd
    mkdir -p bench/results
    scripts/fault-suite.py --full --binary "$binary" --markdown bench/results/fault-suite.md "${extra[@]}"
    fuzz_seconds=300
else
    swift build --product ingestd
    binary=.build/debug/ingestd
    scripts/fault-suite.py --binary "$binary" "${extra[@]}"
    fuzz_seconds=20
fi

swift test --filter 'QueueCrashTests|DiskFullTests|HostileInputTests|ShutdownRaceTests|UploadTests|FileInputTests'
scripts/fuzz.sh --seconds "$fuzz_seconds"
