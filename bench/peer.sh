#!/usr/bin/env bash
# ingestd measured side by side with Fluent Bit (issue 43): builds Fluent
# Bit from the source tree given (bench/peer/build-fluent-bit.sh: the
# fluent/fluent-bit repository at tag v5.1.1) and ingestd's release build,
# then runs bench/peer.py: both agents on the same readings (random
# values, unique _ids, ISO timestamps), the same loopback receiver, rounds
# interleaved, every round printed, medians and ratios per scenario at the
# end (its --help lists the scenarios).
#
#   bench/peer.sh FLUENT_BIT_SOURCE [ROUNDS] [DIR]
#       ROUNDS default 5; DIR default /var/tmp/edgeingest-peer (on the
#       real disk: device bytes are a result)
#   INGESTD=path   another ingestd build (default: swift build -c release)
#   ONLY=e2e,gzip  some scenarios (default: all)
#   READINGS=N BACKLOG=N   default 1,000,000 and 2,000,000
#
#   UPLOAD_SET="linger_ms=50 max_records=2000"   ingestd [upload] settings
#                other than the defaults, to try a new default
#
# Both agents read their stdin from a pipe (`cat FILE |`), as from a
# sensor script: Fluent Bit's stdin input cannot poll a regular file
# (epoll refuses it) and reads nothing from one. Results and how they were
# run: docs/BENCHMARKS.md, "Side by side with Fluent Bit (issue 43)".
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
bench_usage "$0" "$@"
source=${1:?usage: bench/peer.sh FLUENT_BIT_SOURCE [ROUNDS] [DIR]}
rounds=${2:-5}
require_count ROUNDS "$rounds"
dir=${3:-/var/tmp/edgeingest-peer}
mkdir -p "$dir"
fluent_bit=$(bench/peer/build-fluent-bit.sh "$source" "$dir/build")
if [ -z "${INGESTD:-}" ]; then
    swift build -c release --product ingestd >/dev/null
    INGESTD=.build/release/ingestd
fi
# The receiver's own limit (no agent), printed beside the backlog drains.
cc -O2 -o "$dir/post" bench/curl-limit/post.c -lcurl
echo "ingestd $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)') ($INGESTD); $("$fluent_bit" --version | head -1) ($fluent_bit)"
exec python3 bench/peer.py --ingestd "$INGESTD" --fluent-bit "$fluent_bit" --dir "$dir" --rounds "$rounds" \
    --readings "${READINGS:-1000000}" --backlog "${BACKLOG:-2000000}" --post "$dir/post" ${ONLY:+--only "$ONLY"} \
    $(for setting in ${UPLOAD_SET:-}; do printf -- '--upload-set %s ' "$setting"; done)
