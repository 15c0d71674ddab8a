# The watchdog: the agent stopped with SIGSTOP is restarted by systemd
# within WatchdogSec (plus its abort timeout), and nothing queued is lost.

install_package /ci/ingestd.deb
write_test_configuration
systemctl enable --now ingestd >/dev/null 2>&1 || fail "systemctl enable --now ingestd failed"
python3 /ci/sensor.py --count 1000 --interval 0 | ingestd send || fail "ingestd send failed"
watchdog_us="$(systemctl show -p WatchdogUSec --value ingestd)"
pid="$(main_pid)"
started=$(now_ms)
kill -STOP "$pid"
# WatchdogSec, then SIGABRT, which systemd follows with SIGCONT, so even a
# stopped agent dies at once (measured: 32 s with or without
# TimeoutAbortSec=), then RestartSec: the bound is WatchdogSec + RestartSec
# + 15 s.
seconds() {
    local total=0 part
    for part in $(systemctl show -p "$1" --value ingestd); do
        case "$part" in *min) total=$((total + ${part%min} * 60)) ;; *ms) ;; *s) total=$((total + ${part%s})) ;; esac
    done
    echo "$total"
}
bound=$(( $(seconds WatchdogUSec) + $(seconds RestartUSec) + 15 ))
wait_for '[ "$(main_pid)" != "$pid" ] && [ "$(main_pid)" != 0 ] && systemctl is-active --quiet ingestd' "$bound" ||
    fail "systemd did not restart the frozen agent within $bound s"
restarted=$(( $(now_ms) - started ))
ok "the frozen agent was restarted by systemd after $restarted ms (WatchdogSec=$watchdog_us)"
measured "SIGSTOP to a new running agent = $restarted ms"
journalctl -u ingestd -o cat | grep -qi "watchdog timeout" || fail "the journal does not say it was the watchdog"
queued_sequence_numbers | expect_each_once 1000 || fail "readings lost or stored twice across the watchdog restart"
ok "the 1000 queued readings are all there, once"
