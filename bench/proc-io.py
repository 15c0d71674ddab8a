#!/usr/bin/env python3
"""Runs a command with stdin from a file and prints what it cost as one line:
CPU seconds (user + sys), wall seconds, peak RSS (MB), and the bytes it wrote
to the storage device (/proc/PID/io write_bytes, read after the process
exited and before it is reaped, so its last checkpoint counts).

  bench/proc-io.py INPUT COMMAND [ARG...]
  -> cpu_s=2.41 wall_s=3.02 rss_mb=24.1 write_bytes=390123456 exit=0

rss_mb is wait4's ru_maxrss, which also counts this script's own memory
(about 10 MB) from before the command was exec'd: it cannot read below
that. bench/peer.py reads the agent's own VmHWM instead.
"""
import os
import subprocess
import sys
import time

if len(sys.argv) < 3:
    sys.exit(__doc__)
with open(sys.argv[1], "rb") as stdin:
    start = time.monotonic()
    process = subprocess.Popen(sys.argv[2:], stdin=stdin, stdout=subprocess.DEVNULL)
    # Wait for the exit without reaping: /proc/PID/io still holds the totals.
    os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)
    wall = time.monotonic() - start
    written = 0
    with open(f"/proc/{process.pid}/io") as io:
        for line in io:
            if line.startswith("write_bytes:"):
                written = int(line.split()[1])
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
print(
    f"cpu_s={usage.ru_utime + usage.ru_stime:.2f} wall_s={wall:.2f} "
    f"rss_mb={usage.ru_maxrss / 1024:.1f} write_bytes={written} exit={process.returncode}"
)
