# A sensor pipe (python3 sensor.py | ingestd send, one reading each 10 ms)
# through ten `systemctl reload` and two `systemctl restart`: the pipe never
# dies, nothing is lost and nothing stored twice; with and without _id.

install_package /ci/ingestd.deb
write_test_configuration
systemctl enable --now ingestd >/dev/null 2>&1 || fail "systemctl enable --now ingestd failed"
count=3000
for ids in no yes; do
    flag=""; [ $ids = yes ] && flag="--ids"
    systemctl stop ingestd.service && rm -f /var/lib/private/ingestd/queue.sqlite* && systemctl start ingestd.service ||
        fail "cannot empty the queue between runs"
    ( python3 /ci/sensor.py --count $count --interval 0.01 $flag | ingestd send; echo "pipe=${PIPESTATUS[*]}" > /tmp/pipe.rc ) 2>/tmp/send.err &
    pipe=$!
    reload_ms=()
    for round in $(seq 12); do
        sleep 1.5
        pid="$(main_pid)"
        if [ "$round" = 5 ] || [ "$round" = 10 ]; then
            started=$(now_ms)
            systemctl restart ingestd || fail "systemctl restart failed"
            measured "restart (ids=$ids) = $(( $(now_ms) - started )) ms"
        else
            readies="$(journalctl -u ingestd -o cat | grep -c '^ingestd is ready')"
            started=$(now_ms)
            systemctl reload ingestd || fail "systemctl reload failed"
            # systemd 252 returns when ExecReload= (kill -HUP) exits: wait for the agent's next "ready".
            wait_for '[ "$(journalctl -u ingestd -o cat | grep -c "^ingestd is ready")" -gt "$readies" ]' 10 ||
                fail "the reload did not take effect within 10 s"
            reload_ms+=($(( $(now_ms) - started )))
        fi
    done
    wait $pipe
    rc="$(cat /tmp/pipe.rc)"
    [ "$rc" = "pipe=0 0" ] || { cat /tmp/send.err; fail "the sensor pipe did not survive (ids=$ids): exit statuses $rc"; }
    measured "reload (ids=$ids) = ${reload_ms[*]} ms"
    queued_sequence_numbers | expect_each_once $count || { tail -5 /tmp/send.err; fail "readings lost or stored twice (ids=$ids)"; }
    ok "sensor pipe (ids=$ids): 10 reloads and 2 restarts, the pipe lived, $count readings each stored once"
done
