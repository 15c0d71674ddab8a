#!/bin/sh
# PID 1 of the power-cut VM (scripts/test-powercut-vm.sh). The kernel
# command line says what this boot does:
#   powercut.mode=write  start the agent and send readings one at a time
#                        with `ingestd send`, printing "CONFIRMED <_id>" on
#                        the console after each exit 0 (committed), until
#                        the host kills the VM: the power cut;
#   powercut.mode=check  the boot after the cut: verify the queue files (no
#                        repair), run the agent (and the gateway) until the
#                        queues are drained into the archive, then print
#                        what is where;
#   powercut.upload=gateway  the agent uploads to a gateway in the same VM
#                        (its own queue and archive: gateway.toml), which
#                        the cut hits too; =archive: to an archive on the
#                        agent's disk;
#   powercut.mode=record the agent's state directory on the second disk
#                        through dm-log-writes (the log on the third disk):
#                        powercut.batches batches through `ingestd send`,
#                        a mark "batch-N" in the log after each exit 0, the
#                        queue drained into the archive, then a clean
#                        shutdown (scripts/test-powercut-replay.sh replays
#                        the log to every crash state).
# Everything the host reads is a whole console line starting with a word
# in capitals; a line cut by the power cut is ignored.
export PATH=/bin:/sbin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /run/ingestd /tmp /var/lib/ingestd
mount -t tmpfs tmp /run
mkdir -p /run/ingestd
arg() { sed -n "s/.*powercut\.$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
mode=$(arg mode)
round=$(arg round)
upload=$(arg upload)
config=/etc/ingestd/ingestd-$(arg durability)-${upload:-archive}.toml
gateway_config=/etc/ingestd/gateway.toml
ifconfig lo 127.0.0.1 up
echo "BOOTED $mode $round"

# The negative control: an agent whose syncs do nothing (nofsync.c).
[ "$(arg nofsync)" = 1 ] && [ "$mode" != check ] && export LD_PRELOAD=/usr/lib/nofsync.so

start_agent() {
    ingestd run --config "$config" >>/var/log/agent.log 2>&1 &
    agent=$!
    n=0
    while [ ! -S /run/ingestd/ingestd.sock ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
}

# The gateway the agent uploads to (powercut.upload=gateway), listening
# on 127.0.0.1:8480 once this returns.
start_gateway() {
    [ "$upload" = gateway ] || return 0
    ingestd run --config "$gateway_config" >>/var/log/gateway.log 2>&1 &
    gateway=$!
    n=0
    until wget -q -O /dev/null http://127.0.0.1:8480/healthz 2>/dev/null || [ $n -ge 600 ]; do
        sleep 0.1
        n=$((n + 1))
    done
}

# Batch N of 25 readings, _ids from the round and the reading's number.
make_batch() {
    : >/tmp/batch
    for i in $(seq $((($1 - 1) * 25 + 1)) $(($1 * 25))); do
        printf '{"_id":"%08x%016x","deviceId":"d%d","value":%d.5}\n' "$round" "$i" $((i % 7)) "$i" >>/tmp/batch
    done
}

# Waits until the agent with configuration $1 uploaded everything queued
# (at most 2 minutes); sets queued to what is left.
wait_drained() {
    n=0
    while [ $n -lt 600 ]; do
        queued=$(ingestd queue stats --config "$1" 2>/dev/null | sed -n 's/^ *queued: *\([0-9,]*\).*/\1/p' | tr -d ,)
        [ "$queued" = 0 ] && break
        sleep 0.2
        n=$((n + 1))
    done
}

if [ "$mode" = write ]; then
    mkdir -p /var/lib/sensor
    : >/var/lib/sensor/readings.ndjson
    sync
    start_gateway
    start_agent
    echo "WRITING"
    # A sensor appending to the followed file: 10 lines at a time, each
    # printed as "WRITTEN <_id>" once the file system has them (fsync), with
    # _ids of their own (round, then 1 << 40 + n).
    (
        n=0
        while true; do
            for _ in 1 2 3 4 5 6 7 8 9 10; do
                n=$((n + 1))
                printf '{"_id":"%08x%016x","deviceId":"file","value":%d.25}\n' "$round" $((1099511627776 + n)) "$n"
            done >>/var/lib/sensor/readings.ndjson
            # fsync of this file only: a global sync would also flush the
            # agent's unsynced writes and blind the control.
            sync /var/lib/sensor/readings.ndjson
            tail -n 10 /var/lib/sensor/readings.ndjson | sed 's/.*"_id":"\([0-9a-f]*\)".*/WRITTEN \1/'
            sleep 0.3
        done
    ) &
    # Batches of 25 readings per `ingestd send`: each line is confirmed
    # once send exits 0 (every line of the batch committed).
    batch=0
    while true; do
        batch=$((batch + 1))
        make_batch "$batch"
        if ingestd send --config "$config" --type Reading </tmp/batch >/dev/null 2>>/var/log/send.log; then
            sed 's/.*"_id":"\([0-9a-f]*\)".*/CONFIRMED \1/' /tmp/batch
        fi
    done
fi

if [ "$mode" = record ]; then
    insmod /lib/modules/dm-mod.ko && insmod /lib/modules/dm-log-writes.ko || echo "RECORD failed: no device-mapper"
    export DM_DISABLE_UDEV=1
    dmsetup create logged --table "0 $(blockdev --getsz /dev/nvme1n1) log-writes /dev/nvme1n1 /dev/nvme2n1" || echo "RECORD failed: dmsetup create"
    mount -t ext4 /dev/mapper/logged /var/lib/ingestd || echo "RECORD failed: mount"
    mkdir -p /var/lib/sensor
    : >/var/lib/sensor/readings.ndjson
    start_agent
    echo "RECORDING"
    for batch in $(seq 1 "$(arg batches)"); do
        make_batch "$batch"
        if ingestd send --config "$config" --type Reading </tmp/batch >/dev/null 2>>/var/log/send.log; then
            dmsetup message logged 0 mark "batch-$batch"
            echo "CONFIRMED batch-$batch"
        fi
    done
    wait_drained "$config"
    echo "DRAINED ${queued:-unknown}"
    kill -TERM "$agent"
    wait "$agent"
    echo "AGENT exit $?"
    umount /var/lib/ingestd
    dmsetup status logged | sed 's/^/LOGGED /'
    dmsetup remove logged && echo "RECORDED"
fi

if [ "$mode" = check ]; then
    verdict=ok
    ingestd verify --config "$config" >/var/log/verify.log 2>&1 || verdict="failed $? (the agent's queue)"
    if [ "$upload" = gateway ]; then
        ingestd verify --config "$gateway_config" >>/var/log/verify.log 2>&1 || verdict="failed $? (the gateway's queue)"
    fi
    echo "VERIFY $verdict"
    start_gateway
    start_agent
    # Drained: the archive has everything, nothing queued at the agent or the gateway.
    wait_drained "$config"
    left=${queued:-unknown}
    kill -TERM "$agent"
    wait "$agent"
    echo "AGENT exit $?"
    archive=/var/lib/ingestd/archive.sqlite
    if [ "$upload" = gateway ]; then
        wait_drained "$gateway_config"
        [ "$left" = 0 ] && left=${queued:-unknown}
        kill -TERM "$gateway"
        wait "$gateway"
        echo "GATEWAY exit $?"
        archive=/var/lib/gateway/archive.sqlite
        ingestd queue peek --config "$gateway_config" --limit 1000000 2>/dev/null \
            | sed -n 's/.*"_id":"\([0-9a-f]*\)".*/QUEUED \1/p'
    fi
    echo "DRAINED $left"
    sqlite3 "$archive" 'SELECT _id FROM Reading' | sed 's/^/ARCHIVED /'
    ingestd queue peek --config "$config" --limit 1000000 2>/dev/null \
        | sed -n 's/.*"_id":"\([0-9a-f]*\)".*/QUEUED \1/p'
    echo "CHECKED"
fi
sync
poweroff -f
