#!/usr/bin/env python3
"""ingestd and Fluent Bit side by side (issue 43), run by bench/peer.sh.

Both agents get the same readings (bench/lib.sh make_varied_input: random
values with one or two decimals, 50 devices, unique _ids, ISO timestamps
with milliseconds; ~172 B a line), the same loopback receiver
(Tests/Support/ingest-test-server.py --fast, a fresh one per run), and
their defaults otherwise: ingestd at `power_loss_safe`, Fluent Bit with
`storage.type filesystem` and `retry_limit no_limits` (its `storage.sync`
default, normal). Rounds interleave the two (A B, then B A), each
scenario in turn:

  e2e      stdin -> queue -> HTTP -> receiver (and deleted): CPU seconds
           per million, readings/s (until the receiver has them all),
           device bytes per reading (/proc/PID/io write_bytes), peak RSS
  gzip     the same with gzip-compressed uploads
  ingest   stdin -> queue only (Fluent Bit: out_null, its closest): CPU
  tail     a followed file of the readings -> HTTP: peak RSS, CPU
  idle     started, nothing to do for 10 s: RSS and private memory
  backlog  BACKLOG readings queued while the receiver is down (port 9),
           then drained by a fresh start: readings/s. Once a round, the
           receiver alone too (bench/curl-limit/post.c: one reused libcurl
           handle posting 4000-line bodies, ingestd's default batch, back
           to back): what no agent can drain faster than on this machine

Prints every round's figures, then per scenario the medians and the
ratio ingestd / Fluent Bit per round and its median.

  bench/peer.py --ingestd BIN --fluent-bit BIN --dir DIR [--rounds 5]
                [--readings 1000000] [--backlog 2000000] [--only e2e,gzip,…]
                [--upload-set linger_ms=50 …]
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIOS = ["e2e", "gzip", "ingest", "tail", "idle", "backlog"]


def parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ingestd", required=True)
    p.add_argument("--fluent-bit", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--readings", type=int, default=1_000_000)
    p.add_argument("--backlog", type=int, default=2_000_000)
    p.add_argument("--only", default=",".join(SCENARIOS))
    p.add_argument("--post", help="bench/curl-limit/post.c built: the receiver's own limit, once a backlog round")
    p.add_argument("--upload-set", action="append", default=[], metavar="KEY=VALUE",
                   help="an [upload] setting for ingestd (e.g. linger_ms=50), to try another default")
    return p.parse_args()


def make_readings(path, count):
    subprocess.run(["bash", "-c", f'. bench/lib.sh && make_varied_input "{path}" {count}'], cwd=ROOT, check=True)


class Receiver:
    """The loopback receiver: counts the lines of every body it is sent."""

    def __init__(self, directory):
        port_file = os.path.join(directory, "receiver.port")
        if os.path.exists(port_file):
            os.unlink(port_file)
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "Tests/Support/ingest-test-server.py"), "--fast", "--port-file", port_file],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            if os.path.exists(port_file) and os.path.getsize(port_file) > 0:
                break
            time.sleep(0.02)
        self.port = int(open(port_file).read().split()[0])

    def count(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/stats", timeout=5) as answer:
            return json.load(answer)["unique"]

    def wait_for(self, count, timeout=900):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.count() >= count:
                return time.monotonic()
            time.sleep(0.02)
        raise RuntimeError(f"the receiver got {self.count()} of {count} readings in {timeout} s")

    def stop(self):
        self.process.kill()
        self.process.wait()


UPLOAD_SETTINGS = []


def ingestd_config(directory, *, upload_port=None, gzip=False, follow=None):
    """bench/lib.sh's realistic configuration (the agent's defaults, quiet logs)."""
    base = subprocess.run(["bash", "-c", ". bench/lib.sh && realistic_config"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout
    text = base.replace('[agent]\n', f'[agent]\nstate_directory = "{directory}/ingestd-state"\n', 1)
    if follow:
        text += f'[[inputs]]\nkind = "file"\npaths = ["{follow}"]\ntype = "WeatherSensor"\n'
    if upload_port is not None:
        text += f'[upload]\nurl = "http://127.0.0.1:{upload_port}/ingest/v1/batches"\nshutdown_timeout_ms = 900000\n'
        if gzip:
            text += "gzip = true\n"
        text += "".join(setting + "\n" for setting in UPLOAD_SETTINGS)
    path = os.path.join(directory, "ingestd.toml")
    open(path, "w").write(text)
    return path


def fluent_bit_config(directory, *, upload_port=None, gzip=False, follow=None, null_output=False, grace=600):
    """Fluent Bit as a new user would set it up for durable delivery.

    `grace`: at the end of stdin Fluent Bit stops, flushing what is queued
    for at most this many seconds (its default, 5, would leave readings on
    its disk unsent); it exits as soon as nothing is left."""
    storage = os.path.join(directory, "fluent-bit-storage")
    lines = ["[SERVICE]", "    log_level warn", f"    grace {grace}", f"    storage.path {storage}"]
    if follow:
        lines += ["[INPUT]", "    name tail", f"    path {follow}", "    read_from_head true",
                  f"    db {directory}/fluent-bit-tail.db", "    storage.type filesystem"]
    else:
        lines += ["[INPUT]", "    name stdin", "    storage.type filesystem"]
    if null_output:
        lines += ["[OUTPUT]", "    name null", "    match *"]
    else:
        lines += ["[OUTPUT]", "    name http", "    match *", "    host 127.0.0.1", f"    port {upload_port}",
                  "    uri /ingest/v1/batches", "    format json_lines", "    json_date_key false",
                  "    retry_limit no_limits"]
        if gzip:
            lines.append("    compress gzip")
    path = os.path.join(directory, "fluent-bit.conf")
    open(path, "w").write("\n".join(lines) + "\n")
    return path


def own_rss_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Run:
    """One agent process: CPU, peak RSS and device writes read as it exits."""

    def __init__(self, command, stdin_path=None, stdin_pipe=False):
        # A file is fed through a pipe by `cat`, as a sensor script would
        # (Fluent Bit's stdin input cannot poll a regular file: epoll_ctl
        # refuses it, EPERM, and it reads nothing). cat's own CPU is not
        # counted: wait4 reports the agent's.
        self.feeder = None
        self.started = time.monotonic()
        if stdin_path:
            self.feeder = subprocess.Popen(["cat", stdin_path], stdout=subprocess.PIPE)
            self.stdin = self.feeder.stdout
        else:
            self.stdin = subprocess.PIPE if stdin_pipe else subprocess.DEVNULL
        self.parent_rss = own_rss_mib()
        self.process = subprocess.Popen(command, stdin=self.stdin, stdout=subprocess.DEVNULL,
                                        stderr=open(os.devnull, "w"))
        if self.feeder:
            self.feeder.stdout.close()  # the agent holds the only read end

    def status(self, field):
        """A /proc/PID/status field in MiB; NaN once the process has exited (a zombie has none)."""
        try:
            for line in open(f"/proc/{self.process.pid}/status"):
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return float("nan")

    def rollup_mib(self, *fields):
        """The sum of these /proc/PID/smaps_rollup fields, in MiB."""
        total = 0
        for line in open(f"/proc/{self.process.pid}/smaps_rollup"):
            if line.split(":")[0] in fields:
                total += int(line.split()[1])
        return total / 1024

    def private_mib(self):
        return self.rollup_mib("Private_Clean", "Private_Dirty")

    def finish(self, timeout=900, terminate=False):
        """Waits for the exit (after SIGTERM if asked); returns cpu_s, rss_mib, write_bytes, wall_s."""
        if terminate:
            self.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        # Peak RSS: wait4's ru_maxrss also counts the memory of this Python
        # process, which the child was forked from before it exec'd
        # (measured: with this script at 55 MB, an ingestd peaking at 20 MiB
        # read 54). Above what this script held then, it is the agent's own
        # and exact; else the agent's own high-water mark (VmHWM), read
        # until it exits, is taken.
        peak = float("nan")
        while True:
            hwm = self.status("VmHWM")
            if hwm == hwm:
                peak = hwm if peak != peak else max(peak, hwm)
            info = os.waitid(os.P_PID, self.process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if info is not None:
                break
            if time.monotonic() > deadline:
                self.process.send_signal(signal.SIGTERM)
                deadline = time.monotonic() + 30
            time.sleep(0.01)
        wall = time.monotonic() - self.started
        written = 0
        for line in open(f"/proc/{self.process.pid}/io"):
            if line.startswith("write_bytes:"):
                written = int(line.split()[1])
        _, _, usage = os.wait4(self.process.pid, 0)
        self.process.returncode = 0
        if self.feeder:
            self.feeder.kill()
            self.feeder.wait()
        maxrss = usage.ru_maxrss / 1024
        if maxrss > self.parent_rss + 1 or peak != peak:
            peak = maxrss
        return usage.ru_utime + usage.ru_stime, peak, written, wall


def fresh(directory):
    subprocess.run(["rm", "-rf", os.path.join(directory, "ingestd-state"), os.path.join(directory, "fluent-bit-storage"),
                    os.path.join(directory, "fluent-bit-tail.db")], check=True)
    subprocess.run(["sync"])


def command(agent, args, config):
    return [args.ingestd, "run", "--config", config] if agent == "ingestd" else [args.fluent_bit, "-c", config]


def scenario_upload(agent, args, readings, gzip):
    directory = args.dir
    fresh(directory)
    receiver = Receiver(directory)
    try:
        config = (ingestd_config if agent == "ingestd" else fluent_bit_config)(directory, upload_port=receiver.port, gzip=gzip)
        run = Run(command(agent, args, config), stdin_path=readings)
        done = receiver.wait_for(args.readings)
        rate = args.readings / (done - run.started)
        # ingestd exits once the queue is drained; Fluent Bit at the end of stdin, after its grace period.
        cpu, rss, written, _ = run.finish(timeout=30)
    finally:
        receiver.stop()
    per_million = 1e6 / args.readings
    return {"cpu_s_per_million": cpu * per_million, "readings_per_s": rate,
            "device_bytes_per_reading": written / args.readings, "peak_rss_mib": rss}


def scenario_ingest(agent, args, readings):
    fresh(args.dir)
    if agent == "ingestd":
        config = ingestd_config(args.dir)
    else:
        config = fluent_bit_config(args.dir, null_output=True)
    run = Run(command(agent, args, config), stdin_path=readings)
    cpu, rss, written, _ = run.finish()
    return {"cpu_s_per_million": cpu * 1e6 / args.readings, "peak_rss_mib": rss,
            "device_bytes_per_reading": written / args.readings}


def scenario_tail(agent, args, readings):
    fresh(args.dir)
    receiver = Receiver(args.dir)
    try:
        config = (ingestd_config if agent == "ingestd" else fluent_bit_config)(
            args.dir, upload_port=receiver.port, follow=readings)
        run = Run(command(agent, args, config))
        done = receiver.wait_for(args.readings)
        rate = args.readings / (done - run.started)
        peak = run.status("VmHWM")
        cpu, _, _, _ = run.finish(terminate=True)
    finally:
        receiver.stop()
    return {"peak_rss_mib": peak, "cpu_s_per_million": cpu * 1e6 / args.readings, "readings_per_s": rate}


def scenario_idle(agent, args, readings):
    fresh(args.dir)
    receiver = Receiver(args.dir)
    try:
        config = (ingestd_config if agent == "ingestd" else fluent_bit_config)(args.dir, upload_port=receiver.port)
        run = Run(command(agent, args, config), stdin_pipe=True)
        time.sleep(10)
        rss, private = run.status("VmRSS"), run.private_mib()
        anon, pss = run.status("RssAnon"), run.rollup_mib("Pss")
        run.finish(terminate=True)
    finally:
        receiver.stop()
    # RSS counts the code pages mapped from the page cache (shared, clean,
    # given back under pressure); anonymous memory is what the agent holds.
    return {"idle_rss_mib": rss, "idle_private_mib": private, "idle_anon_mib": anon, "idle_pss_mib": pss}


def scenario_backlog(agent, args, backlog_readings):
    directory = args.dir
    fresh(directory)
    # Queued while the receiver is down: port 9 (discard) refuses on loopback.
    # Both stop at the end of their input without waiting for the receiver.
    if agent == "ingestd":
        config = ingestd_config(directory, upload_port=9)
        text = open(config).read().replace("shutdown_timeout_ms = 900000", "shutdown_timeout_ms = 0")
        open(config, "w").write(text)
    else:
        config = fluent_bit_config(directory, upload_port=9, grace=1)
    fill = Run(command(agent, args, config), stdin_path=backlog_readings)
    fill.finish(timeout=600)
    receiver = Receiver(directory)
    try:
        if agent == "ingestd":
            config = ingestd_config(directory, upload_port=receiver.port)
            run = Run(command(agent, args, config))  # stdin /dev/null: drains, then exits
        else:
            empty = os.path.join(directory, "empty.log")
            open(empty, "w").close()
            config = fluent_bit_config(directory, upload_port=receiver.port, follow=empty)
            run = Run(command(agent, args, config))
        done = receiver.wait_for(args.backlog)
        rate = args.backlog / (done - run.started)
        run.finish(timeout=5, terminate=agent != "ingestd")
    finally:
        receiver.stop()
    return {"backlog_readings_per_s": rate}


def receiver_alone(args, backlog_readings, lines=4000):
    """Readings/s the receiver takes from a C client doing nothing else:
    BACKLOG readings in bodies of `lines` lines, one keep-alive connection."""
    body = os.path.join(args.dir, f"body-{lines}.ndjson")
    with open(backlog_readings) as source, open(body, "w") as out:
        for _, line in zip(range(lines), source):
            out.write(line)
    receiver = Receiver(args.dir)
    try:
        requests = max(1, args.backlog // lines)
        answer = subprocess.run([args.post, f"http://127.0.0.1:{receiver.port}/ingest/v1/batches", body,
                                 str(requests)], check=True, capture_output=True, text=True).stdout.split()
        return float(answer[0]) * lines
    finally:
        receiver.stop()


def median(values):
    values = [v for v in values if v == v]
    return statistics.median(values) if values else float("nan")


def main():
    args = parse()
    UPLOAD_SETTINGS.extend(args.upload_set)
    os.makedirs(args.dir, exist_ok=True)
    wanted = [s for s in args.only.split(",") if s]
    readings = os.path.join(args.dir, f"readings-{args.readings}.ndjson")
    make_readings(readings, args.readings)
    backlog = os.path.join(args.dir, f"readings-{args.backlog}.ndjson")
    if "backlog" in wanted:
        make_readings(backlog, args.backlog)
    line_bytes = os.path.getsize(readings) / args.readings
    load = open("/proc/loadavg").read().split()[0]
    print(f"machine: {os.cpu_count()} cores; 1-minute load {load}; {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}")
    print(f"readings: {args.readings:,} of {line_bytes:.0f} B a line on average; {args.rounds} rounds, interleaved")
    if UPLOAD_SETTINGS:
        print(f"ingestd [upload] also: {', '.join(UPLOAD_SETTINGS)}")
    results = {s: {"ingestd": [], "fluent-bit": []} for s in wanted}
    ceilings = []
    runners = {
        "e2e": lambda agent: scenario_upload(agent, args, readings, gzip=False),
        "gzip": lambda agent: scenario_upload(agent, args, readings, gzip=True),
        "ingest": lambda agent: scenario_ingest(agent, args, readings),
        "tail": lambda agent: scenario_tail(agent, args, readings),
        "idle": lambda agent: scenario_idle(agent, args, readings),
        "backlog": lambda agent: scenario_backlog(agent, args, backlog),
    }
    for round_number in range(1, args.rounds + 1):
        order = ["ingestd", "fluent-bit"] if round_number % 2 else ["fluent-bit", "ingestd"]
        for scenario in wanted:
            for agent in order:
                figures = runners[scenario](agent)
                results[scenario][agent].append(figures)
                load = open("/proc/loadavg").read().split()[0]
                shown = ", ".join(f"{k} {v:,.2f}" for k, v in figures.items())
                print(f"round {round_number} {scenario:8} {agent:10} {shown} (load {load})", flush=True)
            if scenario == "backlog" and args.post:
                ceilings.append(receiver_alone(args, backlog))
                load = open("/proc/loadavg").read().split()[0]
                print(f"round {round_number} backlog  receiver alone (post.c, 4000-line bodies) "
                      f"readings/s {ceilings[-1]:,.2f} (load {load})", flush=True)
    print()
    print("| scenario | figure | ingestd (median) | Fluent Bit (median) | ratio per round | median ratio |")
    print("| --- | --- | --- | --- | --- | --- |")
    for scenario in wanted:
        mine, theirs = results[scenario]["ingestd"], results[scenario]["fluent-bit"]
        for key in mine[0]:
            ratios = [a[key] / b[key] if b[key] else float("nan") for a, b in zip(mine, theirs)]
            print(f"| {scenario} | {key} | {median([m[key] for m in mine]):,.2f} | {median([t[key] for t in theirs]):,.2f} | "
                  f"{' '.join(f'{r:.2f}' for r in ratios)} | **{median(ratios):.2f}** |")
    if ceilings:
        theirs = [t["backlog_readings_per_s"] for t in results["backlog"]["fluent-bit"]]
        ratios = [c / t for c, t in zip(ceilings, theirs)]
        print(f"| backlog | receiver alone (post.c), readings/s: the most any agent drains here | "
              f"{median(ceilings):,.2f} | {median(theirs):,.2f} | {' '.join(f'{r:.2f}' for r in ratios)} | "
              f"**{median(ratios):.2f}** |")
    if "e2e" in wanted:
        print(f"\nNDJSON line: {line_bytes:.0f} B; device bytes per reading end to end / line: "
              f"ingestd {median([m['device_bytes_per_reading'] for m in results['e2e']['ingestd']]) / line_bytes:.2f}, "
              f"Fluent Bit {median([m['device_bytes_per_reading'] for m in results['e2e']['fluent-bit']]) / line_bytes:.2f}")


if __name__ == "__main__":
    main()
