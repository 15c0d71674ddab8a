#!/usr/bin/env python3
"""A fault-injecting TCP proxy for the tests: agent -> this proxy -> backend, on loopback.

Relays bytes both ways unchanged (it does not parse HTTP; keep-alive works)
and injects network faults. Prints "PORT <n>" once listening on 127.0.0.1,
then "CONTROL <n>" (the control port, below).

  --port P                  listening port (default 0 = chosen by the kernel; re-used on every re-bind)
  --port-file F             once listening, write "<port> <control port>" to F (atomically)
  --upstream HOST:PORT      the backend (required)
  --control-port P          control port (default 0 = chosen by the kernel)
  --seed N                  seeds every random choice (default 0): runs are reproducible
  --verbose                 log each fault and each connection error to stderr (otherwise silent)

Faults (all may be combined):
  --flap-up-ms A --flap-down-ms B
      alternate up and down phases of A and B ms (each randomised +-50 %), starting up.
      Down = unreachable: at the start of the phase the listening socket is closed
      (new connections get ECONNREFUSED) and every open connection is reset on both
      sides (SO_LINGER 0 + close = RST); up again = re-bound on the same port.
  --reset-probability P     per relayed message (an HTTP request or answer: what one side
                            sends before the other answers), either direction: with
                            probability P reset both sides (RST) before the message, after
                            its header block, or inside its body (a third each; no body:
                            inside the header block), dropping the rest. In an answer the
                            batch is stored but the client sees a reset and must re-send.
                            Decided per message, not per TCP segment, so that a seed gives
                            the same resets whatever the segmentation.
  --delay-ms-max D          hold each chunk a random 0..D ms before relaying it (order kept)
  --blackhole-probability P per accepted connection: accept and read it, never connect
                            upstream, never answer (the client must time out)
  --blackhole-every N       also blackhole every Nth accepted connection (the Nth, 2Nth, …):
                            a fixed number of blackholes however few connections a run has
  --down-for-ms D           POST /down comes back up by itself after D ms (default 0: stays
                            down until POST /up); POST /down?ms=N overrides it per call

Control, HTTP on 127.0.0.1:<control port> (each answers the stats JSON below):
  POST /down[?ms=N]   become unreachable as in a down phase, until POST /up (or N ms);
                      answered once the port is closed and the connections are reset
  POST /up            re-bind the port (answered once listening again); flapping restarts
                      with an up phase
  GET /stats          {"state": "up"|"down"|"rebinding", "port", "accepted", "active",
                       "down_phases" (unreachable phases entered, flapped or /down),
                       "down_resets" (connections reset by them), "resets_injected"
                       (= "resets_in_request" + "resets_in_response" = "resets_before" +
                       "resets_after_headers" + "resets_in_body"), "blackholed",
                       "bytes_to_upstream", "bytes_to_client", "delayed_chunks",
                       "delay_ms_total", "upstream_connect_failures", "peer_errors",
                       "rebind_failures"}

Randomness: connection n (0-based, in accept order) decides blackholing with its own
generator, and each of its directions draws its reset plans per message and its delays
per chunk from two more, so the same seed and the same traffic (sequence of connections
and messages) give the same blackholes and resets; delays follow recv() boundaries and
flap phases are wall-clock, so what they hit depends on timing.
Exits 0 on SIGTERM or SIGINT.
"""
import argparse, collections, errno, json, os, random, selectors, signal, socket, struct, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

p = argparse.ArgumentParser(description="fault-injecting TCP proxy (see the module docstring)")
p.add_argument("--port", type=int, default=0)
p.add_argument("--port-file", default=None)
p.add_argument("--upstream", required=True, help="HOST:PORT of the backend")
p.add_argument("--control-port", type=int, default=0)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--flap-up-ms", type=float, default=0)
p.add_argument("--flap-down-ms", type=float, default=0)
p.add_argument("--reset-probability", type=float, default=0.0)
p.add_argument("--delay-ms-max", type=float, default=0)
p.add_argument("--blackhole-probability", type=float, default=0.0)
p.add_argument("--blackhole-every", type=int, default=0)
p.add_argument("--down-for-ms", type=float, default=0)
p.add_argument("--verbose", action="store_true")
args = p.parse_args()
if (args.flap_up_ms > 0) != (args.flap_down_ms > 0):
    p.error("--flap-up-ms and --flap-down-ms go together")
for name in ("reset_probability", "blackhole_probability"):
    if not 0.0 <= getattr(args, name) <= 1.0:
        p.error(f"--{name.replace('_', '-')} must be within 0..1")
host, _, port_text = args.upstream.rpartition(":")
try:
    UPSTREAM = socket.getaddrinfo(host.strip("[]") or "127.0.0.1", int(port_text), 0, socket.SOCK_STREAM)[0]
except (ValueError, OSError) as e:
    p.error(f"--upstream {args.upstream}: {e}")

CHUNK = 65536
MAX_BUFFERED = 1 << 20  # per direction: stop reading the source beyond this
READ, WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE
RST = struct.pack("ii", 1, 0)


def log(message):
    if args.verbose:
        print(f"faulty-proxy: {message}", file=sys.stderr, flush=True)


def warn(message):
    try:
        print(f"faulty-proxy: {message}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


class Direction:
    """One way of a connection: bytes read from src, held (delay), written to dst."""

    def __init__(self, name, n):
        self.name = name
        self.rng = random.Random(f"{args.seed}:{n}:{name}")              # reset plans, one draw set per message
        self.delay_rng = random.Random(f"{args.seed}:{n}:{name}:delay")  # one draw per chunk
        self.src = self.dst = None
        self.in_message = False             # this side is talking (the other side has not answered since)
        self.message_bytes = 0              # received in the current message so far
        self.plan = None                    # reset planned in this message: "before", "after-headers", "in-body"
        self.fraction = 0.0
        self.head = bytearray()             # the message start, until its header block ends
        self.cut = None                     # reset once this many bytes of the message were relayed
        self.doomed = False                 # the cut was reached: relay what is queued, then reset
        self.pending = bytearray()          # due, not yet written
        self.delayed = collections.deque()  # (due time, bytes)
        self.delayed_bytes = 0
        self.last_due = 0.0
        self.eof = False                    # src sent FIN
        self.shut = False                   # FIN passed on to dst

    def buffered(self):
        return len(self.pending) + self.delayed_bytes


class Conn:
    def __init__(self, n, client):
        self.n, self.client, self.upstream = n, client, None
        self.connecting = self.blackhole = self.closed = False
        self.request, self.response = Direction("request", n), Direction("response", n)
        self.request.src = self.response.dst = client
        self.masks = {}  # socket -> registered selector mask


class Proxy:
    def __init__(self):
        self.sel = selectors.DefaultSelector()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        self.sel.register(self.wake_r, READ, "wake")
        self.listener, self.port = None, args.port
        self.is_up = False            # wanted up (listener may be waiting for a re-bind)
        self.rebind_at = None
        self.conns = {}
        self.next_n = 0
        self.stopping = False
        self.commands, self.commands_lock = collections.deque(), threading.Lock()
        self.flap_rng = random.Random(f"{args.seed}:flap")
        self.flapping = args.flap_up_ms > 0
        self.flap_up, self.flap_deadline = True, None
        self.manual_down, self.manual_until = False, None
        self.stats = dict.fromkeys([
            "accepted", "down_phases", "down_resets", "resets_injected", "resets_in_request",
            "resets_in_response", "resets_before", "resets_after_headers", "resets_in_body", "blackholed", "bytes_to_upstream", "bytes_to_client",
            "delayed_chunks", "delay_ms_total", "upstream_connect_failures", "peer_errors",
            "rebind_failures"], 0)

    # --- listening socket -------------------------------------------------------------
    def bind(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", self.port))
            s.listen(128)
        except OSError:
            s.close()
            raise
        s.setblocking(False)
        self.listener, self.port = s, s.getsockname()[1]
        self.sel.register(s, READ, "listener")

    def go_up(self):
        self.is_up = True
        try:
            self.bind()
            self.rebind_at = None
            log(f"up: listening on {self.port}")
        except OSError as e:
            self.stats["rebind_failures"] += 1
            if self.stats["rebind_failures"] in (1, 10, 100, 1000):
                warn(f"cannot re-bind port {self.port} yet ({e}); retrying")
            self.rebind_at = time.monotonic() + 0.05

    def go_down(self):
        self.is_up, self.rebind_at = False, None
        self.stats["down_phases"] += 1
        if self.listener is not None:
            self.sel.unregister(self.listener)
            self.listener.close()  # connections still in the accept queue are reset too
            self.listener = None
        victims = list(self.conns.values())
        for conn in victims:
            self.abort(conn, "down phase")
        self.stats["down_resets"] += len(victims)
        log(f"down: port {self.port} closed, {len(victims)} connection(s) reset")

    def reconcile(self):
        want = self.flap_up and not self.manual_down
        if want and not self.is_up:
            self.go_up()
        elif not want and self.is_up:
            self.go_down()

    def flap_phase(self, up):
        base = args.flap_up_ms if up else args.flap_down_ms
        return base * self.flap_rng.uniform(0.5, 1.5) / 1000

    def restart_flapping(self):
        if self.flapping:
            self.flap_up = True
            self.flap_deadline = time.monotonic() + self.flap_phase(True)

    # --- connections --------------------------------------------------------------------
    def accept_all(self):
        for _ in range(64):
            if self.listener is None:
                return
            try:
                client, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:  # EMFILE, ECONNABORTED...
                log(f"accept: {e}")
                return
            client.setblocking(False)
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = Conn(self.next_n, client)
            self.next_n += 1
            self.stats["accepted"] += 1
            self.conns[conn.n] = conn
            every = args.blackhole_every > 0 and self.stats["accepted"] % args.blackhole_every == 0
            if every or random.Random(f"{args.seed}:{conn.n}:accept").random() < args.blackhole_probability:
                conn.blackhole = True
                self.stats["blackholed"] += 1
                log(f"#{conn.n}: blackholed")
            else:
                self.connect_upstream(conn)
            if not conn.closed:
                self.update(conn)

    def connect_upstream(self, conn):
        family, kind, proto, _, address = UPSTREAM
        up = socket.socket(family, kind, proto)
        up.setblocking(False)
        up.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.upstream = conn.request.dst = conn.response.src = up
        rc = up.connect_ex(address)
        if rc in (errno.EINPROGRESS, errno.EAGAIN, errno.EWOULDBLOCK):
            conn.connecting = True
        elif rc != 0:
            self.stats["upstream_connect_failures"] += 1
            self.abort(conn, f"upstream connect: {os.strerror(rc)}")

    def interest(self, conn, sock):
        if conn.blackhole:
            return READ
        if sock is conn.upstream and conn.connecting:
            return WRITE
        source, target = (conn.request, conn.response) if sock is conn.client else (conn.response, conn.request)
        mask = 0
        if not source.eof and not source.doomed and source.buffered() < MAX_BUFFERED:
            mask |= READ
        if target.pending:
            mask |= WRITE
        return mask

    def update(self, conn):
        for sock in (conn.client, conn.upstream):
            if sock is None:
                continue
            mask, current = self.interest(conn, sock), conn.masks.get(sock, 0)
            if mask == current:
                continue
            if current == 0:
                self.sel.register(sock, mask, conn)
            elif mask == 0:
                self.sel.unregister(sock)
            else:
                self.sel.modify(sock, mask, conn)
            conn.masks[sock] = mask

    def forget(self, conn):
        conn.closed = True
        self.conns.pop(conn.n, None)
        for sock in (conn.client, conn.upstream):
            if sock is not None and conn.masks.get(sock):
                self.sel.unregister(sock)
        conn.masks.clear()

    def abort(self, conn, why):
        """Reset both sides: SO_LINGER 0 then close sends RST."""
        if conn.closed:
            return
        self.forget(conn)
        for sock in (conn.client, conn.upstream):
            if sock is None:
                continue
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RST)
            except OSError:
                pass
            sock.close()
        log(f"#{conn.n}: reset ({why})")

    def close(self, conn, why):
        if conn.closed:
            return
        self.forget(conn)
        for sock in (conn.client, conn.upstream):
            if sock is not None:
                sock.close()
        log(f"#{conn.n}: closed ({why})")

    def peer_error(self, conn, what, e):
        self.stats["peer_errors"] += 1
        self.abort(conn, f"{what}: {e}")

    def on_io(self, conn, sock, mask):
        if conn.blackhole:
            try:
                data = sock.recv(CHUNK)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return self.close(conn, "blackholed client went away")
            if not data:
                self.close(conn, "blackholed client closed")
            return
        if sock is conn.upstream and conn.connecting:
            err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self.stats["upstream_connect_failures"] += 1
                return self.abort(conn, f"upstream connect: {os.strerror(err)}")
            conn.connecting = False
            self.flush(conn, conn.request)
        else:
            source, target = (conn.request, conn.response) if sock is conn.client else (conn.response, conn.request)
            if mask & READ:
                self.receive(conn, source)
            if mask & WRITE and not conn.closed:
                self.flush(conn, target)
        if not conn.closed:
            self.update(conn)

    def receive(self, conn, d):
        try:
            data = d.src.recv(CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            return self.peer_error(conn, f"{d.name} recv", e)
        if not data:
            d.eof = True
            return self.maybe_shut(conn, d)
        data = self.plan_reset(conn, d, data)
        if args.delay_ms_max:
            delay = d.delay_rng.uniform(0, args.delay_ms_max) / 1000
            d.last_due = max(d.last_due, time.monotonic() + delay)
            d.delayed.append((d.last_due, data))
            d.delayed_bytes += len(data)
            self.stats["delayed_chunks"] += 1
            self.stats["delay_ms_total"] += round(delay * 1000)
        else:
            d.pending += data
            self.flush(conn, d)

    def plan_reset(self, conn, d, data):
        """--reset-probability, decided per message so that TCP segmentation does not matter.

        A message is what one side sends before the other side answers (one HTTP request
        or answer). Each message draws the same three numbers from its direction's
        generator: reset or not, where (before it, after its header block, inside its
        body), and how far into the body. Returns the part of `data` to relay; when the
        cut is reached the direction is doomed: the rest is dropped and both sides are
        reset once the relayed part left."""
        if not d.in_message:
            other = conn.response if d is conn.request else conn.request
            d.in_message, other.in_message = True, False
            d.message_bytes, d.head, d.cut, d.plan = 0, bytearray(), None, None
            u, v, d.fraction = d.rng.random(), d.rng.random(), d.rng.random()
            if u < args.reset_probability:
                d.plan = ("before", "after-headers", "in-body")[min(2, int(v * 3))]
                if d.plan == "before":
                    d.cut = 0
        start = d.message_bytes
        d.message_bytes += len(data)
        if d.plan and d.cut is None:
            d.head += data
            end = d.head.find(b"\r\n\r\n")
            if end >= 0:
                end += 4
                length = 0
                for line in bytes(d.head[:end]).split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length" and value.strip().isdigit():
                        length = int(value)
                if length == 0:
                    d.cut = end // 2  # no body: cut the header block itself
                elif d.plan == "after-headers":
                    d.cut = end
                else:
                    d.cut = end + int(d.fraction * length)
                d.head = bytearray()
            elif len(d.head) > 65536:  # not HTTP: cut at a fixed offset
                d.cut, d.head = 65536, bytearray()
        if d.cut is None or d.cut > d.message_bytes:
            return data
        d.doomed = True
        return data[:d.cut - start]

    def injected_reset(self, conn, d):
        self.stats["resets_injected"] += 1
        self.stats[f"resets_in_{d.name}"] += 1
        self.stats["resets_" + d.plan.replace("-", "_")] += 1
        self.abort(conn, f"injected in the {d.name}, {d.plan} (after {d.cut} bytes of it)")

    def flush(self, conn, d):
        if d.dst is None or (d.dst is conn.upstream and conn.connecting):
            return
        while d.pending:
            try:
                n = d.dst.send(d.pending)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                return self.peer_error(conn, f"{d.name} send", e)
            del d.pending[:n]
            self.stats["bytes_to_upstream" if d.name == "request" else "bytes_to_client"] += n
        if d.doomed and not d.delayed:
            return self.injected_reset(conn, d)
        self.maybe_shut(conn, d)

    def maybe_shut(self, conn, d):
        """Pass a FIN on once everything before it was relayed; close when both ways are done."""
        if not d.eof or d.shut or d.pending or d.delayed:
            return
        if d.dst is conn.upstream and conn.connecting:
            return
        try:
            d.dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        d.shut = True
        if conn.request.shut and conn.response.shut:
            self.close(conn, "both sides finished")

    # --- timers, commands, loop ---------------------------------------------------------------
    def tick(self):
        now = time.monotonic()
        if self.flapping and now >= self.flap_deadline:
            self.flap_up = not self.flap_up
            self.flap_deadline = now + self.flap_phase(self.flap_up)
        if self.manual_down and self.manual_until is not None and now >= self.manual_until:
            self.manual_down, self.manual_until = False, None
            self.restart_flapping()
        self.reconcile()
        if self.rebind_at is not None and now >= self.rebind_at and self.listener is None and self.is_up:
            self.go_up()
        for conn in [c for c in self.conns.values() if c.request.delayed or c.response.delayed]:
            for d in (conn.request, conn.response):
                moved = False
                while d.delayed and d.delayed[0][0] <= now:
                    _, data = d.delayed.popleft()
                    d.delayed_bytes -= len(data)
                    d.pending += data
                    moved = True
                if moved and not conn.closed:
                    self.flush(conn, d)
            if not conn.closed:
                self.update(conn)

    def timeout(self):
        deadlines = [t for t in (self.flap_deadline if self.flapping else None, self.manual_until, self.rebind_at) if t]
        for conn in self.conns.values():
            for d in (conn.request, conn.response):
                if d.delayed:
                    deadlines.append(d.delayed[0][0])
        if not deadlines:
            return 1.0
        return min(1.0, max(0.0, min(deadlines) - time.monotonic()))

    def wake(self):
        try:
            os.write(self.wake_w, b"!")
        except OSError:
            pass

    def call(self, name, arg=None):
        """From the control thread: run a command in the loop and wait for its answer."""
        box = {"done": threading.Event()}
        with self.commands_lock:
            self.commands.append((name, arg, box))
        self.wake()
        if not box["done"].wait(10):
            return None
        return box["result"]

    def run_commands(self):
        while True:
            with self.commands_lock:
                if not self.commands:
                    return
                name, arg, box = self.commands.popleft()
            if name == "down":
                self.manual_down = True
                ms = args.down_for_ms if arg is None else arg
                self.manual_until = time.monotonic() + ms / 1000 if ms and ms > 0 else None
            elif name == "up":
                self.manual_down, self.manual_until = False, None
                self.restart_flapping()
            self.reconcile()
            box["result"] = self.snapshot()
            box["done"].set()

    def snapshot(self):
        state = "down" if not self.is_up else ("up" if self.listener is not None else "rebinding")
        return dict(self.stats, state=state, port=self.port, active=len(self.conns))

    def run(self, control):
        self.restart_flapping()
        self.go_up()
        if self.listener is None:
            sys.exit(f"faulty-proxy: cannot listen on 127.0.0.1:{args.port}")
        control_port = control.server_address[1]
        try:
            print(f"PORT {self.port}", flush=True)
            print(f"CONTROL {control_port}", flush=True)
        except OSError:
            pass
        if args.port_file:
            with open(args.port_file + ".tmp", "w") as f:
                f.write(f"{self.port} {control_port}")
            os.replace(args.port_file + ".tmp", args.port_file)
        while not self.stopping:
            for key, mask in self.sel.select(self.timeout()):
                tag = key.data
                if tag == "wake":
                    try:
                        while os.read(self.wake_r, 512):
                            pass
                    except (BlockingIOError, InterruptedError):
                        pass
                elif tag == "listener":
                    self.accept_all()
                elif not tag.closed:
                    try:
                        self.on_io(tag, key.fileobj, mask)
                    except Exception as e:  # a bug, not a peer: keep serving the others
                        warn(f"#{tag.n}: internal error {type(e).__name__}: {e}")
                        self.abort(tag, "internal error")
            self.run_commands()
            self.tick()
        for conn in list(self.conns.values()):
            self.close(conn, "exiting")
        if self.listener is not None:
            self.listener.close()


proxy = Proxy()


class Control(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, status, obj):
        body = json.dumps(obj).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            self.close_connection = True

    def do_GET(self):
        if urlsplit(self.path).path.rstrip("/") == "/stats":
            return self.reply(200, proxy.call("stats"))
        self.reply(404, {"error": "GET /stats"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0") or 0)
        if length:
            self.rfile.read(length)
        url = urlsplit(self.path)
        action = url.path.strip("/")
        if action == "down":
            ms = parse_qs(url.query).get("ms")
            try:
                ms = float(ms[0]) if ms else None
            except ValueError:
                return self.reply(400, {"error": "ms must be a number"})
            return self.reply(200, proxy.call("down", ms))
        if action == "up":
            return self.reply(200, proxy.call("up"))
        self.reply(404, {"error": "POST /down, POST /up, GET /stats"})


class ControlServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        log(f"control: {sys.exc_info()[1]!r}")


def stop(*_):
    proxy.stopping = True
    proxy.wake()


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
control = ControlServer(("127.0.0.1", args.control_port), Control)
threading.Thread(target=control.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
try:
    proxy.run(control)
finally:
    control.shutdown()
    control.server_close()
