#!/usr/bin/env python3
"""A minimal HTTP forward proxy for the tests: takes absolute-form requests
(POST http://host:port/path), forwards them with "Via: 1.1 edgeingest-test-proxy",
and relays the answer. Writes "<port>" to --port-file once listening.
"""
import argparse, http.client, os, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

p = argparse.ArgumentParser()
p.add_argument("--port-file", required=True)
args = p.parse_args()
HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade"}


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        target = urlsplit(self.path)
        if target.scheme != "http":
            self.send_response(400)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        headers["Via"] = "1.1 edgeingest-test-proxy"
        upstream = http.client.HTTPConnection(target.hostname, target.port or 80, timeout=30)
        upstream.request("POST", target.path + ("?" + target.query if target.query else ""), body=body, headers=headers)
        answer = upstream.getresponse()
        data = answer.read()
        self.send_response(answer.status)
        for k, v in answer.getheaders():
            if k.lower() not in HOP and k.lower() != "content-length":
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        upstream.close()


server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
server.daemon_threads = True
with open(args.port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(args.port_file + ".tmp", args.port_file)
server.serve_forever()
