#!/usr/bin/env bash
# Builds ingestd on the platform's executors (INGESTD_EXECUTORS=platform:
# libdispatch, what a Swift before 6.3 or a renamed executor SPI leaves) and
# runs the tests that drive the binary hardest against it: stdin, files,
# upload with retries, systemd notify/watchdog/journal, shutdown races, the
# HTTP input. The rest of the suite runs on ingestd's own executors in
# `swift test`; together CI covers both builds.
#
#   scripts/test-platform-executors.sh    # after `swift test` (reuses its test build)
#
# Checks first that the fallback build really lacks ingestd's executors.
# Exit codes: 0 passed, 1 a build or a test failed, 2 bad usage.
set -euo pipefail
self="$(realpath "$0")"
cd "$(dirname "$self")/.."

case "${1:-}" in
    "") ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$self"; exit 0 ;;
    *) echo "test-platform-executors.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

scratch=.build-platform-executors
echo "test-platform-executors: building ingestd on the platform's executors ($scratch)" >&2
INGESTD_EXECUTORS=platform swift build --scratch-path "$scratch" --product ingestd >&2
binary="$(INGESTD_EXECUTORS=platform swift build --scratch-path "$scratch" --show-bin-path)/ingestd"
if nm "$binary" | grep -q PoolTaskExecutor; then
    echo "test-platform-executors: $binary still holds ingestd's own executors (PoolTaskExecutor)" >&2
    exit 1
fi
INGESTD_BINARY="$binary" swift test --skip-build \
    --filter 'StdinIngestTests|FileInputTests|UploadTests|SystemdTests|ShutdownRaceTests|HTTPInputTests'
