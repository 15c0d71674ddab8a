#!/usr/bin/env python3
"""Simulate a power cut below a process (see powercut/powercut.c).

  powercut.py build OUT.so             compile the LD_PRELOAD layer (cc or clang)
  powercut.py cut LOG_DIR [--seed N]   after the process was killed with SIGKILL:
                                       rebuild every tracked file from its durable
                                       image plus a random part of its unsynced
                                       writes, delete its -shm, empty LOG_DIR

Run the process with LD_PRELOAD=OUT.so POWERCUT_PATH=<queue file> POWERCUT_LOG=<dir>.
Each unsynced write is kept (40 %), lost (30 %) or torn: only some of its
512-byte sectors reach the disk (30 %); an unsynced truncation happens or not.
Prints one line per file: name, durable bytes, pending operations kept/lost/torn.
"""
import argparse, os, random, shutil, struct, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
SECTOR = 512


def build(out):
    source = os.path.join(HERE, "powercut", "powercut.c")
    for compiler in ("cc", "clang", "gcc"):
        if shutil.which(compiler):
            subprocess.run([compiler, "-shared", "-fPIC", "-O1", "-o", out, source, "-ldl"], check=True)
            return
    sys.exit("powercut.py: no C compiler (cc, clang or gcc) on PATH")


def operations(log):
    with open(log, "rb") as f:
        data = f.read()
    at = 0
    while at + 17 <= len(data):
        kind = data[at:at + 1]
        offset, length = struct.unpack("<qq", data[at + 1:at + 17])
        if kind == b"W":
            yield "W", offset, data[at + 17:at + 17 + length]
            at += 17 + length
        else:
            yield "T", offset, None
            at += 17


def cut(log_dir, seed, tracked_dir=None):
    rng = random.Random(seed)
    names = sorted(n[:-len(".durable")] for n in os.listdir(log_dir) if n.endswith(".durable"))
    for name in names:
        durable = os.path.join(log_dir, name + ".durable")
        pending = os.path.join(log_dir, name + ".pending")
        with open(durable, "rb") as f:
            image = bytearray(f.read())
        kept = lost = torn = 0
        if os.path.exists(pending):
            for kind, offset, data in operations(pending):
                if kind == "T":
                    if rng.random() < 0.5:
                        del image[offset:]
                        kept += 1
                    else:
                        lost += 1
                    continue
                roll = rng.random()
                if roll < 0.3:
                    lost += 1
                    continue
                if len(image) < offset + len(data):
                    image.extend(b"\0" * (offset + len(data) - len(image)))
                if roll < 0.7:
                    image[offset:offset + len(data)] = data
                    kept += 1
                    continue
                torn += 1
                start = offset
                while start < offset + len(data):
                    end = min((start // SECTOR + 1) * SECTOR, offset + len(data))
                    if rng.random() < 0.5:
                        image[start:end] = data[start - offset:end - offset]
                    start = end
        target = os.path.join(tracked_dir, name)
        with open(target, "wb") as f:
            f.write(image)
        print(f"{name} durable={os.path.getsize(durable)} kept={kept} lost={lost} torn={torn}")
        os.unlink(durable)
        if os.path.exists(pending):
            os.unlink(pending)
        shm = os.path.join(tracked_dir, name + "-shm")
        if os.path.exists(shm):
            os.unlink(shm)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("out")
    c = sub.add_parser("cut")
    c.add_argument("log_dir")
    c.add_argument("--dir", required=True, help="the directory of the tracked files")
    c.add_argument("--seed", type=int, default=None)
    args = p.parse_args()
    if args.command == "build":
        build(args.out)
    else:
        cut(args.log_dir, args.seed, args.dir)


if __name__ == "__main__":
    main()
