#!/usr/bin/env python3
"""A stand-in for ClickHouse's HTTP interface, for the ClickHouse sink's tests.

Takes `POST /?query=INSERT INTO `db`.`table` FORMAT JSONEachRow&insert_deduplication_token=K`
with an NDJSON body (gzip when Content-Encoding says so), stores rows by
_id per table (ReplacingMergeTree semantics: a repeated _id replaces) and
drops an insert whose dedup token it has seen (non_replicated_deduplication_window).
Error answers are ClickHouse's own wording and statuses (exceptionCodeToHTTPStatus):
  --too-many-parts N     the first N inserts: 500 "Code: 252 … (TOO_MANY_PARTS)"
  --poison DEVICE        an insert holding that deviceId: 400 "Code: 27 … (CANNOT_PARSE_INPUT_ASSERTION_FAILED)"
  --tables DB.T[,…]      only these tables exist; others: 404 "Code: 60 … (UNKNOWN_TABLE)"
Writes its port to --port-file once listening on 127.0.0.1. GET /stats: {"rows", "duplicate_ids",
"deduplicated_inserts", "inserts", "queries", "gzip_bodies"}.
"""
import argparse, gzip, json, os, threading, urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

p = argparse.ArgumentParser()
p.add_argument("--port", type=int, default=0)
p.add_argument("--port-file", required=True)
p.add_argument("--too-many-parts", type=int, default=0)
p.add_argument("--poison", default=None)
p.add_argument("--tables", default=None)
args = p.parse_args()

VERSION = "(version 23.8.16.40 (official build))"
lock = threading.Lock()
rows, tokens = {}, set()
stats = {"rows": 0, "duplicate_ids": 0, "deduplicated_inserts": 0, "inserts": 0, "queries": [], "gzip_bodies": 0}
tables = set(args.tables.split(",")) if args.tables else None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, status, body):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=UTF-8")
        self.send_header("X-ClickHouse-Exception-Code", body.split(".")[0].split(" ")[-1] if body.startswith("Code:") else "0")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        with lock:
            self.answer(200, json.dumps(stats))

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
            with lock:
                stats["gzip_bodies"] += 1
        query = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)
        text = query.get("query", [""])[0]
        token = query.get("insert_deduplication_token", [None])[0]
        with lock:
            stats["queries"] = sorted(set(stats["queries"]) | {text})
            stats["inserts"] += 1
            prefix, suffix = "INSERT INTO ", " FORMAT JSONEachRow"
            if not (text.startswith(prefix) and text.endswith(suffix)) or not token:
                return self.answer(400, f"Code: 62. DB::Exception: Syntax error: failed at position 1: {text[:40]}. (SYNTAX_ERROR) {VERSION}\n")
            table = text[len(prefix):-len(suffix)].replace("`", "")
            if tables is not None and table not in tables:
                return self.answer(404, f"Code: 60. DB::Exception: Table {table} does not exist. (UNKNOWN_TABLE) {VERSION}\n")
            if stats["inserts"] <= args.too_many_parts:
                return self.answer(500, "Code: 252. DB::Exception: Too many parts (300 with average size of 1.00 KiB) in table "
                                        f"'{table}'. Merges are processing significantly slower than inserts. (TOO_MANY_PARTS) {VERSION}\n")
            records = [json.loads(line) for line in body.decode().splitlines() if line]
            if args.poison and any(r.get("deviceId") == args.poison for r in records):
                return self.answer(400, "Code: 27. DB::Exception: Cannot parse input: expected '\"' before: 'x': (at row 1)\n: "
                                        f"While executing ParallelParsingBlockInputFormat. (CANNOT_PARSE_INPUT_ASSERTION_FAILED) {VERSION}\n")
            if (table, token) in tokens:
                stats["deduplicated_inserts"] += 1
                return self.answer(200, "")
            tokens.add((table, token))
            for r in records:
                key = (table, r["_id"])
                if key in rows:
                    stats["duplicate_ids"] += 1
                rows[key] = r
            stats["rows"] = len(rows)
        self.answer(200, "")


server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
with open(args.port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(args.port_file + ".tmp", args.port_file)
server.serve_forever()
