# The socket belongs to the system group "ingestd-send" (made on install): a user
# in it sends readings without root; a user outside it is told why not.

install_package /ci/ingestd.deb
write_test_configuration
getent group ingestd-send >/dev/null || fail "the install did not create the system group 'ingestd-send'"
[ "$(getent group ingestd-send | cut -d: -f3)" -lt 1000 ] || fail "the group 'ingestd-send' is not a system group"
ok "the install made the system group 'ingestd-send'"
systemctl enable --now ingestd >/dev/null 2>&1 || fail "systemctl enable --now ingestd failed"
[ "$(stat -c '%G %a' /run/ingestd/ingestd.sock)" = "ingestd-send 660" ] ||
    fail "the socket is not group ingestd-send, mode 660: $(stat -c '%U:%G %a' /run/ingestd/ingestd.sock)"
useradd --create-home --groups ingestd-send sensor
useradd --create-home outsider
out="$(printf '{"sensor":"u","seq":%d,"value":2.5}\n' 1 2 | su sensor -c 'ingestd send' 2>&1)" ||
    fail "ingestd send as a user in group ingestd-send failed: $out"
ok "a user in group ingestd-send sends readings"
rc=0; out="$(printf '{"sensor":"o","seq":3,"value":2.5}\n' | su outsider -c 'ingestd send' 2>&1)" || rc=$?
[ $rc = 74 ] || fail "a user outside the group: exit $rc (expected 74): $out"
grep -q "Permission denied" <<<"$out" || fail "a user outside the group is not told why: $out"
ok "a user outside the group gets exit 74 and 'Permission denied'"
[ "$(queued_sequence_numbers | tr '\n' ' ')" = "1 2 " ] || fail "the queue does not hold exactly readings 1 2"

systemctl stop ingestd.service ingestd.socket
DEBIAN_FRONTEND=noninteractive apt-get purge -y -q ingestd >/ci-out/apt-purge.log 2>&1 || fail "apt-get purge failed"
! getent group ingestd-send >/dev/null || fail "the purge left the group 'ingestd-send'"
ok "apt purge removes the group"
