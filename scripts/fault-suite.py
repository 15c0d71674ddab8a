#!/usr/bin/env python3
"""The fault-injection suite: WeatherSensor readings through the built ingestd
into a loopback backend that records every _id, under faults.

usage: scripts/fault-suite.py [--full] [--binary PATH] [--only NAME]... [--seed N]
                              [--markdown FILE] [--keep] [--quiet] [--durability D]

Every scenario appends numbered readings (deviceId "S0", "S1", …) to a file
the agent follows (file input: its offsets commit with the readings, so a
restart resumes exactly), streams them to Tests/Support/ingest-test-server.py
and ends with the same checks:
  lost         readings written − distinct readings received       must be 0
  duplicates   a reading received under two different _ids         must be 0
               (a duplicate that _id dedup at the backend cannot catch)
  re-sends     the same _id received again (counted, allowed: the backend
               dedups by _id, docs/PROTOCOL.md)
  queue        empty at the end; the agent's persistent counters agree:
               accepted == uploaded == readings written, nothing rejected,
               dropped or dead-lettered; the last agent exits 0 on SIGTERM

Scenarios (short / --full):
  kill9      SIGKILL at a random moment, 10 / 100 rounds, while readings are
             appended, committed, uploaded and acknowledged (the backend
             answers 100 ms after storing, so kills also land between the
             store and the acknowledgement; the scenario fails if no batch
             was re-sent)
  powercut   the same with a power cut after each kill, 10 / 100 rounds: the
             agent runs over Tests/Support/powercut (LD_PRELOAD) and its queue
             files are rebuilt from what was fsynced plus a random part of
             the unsynced writes (kept, lost or torn at 512-byte sectors); each
             fsync takes 40 ms more (a slow SD card), so cuts often land
             while writes are unsynced; fails if no cut lost or tore one
  archive    kill9 with the SQLite archive sink (upload.sink = "sqlite") as
             the backend: the archive file must hold every reading once
             (its _id primary key makes re-sends invisible: not counted);
             the archive's fsyncs take 40 ms more (power-cut layer, no cuts)
             so kills land after a batch reached the archive and before the
             queue deleted it
  relay      two agents: the edge (file input) uploads to a gateway ingestd
             (HTTP input, SQLite archive sink); kill -9 of the edge, the
             gateway or both, 12 / 100 rounds, 20,000 / 200,000 readings; each
             side's queue fsyncs take 100 ms more (power-cut layer, no cuts)
             so kills land between the gateway's commit and the edge's
             delete. The archive must hold every reading once, both queues
             end empty, the gateway accepted and forwarded each reading
             exactly once (its _id dedup dropped every re-sent record:
             fails if none was re-sent)
  down       the backend unreachable (connection refused) for 15 s / 10 min
             with the default retry settings while readings keep coming:
             nothing lost, the upload resumes by itself (resumed_after_s: from
             the backend's return until everything written while it was
             down arrived; fails over 90 s), and the attempts made while
             down stay few (no hot loop): at most 10 + seconds/5
  flapping   a faulty proxy (Tests/Support/faulty-proxy.py) between agent and
             backend: up ~1.5 s / down ~0.7 s, 10 % / 2 % of messages reset
             mid-request or mid-answer, random delays, every 5th connection
             never answered (the agent's 3 s timeout); 20,000 / 200,000
             readings, all of them through the proxy within 120 s, with
             injected resets, blackholes and down phases seen

Options:
  --full           the full run (about 18 minutes; the short one about 1.5)
  --binary PATH    the ingestd to test (default: .build/debug/ingestd)
  --only NAME      run only this scenario (repeatable)
  --seed N         seed for every random choice (default: from the time; printed)
  --rounds N       rounds of kill9, powercut, archive and relay (default: as
                   above), with as many readings per round as the run's default
  --kill-delay A:B each crash round kills after a random A to B seconds
                   (default 0.05:1.0; slower starts, as under qemu, want more)
  --markdown FILE  also write the results table (Markdown) to FILE
  --keep           keep the work directories (printed) for a post-mortem
  --quiet          no progress lines, only the table
  --durability D   run the agent with [queue] durability = D (default: its
                   default, power_loss_safe); with crash_safe the powercut
                   scenario is expected to FAIL with duplicates (docs/RELIABILITY.md)

Exit status: 0 every scenario passed, 1 a scenario failed (the table and the
agent's log tail say which check), 2 usage or set-up error.
Needs python3, a C compiler (cc, or the Swift toolchain's clang) for the
power-cut layer, and loopback networking. Runs as any user (the disk-full
test of scripts/fault-suite.sh needs root and is skipped otherwise).
"""
import argparse, json, os, random, shutil, signal, sqlite3, subprocess, sys, tempfile, threading, time, urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUPPORT = os.path.join(ROOT, "Tests", "Support")
# What an agent under test must not inherit; the same list as
# Tests/ingestdTests/IngestdBinary.swift (environment): change both together.
HERMETIC_DROP = ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "JOURNAL_STREAM", "INVOCATION_ID",
                 "CREDENTIALS_DIRECTORY", "STATE_DIRECTORY", "RUNTIME_DIRECTORY", "LISTEN_FDS", "LISTEN_PID",
                 "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
                 "no_proxy", "NO_PROXY", "LD_PRELOAD"]
QUIET = False


def say(text):
    if not QUIET:
        print(text, file=sys.stderr, flush=True)


class Failure(Exception):
    pass


def read_json(path):
    """A status file, or {} while it does not exist or is being replaced."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def counter_problems(status, total, who="status"):
    """What an agent's persistent counters say is wrong after `total`
    readings went through it: anything queued, rejected, dropped or
    dead-lettered, or not exactly `total` accepted and uploaded."""
    return [f"{who} {key} = {status.get(key)}, expected {want}"
            for key, want in (("queued_records", 0), ("accepted_total", total), ("uploaded_total", total),
                              ("rejected_total", 0), ("dropped_total", 0), ("dead_letter_records", 0))
            if status.get(key) != want]


def reading(n):
    return ('{"deviceId":"S%d","temperatureInFahrenheit":%d.5,"barometricPressureInHg":29.65,'
            '"windSpeedInMph":%d}\n' % (n, 50 + n % 40, n % 60))


def http(method, url, timeout=5):
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return answer.read()


class Peer:
    """A helper process that prints "<NAME> <port>" lines (PORT, CONTROL…) when ready."""

    def __init__(self, argv, log, names=("PORT",)):
        self.log = open(log, "ab")
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log, env=dict(os.environ))
        self.ports = {}
        while not all(name in self.ports for name in names):
            line = self.process.stdout.readline().decode()  # ends with the process at the latest
            if not line:
                raise Failure(f"{argv[1]} did not start (see {log})")
            key, _, value = line.strip().partition(" ")
            self.ports[key] = int(value)

    def stop(self):
        self.process.kill()  # Python's http.server can ignore SIGTERM while serving
        self.process.wait()
        self.log.close()


class Backend(Peer):
    def __init__(self, work, extra=()):
        super().__init__([sys.executable, os.path.join(SUPPORT, "ingest-test-server.py"), "--port", "0",
                          "--key-field", "deviceId", *extra], os.path.join(work, "backend.log"))
        self.port = self.ports["PORT"]

    def stats(self):
        return json.loads(http("GET", f"http://127.0.0.1:{self.port}/stats"))


class Proxy(Peer):
    def __init__(self, work, upstream, extra=()):
        super().__init__([sys.executable, os.path.join(SUPPORT, "faulty-proxy.py"), "--port", "0",
                          "--upstream", f"127.0.0.1:{upstream}", *extra], os.path.join(work, "proxy.log"),
                         names=("PORT", "CONTROL"))
        self.port, self.control = self.ports["PORT"], self.ports["CONTROL"]

    def command(self, what):
        return http("POST", f"http://127.0.0.1:{self.control}/{what}")

    def stats(self):
        return json.loads(http("GET", f"http://127.0.0.1:{self.control}/stats"))


class Archive:
    """The SQLite archive sink's file, read like the backend's /stats: the
    content key is deviceId ("S<n>"); `_id` is the table's primary key, so a
    re-sent record cannot appear twice and re-sends are not countable."""

    def __init__(self, work):
        self.path = os.path.join(work, "archive.sqlite")

    def stats(self):
        empty = {"content_unique": 0, "content_duplicates": 0, "duplicates": "n/a", "requests": "n/a",
                 "content_min": None, "content_max": None}
        if not os.path.exists(self.path):
            return empty
        db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=10)
        try:
            row = db.execute("SELECT count(*), count(DISTINCT deviceId), min(CAST(substr(deviceId, 2) AS INTEGER)),"
                             " max(CAST(substr(deviceId, 2) AS INTEGER)) FROM WeatherSensor").fetchone()
        except sqlite3.OperationalError as error:  # the table is created with the first batch
            if "no such table" not in str(error):
                raise
            return empty
        finally:
            db.close()
        return {**empty, "content_unique": row[1], "content_duplicates": row[0] - row[1],
                "content_min": row[2], "content_max": row[3]}

    def stop(self):
        pass


class Writer(threading.Thread):
    """Appends readings 0..<total to FILE at about `rate` per second, in chunks."""

    def __init__(self, path, total, rate, first=0):
        """Readings first..<total; the pace counts from `first`."""
        super().__init__(daemon=True)
        self.path, self.total, self.rate, self.first, self.written = path, total, rate, first, first

    def run(self):
        chunk = max(1, self.rate // 20)
        start = time.time()
        with open(self.path, "ab", buffering=0) as f:
            while self.written < self.total:
                n = min(chunk, self.total - self.written)
                f.write("".join(reading(i) for i in range(self.written, self.written + n)).encode())
                self.written += n
                delay = start + (self.written - self.first) / self.rate - time.time()
                if delay > 0:
                    time.sleep(delay)


class Agent:
    def __init__(self, binary, config, log, preload=None):
        env = {k: v for k, v in os.environ.items() if k not in HERMETIC_DROP}
        if preload:
            env.update(preload)
        self.log = open(log, "ab")
        self.process = subprocess.Popen([binary, "run", "--config", config], stdin=subprocess.DEVNULL,
                                        stdout=self.log, stderr=self.log, env=env)

    def kill9(self):
        """SIGKILL, and proof it was that: an agent that died by itself is a failure, not a round."""
        if self.process.poll() is not None:
            self.log.close()
            raise Failure(f"the agent ended by itself (status {self.process.returncode}) before the kill")
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.log.close()
        if self.process.returncode != -signal.SIGKILL:
            raise Failure(f"the agent ended with status {self.process.returncode}, not by the SIGKILL")

    def stop(self, timeout=60):
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            code = "hung"
        self.log.close()
        return code


class Scenario:
    def __init__(self, name, binary, rng, keep, durability=None):
        self.name, self.binary, self.rng, self.durability = name, binary, rng, durability
        self.work = tempfile.mkdtemp(prefix=f"ingestd-fault-{name}-")
        self.keep = keep
        os.makedirs(os.path.join(self.work, "in"))
        self.state = os.path.join(self.work, "state")
        self.input = os.path.join(self.work, "in", "readings.ndjson")
        self.agent_log = os.path.join(self.work, "agent.log")
        self.result = {"scenario": name}
        self.kill_delay = (0.05, 1.0)  # seconds from an agent's start to its kill (--kill-delay)

    def config(self, url, upload="", retry="retry_base_ms = 50\nretry_cap_ms = 1000"):
        """url None: the upload section names its sink in `upload` instead.

        Batches of at most 1000 records unless `upload` says otherwise (the
        agent's default is 4000): many batches give the kills many windows
        between a batch's store and its acknowledgement, which the re-send
        checks need."""
        if "max_records" not in upload:
            upload = (upload + "\n" if upload else "") + "max_records = 1000"
        path = os.path.join(self.work, "ingestd.toml")
        with open(path, "w") as f:
            f.write(f"""[agent]
state_directory = "{self.state}"
rejects_file = "{self.work}/rejects.ndjson"
log_target = "stderr"
status_interval_ms = 200
{f'[queue]{chr(10)}durability = "{self.durability}"{chr(10)}' if self.durability else ""}
[upload]
{f'url = "{url}"' if url else ""}
linger_ms = 50
{retry}
{upload}

[types.WeatherSensor]
deviceId = "string"
temperatureInFahrenheit = "double"
barometricPressureInHg = "double"
windSpeedInMph = "int"

[[inputs]]
kind = "file"
paths = ["{self.work}/in/*.ndjson"]
poll_interval_ms = 50
""")
        return path

    def status(self):
        return read_json(os.path.join(self.state, "status.json"))

    def powercut_layer(self, tracked, name, sync_delay_us):
        """The power-cut layer's environment for an agent: LD_PRELOAD of the
        library (built once per scenario), tracking the file `tracked`,
        logging to work/NAME, each fsync slowed by `sync_delay_us`.
        Returns (environment, log directory)."""
        library = os.path.join(self.work, "libpowercut.so")
        if not os.path.exists(library):
            subprocess.run([sys.executable, os.path.join(SUPPORT, "powercut.py"), "build", library], check=True)
        log_dir = os.path.join(self.work, name)
        os.makedirs(log_dir, exist_ok=True)
        return ({"LD_PRELOAD": library, "POWERCUT_PATH": tracked, "POWERCUT_LOG": log_dir,
                 "POWERCUT_SYNC_DELAY_US": str(sync_delay_us)}, log_dir)

    def tail(self, lines=15, path=None):
        """The last lines of the agent's log (or of the log at path)."""
        try:
            with open(path or self.agent_log, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def finish(self, backend, config, total, timeout=120):
        """A last agent without faults delivers the rest; then every check."""
        agent = Agent(self.binary, config, self.agent_log)
        try:
            deadline = time.time() + timeout
            stats = backend.stats()
            status = self.status()
            while time.time() < deadline:
                stats, status = backend.stats(), self.status()
                # This agent's own status (not the last one's), once it is running.
                if status.get("pid") != agent.process.pid:
                    time.sleep(0.05)
                    continue
                if (stats["content_unique"] >= total and status.get("queued_records") == 0
                        and status.get("uploaded_total") == status.get("accepted_total") == total):
                    break
                time.sleep(0.2)
        finally:
            code = agent.stop()  # also when reading the backend failed: no agent left running
        status = self.status()
        r = self.result
        r.update(readings=total, received=stats["content_unique"], lost=total - stats["content_unique"],
                 duplicates=stats["content_duplicates"], resends=stats["duplicates"], requests=stats["requests"])
        problems = []
        if r["lost"]:
            problems.append(f"{r['lost']} readings lost")
        if r["duplicates"]:
            problems.append(f"{r['duplicates']} readings arrived under two _ids")
        if stats["content_unique"] and (stats["content_min"] != 0 or stats["content_max"] != total - 1):
            problems.append(f"received readings S{stats['content_min']}…S{stats['content_max']}, written S0…S{total - 1}")
        problems += counter_problems(status, total)
        if code != 0:
            problems.append(f"the last agent exited {code} on SIGTERM")
        r["checks"] = "pass" if not problems else "; ".join(problems)
        if problems:
            raise Failure("; ".join(problems) + "\n--- agent log (tail) ---\n" + self.tail())

    def cleanup(self):
        if self.keep:
            say(f"  kept {self.work}")
        else:
            shutil.rmtree(self.work, ignore_errors=True)


def crash_rounds(s, rounds, total, powercut, archive=False):
    if archive:
        backend = Archive(s.work)
        config = s.config(None, upload=f'sink = "sqlite"\npath = "{backend.path}"')
    else:
        backend = Backend(s.work, ["--slow", "1000000000", "--slow-ms", "100"])
        config = s.config(f"http://127.0.0.1:{backend.port}/ingest/v1/batches")
    try:
        preload = None
        dropped = 0  # unsynced operations the cuts lost or tore
        if powercut or archive:
            os.makedirs(s.state, exist_ok=True)
            # With the archive the layer only slows the archive's fsyncs (no
            # cuts): a kill during one lands after the batch reached the
            # archive file (a kill loses no written data) and before the
            # queue deleted it, so the batch comes again after the restart.
            tracked = backend.path if archive else os.path.join(s.state, "queue.sqlite")
            preload, log_dir = s.powercut_layer(tracked, "powercut", 40000)
        # The writer runs through every round: about 0.55 s per round plus start-up.
        writer = Writer(s.input, total, max(1000, int(total / (rounds * 0.75))))
        writer.start()
        for round in range(rounds):
            agent = Agent(s.binary, config, s.agent_log, preload)
            time.sleep(s.rng.uniform(*s.kill_delay))
            agent.kill9()
            if powercut:
                out = subprocess.run([sys.executable, os.path.join(SUPPORT, "powercut.py"), "cut", log_dir,
                                      "--dir", s.state, "--seed", str(s.rng.randrange(1 << 30))],
                                     check=True, capture_output=True, text=True).stdout
                total_line = out.splitlines()[-1].split()  # "total kept=K lost=L torn=T"
                dropped += sum(int(f.split("=")[1]) for f in total_line[1:] if f.split("=")[0] in ("lost", "torn"))
            if round % 10 == 9:
                say(f"  {s.name}: round {round + 1}/{rounds}, {writer.written} written, "
                    f"{backend.stats()['content_unique']} received")
        writer.join()
        s.result.update(rounds=rounds)
        if powercut:
            s.result["unsynced_lost_or_torn"] = dropped
        s.finish(backend, config, total)
        if powercut and dropped == 0:
            # Every cut fell between syncs: this run proved no more than kill9.
            s.result["checks"] = "no cut lost or tore an unsynced write"
            raise Failure(s.result["checks"])
        if not archive and s.result["resends"] == 0:
            # No kill fell between the backend's store and its acknowledgement.
            s.result["checks"] = "no batch was re-sent: no kill landed between store and acknowledgement"
            raise Failure(s.result["checks"])
    finally:
        backend.stop()


def backend_down(s, seconds, before, during, after):
    backend = Backend(s.work)
    proxy = Proxy(s.work, backend.port)
    try:
        # The default retry settings (retry_base_ms 500, retry_cap_ms 60000).
        config = s.config(f"http://127.0.0.1:{proxy.port}/ingest/v1/batches", retry="")
        agent = Agent(s.binary, config, s.agent_log)
        Writer(s.input, before, 5000).run()
        deadline = time.time() + 60
        while backend.stats()["content_unique"] < before and time.time() < deadline:
            time.sleep(0.1)
        if backend.stats()["content_unique"] < before:
            raise Failure("the backend never got the first readings\n" + s.tail())
        time.sleep(1)  # let the status file catch up
        requests_before = s.status().get("upload_requests", 0)
        proxy.command("down")
        say(f"  down: backend unreachable for {seconds} s")
        writer = Writer(s.input, before + during, max(1, during // max(1, seconds - 2)), first=before)
        writer.start()
        time.sleep(seconds)
        time.sleep(0.5)
        requests_down = s.status().get("upload_requests", 0) - requests_before
        writer.join()  # paced to end ~2 s before the backend comes back
        proxy.command("up")
        up_at = time.time()
        # Recovery: until everything written while it was down has arrived
        # (before the tail, which would add its own writing time).
        while backend.stats()["content_unique"] < before + during and time.time() < up_at + 120:
            time.sleep(0.2)
        recovered = time.time() - up_at
        total = before + during + after
        Writer(s.input, total, 5000, first=before + during).run()
        code = agent.stop()
        if code != 0:
            raise Failure(f"the agent exited {code} on SIGTERM\n" + s.tail())
        bound = 10 + seconds // 5
        s.result.update(rounds=1, down_seconds=seconds, attempts_while_down=requests_down,
                        resumed_after_s=round(recovered, 1))
        s.finish(backend, config, total)
        if requests_down > bound or requests_down < 2:
            s.result["checks"] = f"{requests_down} attempts while down (expected 2…{bound})"
            raise Failure(s.result["checks"])
        if recovered > 90:
            s.result["checks"] = f"upload resumed only {recovered:.0f} s after the backend came back"
            raise Failure(s.result["checks"])
    finally:
        proxy.stop()
        backend.stop()


def flapping(s, total, seconds, reset_probability):
    backend = Backend(s.work)
    proxy = Proxy(s.work, backend.port, ["--flap-up-ms", "1500", "--flap-down-ms", "700",
                                         "--reset-probability", str(reset_probability), "--delay-ms-max", "20",
                                         "--blackhole-every", "5",
                                         "--seed", str(s.rng.randrange(1 << 30))])
    try:
        config = s.config(f"http://127.0.0.1:{proxy.port}/ingest/v1/batches",
                          upload="connect_timeout_ms = 1000\ntimeout_ms = 3000\nmax_records = 500")
        agent = Agent(s.binary, config, s.agent_log)
        writer = Writer(s.input, total, max(1000, total // seconds))
        writer.start()
        writer.join()
        deadline = time.time() + 120
        while backend.stats()["content_unique"] < total and time.time() < deadline:
            time.sleep(0.2)
        through_proxy = backend.stats()["content_unique"]
        faults = proxy.stats()
        code = agent.stop()
        if code != 0:
            raise Failure(f"the agent exited {code} on SIGTERM\n" + s.tail())
        s.result.update(rounds=1, proxy_resets=faults["resets_injected"], proxy_resets_in_answers=faults["resets_in_response"],
                        proxy_blackholed=faults["blackholed"], proxy_down_phases=faults["down_phases"])
        # Everything must have crossed the faulty proxy, and each kind of
        # fault must have happened (down phases reset connections by
        # themselves, so they do not count as injected resets), or the
        # scenario proved nothing.
        if (through_proxy < total or faults["resets_injected"] == 0 or faults["blackholed"] == 0
                or faults["down_phases"] == 0):
            s.result["checks"] = (f"{through_proxy} of {total} readings through the proxy within 120 s, "
                                  f"{faults['resets_injected']} injected resets, {faults['blackholed']} blackholed, "
                                  f"{faults['down_phases']} down phases")
            raise Failure(s.result["checks"] + "\n" + s.tail())
        # The proxy keeps flapping: the last agent goes straight to the backend.
        s.finish(backend, s.config(f"http://127.0.0.1:{backend.port}/ingest/v1/batches"), total)
    finally:
        proxy.stop()
        backend.stop()


def free_port():
    """A port free now. The relay's gateway rebinds it after every kill
    (SO_REUSEADDR), so it must stay fixed for the edge's URL; another
    process taking it between two rounds would fail the run, not pass it."""
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def relay(s, rounds, total):
    """edge ingestd -> gateway ingestd (HTTP input) -> SQLite archive, with
    kill -9 of the edge, the gateway or both at random moments."""
    gateway_dir = os.path.join(s.work, "gateway")
    gateway_state = os.path.join(gateway_dir, "state")
    os.makedirs(gateway_state)
    archive = Archive(gateway_dir)
    port = free_port()
    gateway_config = os.path.join(gateway_dir, "ingestd.toml")
    with open(gateway_config, "w") as f:
        f.write(f"""[agent]
state_directory = "{gateway_state}"
log_target = "stderr"
status_interval_ms = 200

[[inputs]]
kind = "http"
listen = "127.0.0.1:{port}"

[upload]
sink = "sqlite"
path = "{archive.path}"
linger_ms = 50

[types.WeatherSensor]
deviceId = "string"
temperatureInFahrenheit = "double"
barometricPressureInHg = "double"
windSpeedInMph = "int"
""")
    gateway_log = os.path.join(s.work, "gateway.log")

    def gateway_tail(lines=15):
        return "\n--- gateway log (tail) ---\n" + s.tail(lines, gateway_log)
    edge_config = s.config(f"http://127.0.0.1:{port}/ingest/v1/batches")
    # Each side's queue fsyncs take 100 ms more (power-cut layer, no cuts), so
    # kills land after the gateway committed a batch and before the edge saw
    # the answer or deleted the batch: the edge sends it again and the
    # gateway must drop it by _id.
    os.makedirs(s.state, exist_ok=True)
    edge_slow, _ = s.powercut_layer(os.path.join(s.state, "queue.sqlite"), "powercut-edge", 100000)
    gateway_slow, _ = s.powercut_layer(os.path.join(gateway_state, "queue.sqlite"), "powercut-gateway", 100000)
    writer = Writer(s.input, total, max(1000, int(total / (rounds * 0.75))))
    writer.start()
    edge = gateway = None
    kills = {"edge": 0, "gateway": 0}
    try:
        for round in range(rounds):
            gateway = gateway or Agent(s.binary, gateway_config, gateway_log, gateway_slow)
            edge = edge or Agent(s.binary, edge_config, s.agent_log, edge_slow)
            time.sleep(s.rng.uniform(*s.kill_delay))
            victim = s.rng.choice(["edge", "gateway", "both"])
            if victim != "gateway":
                edge.kill9()
                edge = None
                kills["edge"] += 1
            if victim != "edge":
                gateway.kill9()
                gateway = None
                kills["gateway"] += 1
            if round % 10 == 9:
                say(f"  relay: round {round + 1}/{rounds}, {writer.written} written, "
                    f"{archive.stats()['content_unique']} archived")
        writer.join()
        if edge:
            code = edge.stop()
            edge = None
            if code != 0:
                raise Failure(f"an edge agent exited {code} on SIGTERM\n" + s.tail() + gateway_tail())
        gateway = gateway or Agent(s.binary, gateway_config, gateway_log)
        try:
            s.finish(archive, edge_config, total)
        except Failure as error:
            raise Failure(str(error) + gateway_tail()) from None
        # The gateway's own queue must drain into the archive too.
        deadline = time.time() + 60
        status = {}
        while time.time() < deadline:
            status = read_json(os.path.join(gateway_state, "status.json"))
            if status.get("pid") == gateway.process.pid and status.get("queued_records") == 0 \
                    and status.get("uploaded_total") == total:
                break
            time.sleep(0.2)
        code = gateway.stop()
        gateway = None
        status = read_json(os.path.join(gateway_state, "status.json"))
        s.result.update(edge_kills=kills["edge"], gateway_kills=kills["gateway"],
                        gateway_dropped_resent=status.get("received_duplicates_total", 0))
        problems = counter_problems(status, total, "gateway status")
        if code != 0:
            problems.append(f"the gateway exited {code} on SIGTERM")
        if not problems and not status.get("received_duplicates_total"):
            problems.append("no batch reached the gateway twice: no kill landed between its commit and the edge's delete")
        if problems:
            s.result["checks"] = "; ".join(problems)
            raise Failure(s.result["checks"] + gateway_tail())
        s.result["rounds"] = rounds
    finally:
        for agent in (edge, gateway):
            if agent:
                agent.process.kill()
                agent.process.wait()


def sized(rounds, total, wanted):
    """`rounds` and `total` readings, or `wanted` rounds (--rounds) with as many readings per round."""
    return (rounds, total) if wanted is None else (wanted, total * wanted // rounds)


SCENARIOS = {
    "kill9": lambda s, full, n: crash_rounds(s, *sized(100 if full else 10, 200_000 if full else 20_000, n), False),
    "powercut": lambda s, full, n: crash_rounds(s, *sized(100 if full else 10, 100_000 if full else 10_000, n), True),
    "archive": lambda s, full, n: crash_rounds(s, *sized(100 if full else 10, 200_000 if full else 20_000, n), False,
                                               archive=True),
    "relay": lambda s, full, n: relay(s, *sized(100 if full else 12, 200_000 if full else 20_000, n)),
    "down": lambda s, full, n: backend_down(s, 600 if full else 15, 2000, 30_000 if full else 3000, 2000),
    # The short run sends ~50 messages: 10 % of them reset, so resets surely happen.
    "flapping": lambda s, full, n: flapping(s, 200_000 if full else 20_000, 120 if full else 15, 0.02 if full else 0.1),
}

COLUMNS = ["scenario", "rounds", "readings", "received", "lost", "duplicates", "resends", "requests", "checks",
           "details"]


def table(results):
    rows = ["| " + " | ".join(COLUMNS) + " |", "|" + " --- |" * len(COLUMNS)]
    for r in results:
        details = ", ".join(f"{k}={v}" for k, v in r.items() if k not in COLUMNS)
        rows.append("| " + " | ".join(str(r.get(c, "")) if c != "details" else details for c in COLUMNS) + " |")
    return "\n".join(rows)


def main():
    global QUIET
    p = argparse.ArgumentParser(usage=argparse.SUPPRESS, description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter, add_help=True)
    p.add_argument("--full", action="store_true")
    p.add_argument("--binary", default=os.path.join(ROOT, ".build", "debug", "ingestd"))
    p.add_argument("--only", action="append", choices=sorted(SCENARIOS))
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--kill-delay", default="0.05:1.0")
    p.add_argument("--markdown")
    p.add_argument("--keep", action="store_true")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--durability", choices=["power_loss_safe", "crash_safe"])
    args = p.parse_args()
    # The seed is in the table's first line too, so a failure quoted from
    # the end of the output can be run again.
    QUIET = args.quiet
    if args.rounds is not None and args.rounds < 1:
        print(f"fault-suite: --rounds wants a positive number, not {args.rounds}", file=sys.stderr)
        return 2
    try:
        kill_delay = tuple(float(x) for x in args.kill_delay.split(":"))
        if len(kill_delay) != 2 or not 0 <= kill_delay[0] <= kill_delay[1]:
            raise ValueError
    except ValueError:
        print(f"fault-suite: --kill-delay wants MIN:MAX seconds (0 <= MIN <= MAX), not '{args.kill_delay}'",
              file=sys.stderr)
        return 2
    if not os.access(args.binary, os.X_OK):
        print(f"fault-suite: no ingestd at {args.binary}: build it first (swift build) or pass --binary", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else int(time.time())
    say(f"fault-suite: {'full' if args.full else 'short'} run, seed {seed}, binary {args.binary}")
    results, failed = [], False
    for name in args.only or list(SCENARIOS):
        s = Scenario(name, args.binary, random.Random(f"{seed}-{name}"), args.keep, args.durability)
        s.kill_delay = kill_delay
        started = time.time()
        say(f"{name}: running")
        try:
            SCENARIOS[name](s, args.full, args.rounds)
        except Failure as error:
            failed = True
            s.result.setdefault("checks", "FAIL")
            print(f"{name}: FAIL: {error}", file=sys.stderr)
            s.keep = True
        except Exception as error:  # a harness error is a failure too, never a pass
            failed = True
            s.result["checks"] = f"harness error: {error!r}"
            print(f"{name}: harness error: {error!r}\n--- agent log (tail) ---\n{s.tail()}", file=sys.stderr)
            s.keep = True
        s.result["seconds"] = round(time.time() - started)
        results.append(s.result)
        s.cleanup()
        say(f"{name}: {s.result.get('checks')} ({s.result['seconds']} s)")
    text = f"Seed {seed}, {'full' if args.full else 'short'} run: scripts/fault-suite.py {'--full ' if args.full else ''}--seed {seed}\n\n" + table(results)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(f"{time.strftime('%Y-%m-%d')}\n\n{text}\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
