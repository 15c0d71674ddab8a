#!/usr/bin/env python3
"""Simulate a power cut below a process (see powercut/powercut.c).

  powercut.py build OUT.so                        compile the LD_PRELOAD layer (cc, clang or gcc)
  powercut.py cut LOG_DIR --dir DIR [--seed N]    after the process was killed with SIGKILL:
                                                  rebuild every tracked file (in DIR) from its
                                                  durable image plus a random part of its
                                                  unsynced writes, delete its -shm, empty LOG_DIR

Run the process with LD_PRELOAD=OUT.so POWERCUT_PATH=<queue file> POWERCUT_LOG=<dir>.
Each unsynced write is kept (40 %), lost (30 %) or torn: only some of its
512-byte sectors reach the disk (30 %); an unsynced truncation happens or not.
Writes of a sync the process was still recording when it died were synced:
they are all applied.
Prints one line per file (name, durable bytes, unsynced operations kept/lost/torn),
then "total kept=K lost=L torn=T" over all files.
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


def truncate(image, size):
    """ftruncate: shrinks, or grows with zeros."""
    if size < len(image):
        del image[size:]
    else:
        image.extend(b"\0" * (size - len(image)))


def write(image, offset, data):
    if len(image) < offset + len(data):
        image.extend(b"\0" * (offset + len(data) - len(image)))
    image[offset:offset + len(data)] = data


def cut(log_dir, seed, tracked_dir):
    rng = random.Random(seed)
    totals = [0, 0, 0]
    names = sorted(n[:-len(".durable")] for n in os.listdir(log_dir) if n.endswith(".durable"))
    for name in names:
        durable, pending, syncing = (os.path.join(log_dir, f"{name}.{kind}") for kind in ("durable", "pending", "syncing"))
        with open(durable, "rb") as f:
            image = bytearray(f.read())
        # A sync had returned for these: replay them whole (re-applying what
        # the layer had already copied into the image changes nothing).
        if os.path.exists(syncing):
            for kind, offset, data in operations(syncing):
                if kind == "T":
                    truncate(image, offset)
                else:
                    write(image, offset, data)
        kept = lost = torn = 0
        if os.path.exists(pending):
            for kind, offset, data in operations(pending):
                if kind == "T":
                    if rng.random() < 0.5:
                        truncate(image, offset)
                        kept += 1
                    else:
                        lost += 1
                    continue
                roll = rng.random()
                if roll < 0.3:
                    lost += 1
                elif roll < 0.7:
                    write(image, offset, data)
                    kept += 1
                else:
                    # Torn: each 512-byte sector reaches the disk or not. Counted
                    # as torn only if a sector really was dropped (a write
                    # within one sector that survives whole was simply kept).
                    start, skipped = offset, False
                    while start < offset + len(data):
                        end = min((start // SECTOR + 1) * SECTOR, offset + len(data))
                        if rng.random() < 0.5:
                            write(image, start, data[start - offset:end - offset])
                        else:
                            skipped = True
                        start = end
                    if skipped:
                        torn += 1
                    else:
                        kept += 1
        target = os.path.join(tracked_dir, name)
        with open(target, "wb") as f:
            f.write(image)
        print(f"{name} durable={os.path.getsize(durable)} kept={kept} lost={lost} torn={torn}")
        totals = [totals[0] + kept, totals[1] + lost, totals[2] + torn]
        for sidecar in (durable, pending, syncing):
            if os.path.exists(sidecar):
                os.unlink(sidecar)
        shm = os.path.join(tracked_dir, name + "-shm")
        if os.path.exists(shm):
            os.unlink(shm)
    print(f"total kept={totals[0]} lost={totals[1]} torn={totals[2]}")


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
