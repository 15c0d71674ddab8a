# Helpers for the scenarios of scripts/test-systemd.sh, sourced inside the
# booted container (bash, as root). Each check prints "ok N - what"; the
# first failure prints "FAIL: what" and ends the scenario with exit 1.
# Figures worth publishing are printed as "# measured: name = value".

checks=0
ok() { checks=$((checks + 1)); echo "ok $checks - $*"; }
fail() { echo "FAIL: $*"; exit 1; }
measured() { echo "# measured: $*"; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# Installs a package file with apt, as an operator would (no network: the
# container has none, and the package's dependencies are in the root).
install_package() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o Dpkg::Options::=--force-confold "$1" \
        >/ci-out/apt-install.log 2>&1 || { cat /ci-out/apt-install.log; fail "apt-get install $1 failed"; }
}

# Waits up to $2 seconds (default 20) for the command $1 to succeed.
wait_for() {
    local deadline=$(( $(date +%s) + ${2:-20} ))
    until eval "$1" >/dev/null 2>&1; do
        [ "$(date +%s)" -lt "$deadline" ] || return 1
        sleep 0.1
    done
}

main_pid() { systemctl show -p MainPID --value ingestd.service; }

# A configuration for the tests: the package's, with a type that carries a
# sequence number (readings are counted by it) and the metrics endpoint.
write_test_configuration() {
    cat > /etc/ingestd/ingestd.toml <<'TOML'
[agent]
status_interval_ms = 500

[queue]
max_bytes = 268435456
overflow_policy = "block"
commit_interval_ms = 100

[types.Reading]
sensor = "string"
seq = "int"
value = "double"

[[inputs]]
kind = "socket"
format = "ndjson"
type = "Reading"

[metrics]
listen = "127.0.0.1:9464"
TOML
}

# The sequence numbers of every queued reading, one per line, sorted
# (`ingestd queue peek` reads the queue next to a running agent).
queued_sequence_numbers() {
    ingestd queue peek --limit 10000000 > /tmp/peek.ndjson || return 1
    grep -o '"seq":[0-9]*' /tmp/peek.ndjson | cut -d: -f2 | sort -n
}

# Checks that the sequence numbers on stdin are exactly 1..$1, each once.
expect_each_once() {
    local expected="$1" counts
    counts="$(uniq -c | awk -v n="$expected" '
        { if ($1 > 1) twice += $1 - 1; seen[$2] = 1; distinct++ }
        END { for (i = 1; i <= n; i++) if (!(i in seen)) lost++; printf "%d %d %d", distinct, lost + 0, twice + 0 }')"
    read -r distinct lost twice <<<"$counts"
    echo "# readings: $distinct distinct, $lost lost, $twice stored twice (of $expected sent)"
    [ "$lost" = 0 ] && [ "$twice" = 0 ] && [ "$distinct" = "$expected" ]
}
