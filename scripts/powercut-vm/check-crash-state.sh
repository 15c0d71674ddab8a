#!/usr/bin/env bash
# One crash state of scripts/test-powercut-replay.sh, checked. Run by
# write-log-replay with CRASH_IMAGE (the state's disk image, ours to
# change), CRASH_STATE (its name) and CRASH_REQUIRED_MARK ("batch-N": every
# reading of batches 1…N was confirmed by `ingestd send` before the cut).
#
#   check-crash-state.sh INGESTD CONFIG_TEMPLATE
#
# The state passes when: e2fsck replays the ext4 journal and finds nothing
# it cannot mend; `ingestd verify` accepts the queue as it is (no repair);
# every reading of batches 1…N is in the queue or the archive; no reading
# is twice in the queue or twice in the archive (one in each is what a
# re-upload after the cut dedups); no reading is garbled (its device and
# value follow from its number). Exit 0 passed, 1 failed (the reason on
# stderr).
set -uo pipefail
ingestd=$1 template=$2
state=$(mktemp -d "${TMPDIR:-/tmp}/crash-state.XXXXXX")
trap 'rm -rf "$state"' EXIT
failed() {
    echo "$CRASH_STATE: $*" >&2
    exit 1
}

e2fsck -fy "$CRASH_IMAGE" >"$state/e2fsck.log" 2>&1
status=$?
[ "$status" -le 1 ] || failed "e2fsck could not mend the file system (exit $status): $(tail -3 "$state/e2fsck.log" | tr '\n' ' ')"
mkdir "$state/fs"
debugfs -R "rdump / $state/fs" "$CRASH_IMAGE" >"$state/debugfs.log" 2>&1 || failed "debugfs could not copy the files out"

required=0
case "$CRASH_REQUIRED_MARK" in batch-*) required=${CRASH_REQUIRED_MARK#batch-} ;; esac
if [ ! -e "$state/fs/queue.sqlite" ]; then
    [ "$required" = 0 ] && exit 0  # the agent had not made its queue yet
    failed "no queue file, though batches 1…$required were confirmed"
fi
sed -e "s|/var/lib/ingestd|$state/fs|g" -e "s|/run/ingestd/|$state/|g" -e "s/@DURABILITY@/power_loss_safe/" \
    "$template" >"$state/ingestd.toml"
"$ingestd" verify --config "$state/ingestd.toml" >"$state/verify.log" 2>&1 \
    || failed "ingestd verify refused the queue: $(tail -2 "$state/verify.log" | tr '\n' ' ')"
{
    "$ingestd" queue peek --config "$state/ingestd.toml" --limit 100000000 | sed 's/^/QUEUED /'
    if [ -e "$state/fs/archive.sqlite" ] \
        && [ -n "$(sqlite3 "$state/fs/archive.sqlite" "SELECT name FROM sqlite_master WHERE name = 'Reading'")" ]; then
        sqlite3 "$state/fs/archive.sqlite" \
            "SELECT 'ARCHIVED {\"_id\":\"' || _id || '\",\"deviceId\":\"' || deviceId || '\",\"value\":' || value || '}' FROM Reading"
    fi
} >"$state/found" 2>"$state/read.log" || failed "reading the queue or the archive failed: $(tail -2 "$state/read.log" | tr '\n' ' ')"

awk -v required=$((required * 25)) '
    function field(name,    at) {
        if (!match($0, "\"" name "\":\"?[^,\"}]*")) return ""
        at = substr($0, RSTART + length(name) + 3, RLENGTH - length(name) - 3)
        sub(/^"/, "", at)
        return at
    }
    function hex(text,    i, n) {
        n = 0
        for (i = 1; i <= length(text); i++) n = n * 16 + index("0123456789abcdef", substr(text, i, 1)) - 1
        return n
    }
    {
        id = field("_id")
        if (seen[$1, id]++) { print "reading " id " is twice in the " ($1 == "QUEUED" ? "queue" : "archive"); bad++ }
        n = hex(substr(id, 9))
        if (length(id) != 24 || field("deviceId") != "d" (n % 7) || field("value") + 0 != n + 0.5) {
            print "garbled: " $0; bad++
        }
        present[n] = 1
    }
    END {
        for (n = 1; n <= required; n++) if (!(n in present)) { missing++; if (missing <= 3) print "confirmed reading " n " is missing" }
        if (missing) print missing " of " required " confirmed readings missing"
        exit (bad || missing) ? 1 : 0
    }' "$state/found" >"$state/verdict" || failed "$(head -5 "$state/verdict" | tr '\n' ' ')"
