#!/usr/bin/env bash
# Tests the Debian package under a real systemd: each scenario boots a fresh
# Debian 12 container with systemd 252 as PID 1 (systemd-nspawn), installs
# the package there with apt, and drives it as an operator would
# (systemctl, journalctl, ingestd send/status). The scenarios are the files
# in scripts/systemd-tests/ (NN-name.sh); their helpers are in lib.sh there.
#
#   scripts/test-systemd.sh [--deb FILE] [--previous-deb FILE] [--keep] [SCENARIO ...]
#
#   --deb FILE           the package to test (default: scripts/build-deb.sh)
#   --previous-deb FILE  the previous release's package, for the upgrade
#                        scenario (default: built from the commit in
#                        scripts/systemd-tests/previous-release, cached in
#                        .build-systemd/previous-<commit>/)
#   --keep               keep each scenario's output folder (results,
#                        journal) under .build-systemd/out/ even when it passes
#   SCENARIO             run only these (names without NN- and .sh)
#
# The container: the root is made once with mmdebstrap (Debian 12 minbase
# with systemd, dbus, python3, curl, sqlite3 and the package's libraries:
# ~35 s, ~235 MB) into .build-systemd/root and made again only when what
# it is made of changes; each boot gets a pristine copy of it (--volatile=overlay),
# no network (--private-network), the payload read-only at /ci and an output
# folder at /ci-out. A runner unit (ci-runner.service, Type=exec) runs the
# scenario once the system is up, saves the journal and ends the container
# with the scenario's exit code, which is the verdict.
#
# Not tested here: MemoryMax=, TasksMax= and CPUQuota= (accepted but not
# enforced in a container on this machine kind: its cgroup controllers are
# bound to v1 hierarchies).
#
# Needs root (systemd-nspawn, mmdebstrap), systemd-container and mmdebstrap.
# Exit codes: 0 every scenario passed, 1 one failed (its output and the
# journal's tail are printed), 2 bad usage.
set -euo pipefail
self="$(realpath "$0")"
cd "$(dirname "$self")/.."
repo="$PWD"
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$self"; }

deb="" previous_deb="" keep=0 only=()
while [ $# -gt 0 ]; do
    case "$1" in
        --deb|--previous-deb)
            [ $# -ge 2 ] || { echo "test-systemd.sh: $1 needs a file" >&2; exit 2; }
            case "$1" in --deb) deb="$(realpath "$2")" ;; *) previous_deb="$(realpath "$2")" ;; esac
            shift 2 ;;
        --keep) keep=1; shift ;;
        -h|--help) usage; exit 0 ;;
        -*) echo "test-systemd.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
        *) only+=("$1"); shift ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "test-systemd.sh: needs root (systemd-nspawn, mmdebstrap)" >&2; exit 1; }
for tool in systemd-nspawn mmdebstrap; do
    command -v "$tool" >/dev/null || { echo "test-systemd.sh: $tool is missing: apt-get install systemd-container mmdebstrap" >&2; exit 1; }
done
scenarios=()
for file in scripts/systemd-tests/[0-9][0-9]-*.sh; do
    name="$(basename "$file" .sh)"; name="${name#[0-9][0-9]-}"
    if [ ${#only[@]} -eq 0 ] || printf '%s\n' "${only[@]}" | grep -qx "$name"; then scenarios+=("$file"); fi
done
[ ${#scenarios[@]} -gt 0 ] || { echo "test-systemd.sh: no scenario matches: ${only[*]}" >&2; exit 2; }

work=".build-systemd"
mkdir -p "$work"

# --- The packages -------------------------------------------------------------
if [ -z "$deb" ]; then
    deb="$(realpath "$(scripts/build-deb.sh | tail -1)")"
fi
previous_commit="$(sed -n 's/^commit //p' scripts/systemd-tests/previous-release)"
if [ -z "$previous_deb" ]; then
    previous_deb="$repo/$work/previous-$previous_commit/ingestd.deb"
    if [ ! -f "$previous_deb" ]; then
        echo "test-systemd.sh: building the previous release ($previous_commit) for the upgrade scenario …" >&2
        tree="$work/previous-$previous_commit/src"
        rm -rf "$work/previous-$previous_commit"
        mkdir -p "$tree"
        # The commit's files (git archive: no worktree bookkeeping to clean up).
        git archive "$previous_commit" | tar -xf - -C "$tree"
        log="$repo/$work/previous-$previous_commit/build.log"
        (cd "$tree" && scripts/build-deb.sh --out "$repo/$work/previous-$previous_commit/dist" >"$log" 2>&1) ||
            { tail -40 "$log" >&2; echo "test-systemd.sh: building the previous release failed (above)" >&2; exit 1; }
        mv "$work/previous-$previous_commit"/dist/ingestd_*.deb "$previous_deb"
        rm -rf "$tree"
    fi
fi

# --- The root (once; again when what it is made of changes) -----------------
root="$work/root"
scripts/make-systemd-root.sh "$root"

# --- The scenarios, each in a fresh boot -------------------------------------
payload="$(mktemp -d /tmp/ingestd-systemd.XXXXXX)"
trap 'rm -rf "$payload"' EXIT
cp "$deb" "$payload/ingestd.deb"
cp "$previous_deb" "$payload/ingestd-previous.deb"
cp scripts/systemd-tests/*.sh scripts/systemd-tests/*.py "$payload/"
cat > "$payload/run-scenario.sh" <<'RUNNER'
set -uo pipefail
cd /ci
source /ci/lib.sh
source "/ci/$(cat /ci-out/scenario)"
RUNNER
passed=0 failed=()
for file in "${scenarios[@]}"; do
    name="$(basename "$file" .sh)"
    out="$repo/$work/out/$name"
    rm -rf "$out"
    mkdir -p "$out"
    basename "$file" > "$out/scenario"
    started=$(date +%s)
    rc=0
    timeout -k 10 600 systemd-nspawn --quiet --register=no --keep-unit --directory="$root" \
        --volatile=overlay --console=pipe --private-network --machine="ingestd-test-$$" \
        --bind-ro="$payload:/ci" --bind="$out:/ci-out" \
        --boot -- systemd.wants=ci-runner.service </dev/null >"$out/console.txt" 2>&1 || rc=$?
    seconds=$(( $(date +%s) - started ))
    if [ "$rc" = 0 ] && grep -q '^ok ' "$out/results.txt" 2>/dev/null && ! grep -q '^FAIL' "$out/results.txt"; then
        passed=$((passed + 1))
        sed 's/^/    /' "$out/results.txt"
        echo "ok - $name (${seconds} s)"
        [ "$keep" = 1 ] || rm -rf "$out"
    else
        failed+=("$name")
        why="exit $rc"; [ "$rc" = 124 ] && why="timed out"
        echo "FAIL - $name ($why after ${seconds} s); its output:"
        sed 's/^/    /' "$out/results.txt" 2>/dev/null || true
        echo "    --- the container's console:"
        tail -20 "$out/console.txt" | sed 's/^/    /'
        echo "    --- the journal's last 60 lines (all of it: $out/journal.txt):"
        tail -60 "$out/journal.txt" 2>/dev/null | sed 's/^/    /' || true
    fi
done
echo "scenarios: ${passed} passed, ${#failed[@]} failed${failed[*]:+ (${failed[*]})}"
[ ${#failed[@]} -eq 0 ]
