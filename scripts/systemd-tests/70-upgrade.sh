# Upgrade from the previous release (scripts/systemd-tests/previous-release)
# with 100,000 readings queued and the backend down: nothing lost, the
# edited conffile kept, the service restarted (it ran) and collecting again.
# An upgrade of a stopped service starts nothing. `apt remove` keeps the
# queue; `apt purge` leaves nothing.

files_now() {
    find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp -o -path /ci -o -path /ci-out \
        -o -path /var/log -o -path /var/cache -o -path /var/lib/apt -o -path /var/lib/dpkg -o -path /var/lib/systemd \
        -o -path /root -o -path '/etc/*-' -o -path /etc/ld.so.cache \) -prune -o -print | sort
}
before="$(files_now)"

install_package /ci/ingestd-previous.deb
previous="$(dpkg-query -W -f '${Version}' ingestd)"
write_test_configuration
cat >> /etc/ingestd/ingestd.toml <<'TOML'

# the operator's edit: the backend is down (nothing listens on port 9)
[upload]
url = "http://127.0.0.1:9/ingest/v1/batches"
retry_cap_ms = 2000
TOML
systemctl enable --now ingestd >/dev/null 2>&1 || fail "the previous release does not start: $(journalctl -u ingestd -o cat | tail -5)"
python3 /ci/sensor.py --count 100000 --interval 0 | ingestd send || fail "ingestd send (previous release) failed"
ok "previous release ($previous): 100,000 readings queued, the backend down"
pid="$(main_pid)"

started=$(now_ms)
install_package /ci/ingestd.deb
measured "upgrade (apt install) with 100,000 queued = $(( $(now_ms) - started )) ms"
grep -q "the operator's edit" /etc/ingestd/ingestd.toml || fail "the upgrade replaced the edited conffile"
ok "the edited conffile is kept"
wait_for 'systemctl is-active --quiet ingestd' 20 || fail "the service is not running after the upgrade: $(journalctl -u ingestd -o cat | tail -10)"
[ "$(main_pid)" != "$pid" ] || fail "the upgrade did not restart the running service"
ok "the running service was restarted by the upgrade"
queued_sequence_numbers | expect_each_once 100000 || fail "readings lost or stored twice by the upgrade"
ok "all 100,000 readings still queued, each once"
printf '{"sensor":"after","seq":100001,"value":1}\n' | ingestd send || fail "the upgraded agent does not take readings"
ok "the upgraded agent collects again"

DEBIAN_FRONTEND=noninteractive apt-get remove -y -q ingestd >/ci-out/apt-remove.log 2>&1 || fail "apt-get remove failed"
! systemctl is-active --quiet ingestd.service ingestd.socket || fail "apt remove left the service or socket running"
[ -s /var/lib/private/ingestd/queue.sqlite ] || fail "apt remove deleted the queue"
[ -f /etc/ingestd/ingestd.toml ] || fail "apt remove deleted the configuration"
ok "apt remove: service stopped, queue and configuration kept"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -q ingestd >/ci-out/apt-purge.log 2>&1 || fail "apt-get purge failed"
left="$(diff <(printf '%s\n' "$before") <(files_now) | grep '^>' || true)"
[ -z "$left" ] || fail "apt purge left files behind: $left"
ok "apt purge leaves nothing"

install_package /ci/ingestd-previous.deb
# A configuration with a problem this version only holds uploads for
# (influxdb sink, a type without a timestamp field): the upgrade says so.
write_test_configuration
printf '\n[upload]\nsink = "influxdb"\nurl = "http://127.0.0.1:9/write"\n' >> /etc/ingestd/ingestd.toml
install_package /ci/ingestd.deb
! systemctl is-active --quiet ingestd.service ingestd.socket || fail "upgrading a service that was not running started it"
ok "an upgrade of a service that does not run starts nothing"
grep -q "ingestd: /etc/ingestd/ingestd.toml has problems with ingestd" /ci-out/apt-install.log ||
    fail "the upgrade did not tell about the configuration's problems: $(cat /ci-out/apt-install.log)"
grep -q "declares no timestamp field" /ci-out/apt-install.log || fail "the upgrade's notice does not say what is wrong"
ok "the upgrade tells the operator about a configuration problem"
systemctl start ingestd || fail "a configuration that holds uploads stops the agent: $(journalctl -u ingestd -o cat | tail -5)"
printf '{"sensor":"h","seq":1,"value":1}\n' | ingestd send || fail "the agent with held uploads does not collect"
wait_for '{ ingestd status || true; } | grep -q "declares no timestamp field"' 20 || fail "status does not say why uploads are held: $(ingestd status)"
ok "it starts, collects, and status says why uploads are held"
