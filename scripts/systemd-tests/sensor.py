"""A sensor script for the systemd scenarios: one reading each --interval
seconds, numbered from 1 (field "seq"), to stdout, --count of them; with
--ids each line carries its own ObjectId "_id" (as a protocol client would).
Never reads stdin; dies (SIGPIPE) if its pipe does."""
import argparse, os, sys, time

parser = argparse.ArgumentParser()
parser.add_argument("--count", type=int, required=True)
parser.add_argument("--interval", type=float, default=0.01)
parser.add_argument("--ids", action="store_true")
args = parser.parse_args()
machine = os.urandom(5).hex()
for seq in range(1, args.count + 1):
    line = '{"sensor":"pipe","seq":%d,"value":%.3f}' % (seq, seq / 7)
    if args.ids:
        line = '{"_id":"%08x%s%06x",' % (int(time.time()), machine, seq) + line[1:]
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    time.sleep(args.interval)
