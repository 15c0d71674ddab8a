# journalctl -u ingestd: 5,000 bad lines give a few summarized lines, never
# one per line, and the journal reads well in its default view.

install_package /ci/ingestd.deb
write_test_configuration
systemctl enable --now ingestd >/dev/null 2>&1 || fail "systemctl enable --now ingestd failed"
before="$(journalctl -u ingestd -o cat | wc -l)"
rc=0; for i in $(seq 5000); do echo "{not json $i"; done | ingestd send 2>/dev/null || rc=$?
[ $rc = 65 ] || fail "5,000 bad lines: ingestd send exits $rc (expected 65)"
sleep 3
after="$(journalctl -u ingestd -o cat | wc -l)"
lines=$(( after - before ))
# The rejection log writes the first 10 of a reason per 60 s, then one
# summary line for the rest (it wrote 10 and a summary per 64 KiB chunk
# before: 22 lines here, one per line in a long flood).
[ "$lines" -le 12 ] || fail "5,000 bad lines gave $lines journal lines: $(journalctl -u ingestd -o cat | tail -20)"
journalctl -u ingestd -o cat | tail -n "$lines" | grep -q "more malformed_json rejections from" ||
    fail "no summary line ('… and N more malformed_json rejections'): $(journalctl -u ingestd -o cat | tail -n "$lines")"
ok "5,000 bad lines: $lines lines in the journal"
measured "journal lines for 5,000 bad lines = $lines"
