# Inside the memory VM (scripts/test-memory-vm.sh), run by ci-runner.service
# once systemd 252 is up as PID 1: installs the package, then for each
# limit in /ci/params runs the packaged unit with a MemoryMax= drop-in:
#   drain    a backlog of READINGS readings (made by the host) uploaded
#            into the SQLite archive until the queue is empty;
#   gateway  the HTTP input under CLIENTS fleet-load clients for LOAD_SECONDS.
# One line per run on stdout (/ci-out/results.txt), "RUN kind limit k=v…",
# read by the host. Exit 1 when the package cannot be installed.
set -uo pipefail
. /ci/params
dpkg -i /ci/ingestd.deb >/ci-out/dpkg.log 2>&1 || { echo "FAIL dpkg -i: $(tail -2 /ci-out/dpkg.log)"; exit 1; }
systemctl stop ingestd.service
cgroup=/sys/fs/cgroup/system.slice/ingestd.service
dropin=/etc/systemd/system/ingestd.service.d

# The service's state: ActiveState, Result, NRestarts, ExecMainStatus.
service_state() {
    systemctl show ingestd.service -p ActiveState -p Result -p NRestarts -p ExecMainStatus |
        awk -F= '{ value[$1] = $2 } END { printf "state=%s result=%s restarts=%s exit=%s", value["ActiveState"], value["Result"], value["NRestarts"], value["ExecMainStatus"] }'
}

# The cgroup's anonymous memory (memory.stat "anon": what the kernel cannot
# reclaim, unlike memory.peak's page cache), its largest value sampled
# every half second into /tmp/anon-peak while a run lasts.
sample_anon() {
    local most=0 now
    while :; do
        now=$(awk '$1 == "anon" { print $2 }' "$cgroup/memory.stat" 2>/dev/null)
        if [ -n "$now" ] && [ "$now" -gt "$most" ]; then most=$now; echo "$most" >/tmp/anon-peak; fi
        sleep 0.5
    done
}
sampler=""

# Starts the unit with MemoryMax=$2 on configuration $1 and a fresh state
# directory (holding the backlog when $3 is set).
start_with() {
    systemctl stop ingestd.service
    systemctl reset-failed ingestd.service 2>/dev/null
    mkdir -p "$dropin"
    printf '[Service]\nMemoryMax=%s\n' "$2" >"$dropin/memory.conf"
    systemctl daemon-reload
    cp "$1" /etc/ingestd/ingestd.toml
    rm -rf /var/lib/private/ingestd /var/lib/ingestd
    if [ -n "${3:-}" ]; then
        mkdir -p /var/lib/private/ingestd && chmod 0700 /var/lib/private /var/lib/private/ingestd
        cp /ci/backlog/* /var/lib/private/ingestd/
    fi
    journal_from=$(date '+%Y-%m-%d %H:%M:%S')
    systemctl start ingestd.service
    echo 0 >/tmp/anon-peak
    sample_anon &
    sampler=$!
}

# What the run left: peak memory, OOM kills, restarts, and the agent's
# last error in the journal.
outcome() {
    local peak=unknown kills=unknown anon
    [ -n "$sampler" ] && kill "$sampler" 2>/dev/null && wait "$sampler" 2>/dev/null
    sampler=""
    anon=$(awk '{ printf "%.1f", $1 / 1048576 }' /tmp/anon-peak)
    [ -r "$cgroup/memory.peak" ] && peak=$(awk '{ printf "%.1f", $1 / 1048576 }' "$cgroup/memory.peak")
    [ -r "$cgroup/memory.events" ] && kills=$(awk '$1 == "oom_kill" { print $2 }' "$cgroup/memory.events")
    local oom_journal
    oom_journal=$(journalctl -k --since "$journal_from" --no-pager 2>/dev/null | grep -c 'Memory cgroup out of memory' || true)
    printf 'peak_mib=%s anon_peak_mib=%s oom_kill=%s oom_kernel=%s %s' "$peak" "$anon" "${kills:-0}" "$oom_journal" "$(service_state)"
    local said
    # The agent's own first error (not systemd's lines about the unit).
    said=$(journalctl _SYSTEMD_UNIT=ingestd.service --since "$journal_from" --no-pager -o cat -p err 2>/dev/null | head -1 | tr -d '"')
    [ -n "$said" ] && printf ' said="%s"' "$said"
    echo
}

for limit in $DRAIN_LIMITS; do
    start_with /ci/drain.toml "$limit" backlog
    started=$(date +%s)
    queued=unknown
    while [ $(($(date +%s) - started)) -lt "$TIMEOUT" ]; do
        queued=$(ingestd queue stats --config /etc/ingestd/ingestd.toml --state-directory /var/lib/private/ingestd 2>/dev/null |
            sed -n 's/^ *queued: *\([0-9,]*\).*/\1/p' | tr -d ,)
        [ "$queued" = 0 ] && break
        [ "$(systemctl show ingestd.service -p NRestarts --value)" -gt 0 ] && break
        systemctl is-failed --quiet ingestd.service && break
        sleep 2
    done
    seconds=$(($(date +%s) - started))
    archived=$(sqlite3 /var/lib/private/ingestd/archive.sqlite 'SELECT count(*) FROM WeatherSensor' 2>/dev/null || echo 0)
    echo "RUN drain $limit seconds=$seconds queued=${queued:-unknown} archived=$archived $(outcome)"
done

for limit in $GATEWAY_LIMITS; do
    start_with /ci/gateway.toml "$limit"
    for _ in $(seq 100); do curl -fs -o /dev/null http://127.0.0.1:8480/healthz && break; sleep 0.5; done
    load=$(/ci/bin/fleet-load 8480 "$(cat /ci/api-key)" "$CLIENTS" "$LOAD_SECONDS" 300 2>/dev/null | tail -1)
    stored=$(echo "$load" | sed -n 's/.*"records":\([0-9]*\).*/\1/p')
    statuses=$(echo "$load" | sed -n 's/.*"statuses":\({[^}]*}\).*/\1/p' | tr -d ' "')
    echo "RUN gateway $limit clients=$CLIENTS seconds=$LOAD_SECONDS stored=${stored:-0} statuses=${statuses:-none} $(outcome)"
done
systemctl stop ingestd.service
echo "DONE"
