#!/usr/bin/env python3
"""A scriptable ingest backend for the tests (docs/PROTOCOL.md, server side).

Records every _id it stores and counts duplicates, so a test can prove
"every reading delivered, none lost". Prints "PORT <n>" once listening on
127.0.0.1 (port 0 = chosen by the kernel). GET /stats returns the counts.

Faults: the first three apply to the first N POSTs; the others to every POST that matches:
  --fail N --fail-status S --retry-after SECONDS   answer S (e.g. 503, 429)
  --reset N                                        close the connection, no answer
  --slow N --slow-ms MS                            store, then answer after MS
  --poison DEVICE                                  400 for any batch with that deviceId (nothing stored)
  --max-body BYTES                                 413 for larger bodies (nothing stored)
  --always-status S                                answer S to everything (nothing stored)
  --reject-device DEVICE                           store the batch but reject that record in the 200 body
  --tls-cert PEM --tls-key PEM [--client-ca PEM]   serve HTTPS (and require client certificates)
Content identity (fault-injection suite): --key-field NAME counts distinct values of that
  field ("content_unique") and how often a value arrives under a new _id
  ("content_duplicates": a reading duplicated before it was queued, which _id
  dedup cannot catch); /stats also reports their "content_min"/"content_max" when numeric
  after a non-digit prefix (e.g. deviceId "S17" → 17).

Identity (docs/PROTOCOL.md, "Identity"): POST /auth/v1/apps/<app>/login|refresh|logout.
  --auth                      batches need "Authorization: Bearer <access token>" (else 401)
  --token-ttl SECONDS         access token lifetime (default 3600)
  --api-key KEY               an accepted API key (repeatable)
  --account EMAIL:PASSWORD    an accepted email/password account (repeatable)
Control (tests script the server while it runs):
  POST /control/expire-tokens     every access token issued so far is refused (401)
  POST /control/refuse-refresh    refresh answers 401 from now on
  POST /control/refuse-all-sessions  every session, even a new one, gets 409 (recovery cannot work)
  POST /control/lose-sessions     batches from every session seen so far get 409
                                  (body {"recoverable":false}: a breaking change)
"""
import argparse, gzip, json, socket, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, default=0)
p.add_argument("--port-file", default=None)
p.add_argument("--fail", type=int, default=0)
p.add_argument("--fail-status", type=int, default=503)
p.add_argument("--retry-after", default=None)
p.add_argument("--reset", type=int, default=0)
p.add_argument("--slow", type=int, default=0)
p.add_argument("--slow-ms", type=int, default=0)
p.add_argument("--poison", default=None)
p.add_argument("--reject-device", default=None)
p.add_argument("--max-body", type=int, default=0)
p.add_argument("--always-status", type=int, default=0)
p.add_argument("--fast", action="store_true", help="benchmarks: count records, no JSON parsing or dedup")
p.add_argument("--tls-cert", default=None)
p.add_argument("--tls-key", default=None)
p.add_argument("--client-ca", default=None)
p.add_argument("--auth", action="store_true")
p.add_argument("--token-ttl", type=int, default=3600)
p.add_argument("--api-key", action="append", default=[])
p.add_argument("--account", action="append", default=[])
p.add_argument("--key-field", default=None)
p.add_argument("--huge-answer-mb", type=int, default=0, help="answer 200 with a body of this many MB of spaces")
p.add_argument("--record", default=None, help="append every received record line, as received, to this file")
args = p.parse_args()

lock = threading.RLock()
state = {"requests": 0, "unique": 0, "duplicates": 0, "ids": set(), "keys": set(), "key_repeats": 0,
         "bodies_gzip": 0, "statuses": {}, "types": set(), "auth": set(), "via": set(),
         "logins": 0, "refreshes": 0, "logouts": 0, "sessions": set(), "reset_demands": 0,
         "content_unique": 0, "content_duplicates": 0, "content_min": None, "content_max": None}
content = set()  # --key-field values seen
tokens = {"access": {}, "refresh": {}, "refuse_refresh": False, "lost": set(), "recoverable": True}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, status, body=b"", headers=()):
        with lock:
            state["statuses"][str(status)] = state["statuses"].get(str(status), 0) + 1
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        with lock:
            s = {k: (sorted(v) if isinstance(v, set) and k != "ids" else v) for k, v in state.items() if k != "ids"}
            s["keys"] = len(state["keys"])
        self.answer(200, json.dumps(s).encode(), [("Content-Type", "application/json")])

    def bearer(self):
        value = self.headers.get("Authorization", "")
        return value[7:] if value.startswith("Bearer ") else None

    def issue(self, user):
        import secrets
        access, refresh = secrets.token_hex(16), secrets.token_hex(16)
        tokens["access"][access] = (user, time.time() + args.token_ttl)
        tokens["refresh"][refresh] = user
        return access, refresh

    def identity(self, action, raw):
        with lock:
            if action == "login":
                req = json.loads(raw or b"{}")
                provider = req.get("provider")
                if provider == "anonymous":
                    import secrets
                    user = "anon-" + secrets.token_hex(6)
                elif provider == "api-key" and req.get("key") in args.api_key:
                    user = "key-" + str(args.api_key.index(req["key"]))
                elif provider == "email-password" and f'{req.get("email")}:{req.get("password")}' in args.account:
                    user = "user-" + req["email"].split("@")[0]
                else:
                    return self.answer(401, b'{"error":"invalid credentials"}')
                state["logins"] += 1
                access, refresh = self.issue(user)
                body = {"user_id": user, "access_token": access, "refresh_token": refresh, "expires_in": args.token_ttl}
                return self.answer(200, json.dumps(body).encode(), [("Content-Type", "application/json")])
            if action == "refresh":
                user = tokens["refresh"].get(self.bearer())
                if user is None or tokens["refuse_refresh"]:
                    return self.answer(401, b'{"error":"refresh refused"}')
                state["refreshes"] += 1
                import secrets
                access = secrets.token_hex(16)
                tokens["access"][access] = (user, time.time() + args.token_ttl)
                body = {"access_token": access, "expires_in": args.token_ttl}
                return self.answer(200, json.dumps(body).encode(), [("Content-Type", "application/json")])
            if action == "logout":
                tokens["refresh"].pop(self.bearer(), None)
                state["logouts"] += 1
                return self.answer(204)
        return self.answer(404, b"no such action")

    def control(self, action, raw):
        with lock:
            if action == "expire-tokens":
                tokens["access"].clear()
            elif action == "refuse-refresh":
                tokens["refuse_refresh"] = True
            elif action == "refuse-all-sessions":
                tokens["refuse_all"] = True
            elif action == "lose-sessions":
                tokens["lost"] |= state["sessions"]
                tokens["recoverable"] = json.loads(raw or b"{}").get("recoverable", True)
            else:
                return self.answer(404, b"no such control")
        return self.answer(204)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        parts = self.path.strip("/").split("/")
        if len(parts) == 5 and parts[0] == "auth":
            return self.identity(parts[4], raw)
        if len(parts) == 2 and parts[0] == "control":
            return self.control(parts[1], raw)
        if args.auth:
            with lock:
                entry = tokens["access"].get(self.bearer())
                ok = entry is not None and entry[1] > time.time()
            if not ok:
                return self.answer(401, b'{"error":"invalid or expired access token"}')
        session = self.headers.get("EdgeIngest-Session")
        if session:
            with lock:
                lost = session in tokens["lost"] or tokens.get("refuse_all", False)
                if lost:
                    state["reset_demands"] += 1
                else:
                    state["sessions"].add(session)
            if lost:
                body = {"error": "client_reset_required", "reason": "session_lost", "recoverable": tokens["recoverable"]}
                return self.answer(409, json.dumps(body).encode(), [("Content-Type", "application/json")])
        with lock:
            state["requests"] += 1
            n = state["requests"]
        if args.reset and n <= args.reset:
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if args.huge_answer_mb:
            chunk = b" " * (1 << 20)
            self.send_response(200)
            self.send_header("Content-Length", str(args.huge_answer_mb << 20))
            self.end_headers()
            for _ in range(args.huge_answer_mb):
                self.wfile.write(chunk)
            return
        if args.always_status:
            return self.answer(args.always_status, b'{"error":"refused"}')
        if args.fail and n <= args.fail:
            headers = [("Retry-After", args.retry_after)] if args.retry_after is not None else []
            return self.answer(args.fail_status, b"try later", headers)
        if args.max_body and len(raw) > args.max_body:
            return self.answer(413, b"too large")
        body = gzip.decompress(raw) if self.headers.get("Content-Encoding") == "gzip" else raw
        if args.fast:
            with lock:
                state["unique"] += body.count(b"\n")
            return self.answer(200, b"")
        lines = [l for l in body.split(b"\n") if l]
        if args.record:
            with lock, open(args.record, "ab") as f:
                f.write(b"".join(l + b"\n" for l in lines))
        try:
            records = [json.loads(l) for l in lines]
        except ValueError:
            return self.answer(400, b"not JSON")
        if args.poison and any(r.get("deviceId") == args.poison for r in records):
            return self.answer(400, b"bad record")
        rejected = [{"index": i, "reason": "device is blocked"} for i, r in enumerate(records)
                    if args.reject_device and r.get("deviceId") == args.reject_device]
        with lock:
            if self.headers.get("Content-Encoding") == "gzip":
                state["bodies_gzip"] += 1
            state["types"].add(self.headers.get("EdgeIngest-Record-Type", ""))
            if self.headers.get("Via"):
                state["via"].add(self.headers.get("Via"))
            if self.headers.get("Authorization"):
                state["auth"].add(self.headers.get("Authorization"))
            key = self.headers.get("Idempotency-Key")
            if key in state["keys"]:
                state["key_repeats"] += 1
            state["keys"].add(key)
            for i, r in enumerate(records):
                if any(x["index"] == i for x in rejected):
                    continue
                if r["_id"] in state["ids"]:
                    state["duplicates"] += 1
                else:
                    state["ids"].add(r["_id"])
                    state["unique"] += 1
                    if args.key_field is not None:
                        value = r.get(args.key_field)
                        if value in content:
                            state["content_duplicates"] += 1
                        else:
                            content.add(value)
                            state["content_unique"] += 1
                            digits = str(value).lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_")
                            if digits.isdigit():
                                number = int(digits)
                                state["content_min"] = number if state["content_min"] is None else min(number, state["content_min"])
                                state["content_max"] = number if state["content_max"] is None else max(number, state["content_max"])
        if args.slow and n <= args.slow:
            time.sleep(args.slow_ms / 1000)
        reply = json.dumps({"accepted": len(records) - len(rejected), "rejected": rejected}).encode()
        try:
            self.answer(200, reply, [("Content-Type", "application/json")])
        except (BrokenPipeError, ConnectionResetError):
            pass


class TLSServer(ThreadingHTTPServer):
    """Handshakes on the connection's own thread, not in accept(). A refused
    handshake (no client certificate) has sent its alert; the connection is
    then shut for writing and drained before it is closed: closed at once
    with the client's request unread, the kernel resets it, and the client
    may see the reset instead of the alert that says what was wrong."""

    def finish_request(self, request, client_address):
        try:
            request.do_handshake()
        except (OSError, ValueError):
            try:
                request.shutdown(socket.SHUT_WR)  # unwraps: plain reads below
                request.settimeout(2)
                while request.recv(65536):
                    pass
            except OSError:
                pass
            return
        super().finish_request(request, client_address)


server = (TLSServer if args.tls_cert else ThreadingHTTPServer)(("127.0.0.1", args.port), Handler)
server.daemon_threads = True
if args.tls_cert:
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.tls_cert, args.tls_key)
    if args.client_ca:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(args.client_ca)
    server.socket = ctx.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    # /stats stays reachable without TLS on a control port.
    control = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    control.daemon_threads = True
    threading.Thread(target=control.serve_forever, daemon=True).start()
    control_port = control.server_address[1]
else:
    control_port = None
print(f"PORT {server.server_address[1]}", flush=True)
if args.port_file:
    with open(args.port_file + ".tmp", "w") as f:
        f.write(f"{server.server_address[1]} {control_port or server.server_address[1]}")
    import os
    os.rename(args.port_file + ".tmp", args.port_file)
server.serve_forever()
