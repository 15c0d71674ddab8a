# `systemctl reload` with a broken configuration: the service goes on with
# the old one, and systemctl status, ingestd status (exit 1, the reason) and
# /metrics say that the reload was refused, until a good reload.

install_package /ci/ingestd.deb
write_test_configuration
systemctl enable --now ingestd >/dev/null 2>&1 || fail "systemctl enable --now ingestd failed"
pid="$(main_pid)"
cp /etc/ingestd/ingestd.toml /tmp/good.toml
sed -i 's/^overflow_policy = "block"$/overflow_policy = "spill"/' /etc/ingestd/ingestd.toml
grep -q spill /etc/ingestd/ingestd.toml || fail "could not break the configuration"
! ingestd check-config >/dev/null 2>&1 || fail "the broken configuration passes check-config"
systemctl reload ingestd || fail "systemctl reload failed"
wait_for 'ingestd status >/dev/null; [ $? = 1 ]' 10 || fail "ingestd status does not turn unhealthy after a refused reload: $(ingestd status)"
out="$(ingestd status 2>&1)"
grep -q "the last reload was refused" <<<"$out" || fail "ingestd status does not say the reload was refused: $out"
grep -q "overflow_policy" <<<"$out" || fail "ingestd status does not give the reason: $out"
ok "ingestd status: exit 1, 'the last reload was refused' with the reason"
[ "$(main_pid)" = "$pid" ] && systemctl is-active --quiet ingestd || fail "the service did not go on with its old configuration"
printf '{"sensor":"r","seq":1,"value":1}\n' | ingestd send || fail "the agent does not take readings after a refused reload"
ok "the service goes on with the old configuration (same pid, readings committed)"
wait_for 'systemctl status ingestd --no-pager | grep -q "reload refused"' 10 || fail "systemctl status does not show it: $(systemctl status ingestd --no-pager | head -5)"
ok "systemctl status: $(systemctl show -p StatusText --value ingestd)"
metrics="$(curl -sf http://127.0.0.1:9464/metrics)" || fail "no /metrics"
grep -qx 'ingestd_reload_refused 1' <<<"$metrics" || fail "/metrics lacks ingestd_reload_refused 1: $(grep reload <<<"$metrics")"
ok "/metrics: ingestd_reload_refused 1"
cp /tmp/good.toml /etc/ingestd/ingestd.toml
systemctl reload ingestd
wait_for 'ingestd status >/dev/null' 15 || fail "a good reload does not clear it: $(ingestd status)"
wait_for 'curl -sf http://127.0.0.1:9464/metrics | grep -qx "ingestd_reload_refused 0"' 10 || fail "/metrics still says refused after a good reload"
ok "a good reload clears it (status exit 0, ingestd_reload_refused 0)"
