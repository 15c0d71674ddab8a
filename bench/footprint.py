#!/usr/bin/env python3
"""Footprint of a running ingestd (issue 8): idle RSS, start-up time to READY=1,
idle wakeups per second, with an empty queue and with N records queued.

Run through bench/footprint.sh (it builds the release binary). Each case
starts `ingestd run` the way systemd does (NOTIFY_SOCKET, WATCHDOG_USEC,
STATE_DIRECTORY), with a stdin input fed by a pipe that stays open and
silent (a sensor script with nothing to say) and an [upload] section
pointing at a live loopback receiver, so libcurl is loaded as in production.
"""
import json, os, socket, subprocess, sys, tempfile, threading, time

BINARY, RECEIVER_URL, WORK, BASE_CONFIG, READINGS = sys.argv[1:6]
IDLE_SECONDS = int(os.environ.get("IDLE_SECONDS", "60"))


def config(path, upload):
    """bench/lib.sh's base configuration, a stdin input, and [upload] if given."""
    with open(BASE_CONFIG) as base, open(path, "w") as f:
        f.write(base.read())
        f.write('[[inputs]]\nkind = "stdin"\n')
        if upload:
            f.write(f'[upload]\nurl = "{upload}"\n')
    return path


def fill(state):
    """Queues READINGS with no [upload] section, through the same binary;
    returns what the agent says is queued (not the input's line count)."""
    cfg = config(os.path.join(WORK, "fill.toml"), None)
    env = dict(os.environ, STATE_DIRECTORY=state)
    with open(READINGS, "rb") as readings:
        subprocess.run([BINARY, "run", "--config", cfg], stdin=readings, env=env, check=True)
    status = subprocess.run([BINARY, "status", "--config", cfg, "--json"], env=env, capture_output=True, text=True)
    return json.loads(status.stdout)["queued_records"]


def memory(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem", "VmHWM"):
                fields[key] = int(value.split()[0])
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                fields["Pss"] = int(line.split()[1])
    return fields


def switches(pid):
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total


def run_case(label, state, upload):
    cfg = config(os.path.join(WORK, "agent.toml"), upload)
    notify_path = os.path.join(WORK, "notify.sock")
    if os.path.exists(notify_path):
        os.unlink(notify_path)
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    read_end, write_end = os.pipe()  # the silent sensor
    env = dict(os.environ, STATE_DIRECTORY=state, NOTIFY_SOCKET=notify_path, WATCHDOG_USEC="30000000")
    started = time.monotonic()
    agent = subprocess.Popen([BINARY, "run", "--config", cfg], stdin=read_end, env=env, stderr=open(os.path.join(WORK, "agent.log"), "w"))
    os.close(read_end)
    # Read every notification, as systemd does: sd_notify blocks when the
    # socket's buffer is full, so a reader that stops reading stalls the agent.
    ready = threading.Event()
    ready_at = []

    def listen():
        while True:
            try:
                message = notify.recv(4096).decode()
            except OSError:
                return
            if not ready.is_set() and "READY=1" in message.split("\n"):
                ready_at.append(time.monotonic())
                ready.set()

    threading.Thread(target=listen, daemon=True).start()
    if not ready.wait(timeout=60):
        agent.kill()
        raise SystemExit(f"{label}: no READY=1 within 60 s")
    ready_ms = (ready_at[0] - started) * 1000
    time.sleep(5)  # let start-up work (a first upload attempt, the first status write) settle
    settled = memory(agent.pid)
    before = switches(agent.pid)
    time.sleep(IDLE_SECONDS)
    wakeups = (switches(agent.pid) - before) / IDLE_SECONDS
    idle = memory(agent.pid)
    threads = len(os.listdir(f"/proc/{agent.pid}/task"))
    os.close(write_end)
    agent.terminate()
    agent.wait(timeout=60)
    notify.close()
    return {
        "case": label,
        "ready_ms": round(ready_ms, 1),
        "rss_kb": idle["VmRSS"],
        "anon_kb": idle["RssAnon"],
        "file_kb": idle["RssFile"],
        "pss_kb": idle["Pss"],
        "rss_after_5s_kb": settled["VmRSS"],
        "wakeups_per_s": round(wakeups, 2),
        "threads": threads,
        "idle_seconds": IDLE_SECONDS,
    }


results = []
empty = tempfile.mkdtemp(dir=WORK)
results.append(run_case("empty queue, upload configured", empty, RECEIVER_URL))
results.append(run_case("empty queue, no upload", tempfile.mkdtemp(dir=WORK), None))
full = tempfile.mkdtemp(dir=WORK)
queued = fill(full)
# The receiver is down for this case ("offline for weeks"): everything stays queued.
results.append(run_case(f"{queued:,} queued, backend unreachable", full, "http://127.0.0.1:9/ingest"))
for r in results:
    print(json.dumps(r))
