#!/usr/bin/env python3
"""A webhook receiver for the notification tests (Tests/SymServerTests/WebhookTests.swift).

Listens on 127.0.0.1 (port 0 by default: the kernel picks one, printed as "listening PORT"),
appends each request to --log as one JSON line (path, lower-cased headers, body, whether
X-Crashsym-Signature is the HMAC-SHA256 of the body keyed with --secret, computed here with
Python's hmac as an oracle independent of the server), then answers by path:
  /ok                 200
  /status/CODE        CODE, always
  /fail/N/CODE        CODE for the first N requests to this path, then 200
  /hang-once          the first request is recorded, then gets no answer for 120 s; later ones 200
  /slow/MS            200 after MS milliseconds
Each record also says how many requests were in flight when it arrived (itself included), and
the client's port (the same for requests over one kept-alive connection).
"""
import argparse, hashlib, hmac, json, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("--log", required=True)
parser.add_argument("--secret", default=None)
parser.add_argument("--port", type=int, default=0)
args = parser.parse_args()
lock = threading.Lock()
seen = {}
inflight = [0]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        signature = self.headers.get("X-Crashsym-Signature")
        valid = None
        if args.secret is not None and signature is not None:
            expected = "sha256=" + hmac.new(args.secret.encode(), body, hashlib.sha256).hexdigest()
            valid = hmac.compare_digest(expected, signature)
        with lock:
            inflight[0] += 1
            count = seen.get(self.path, 0) + 1
            seen[self.path] = count
            record = {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                      "body": body.decode("utf-8", "replace"), "signature_valid": valid, "time": time.time(), "nth": count,
                      "inflight": inflight[0], "client_port": self.client_address[1]}
            with open(args.log, "a") as log:
                log.write(json.dumps(record) + "\n")
        try:
            self.answer(count)
        finally:
            with lock:
                inflight[0] -= 1

    def answer(self, count):
        status = 200
        parts = self.path.strip("/").split("/")
        if parts[0] == "status":
            status = int(parts[1])
        elif parts[0] == "fail" and count <= int(parts[1]):
            status = int(parts[2])
        elif parts[0] == "hang-once" and count == 1:
            time.sleep(120)
            return
        elif parts[0] == "slow":
            time.sleep(int(parts[1]) / 1000)
        answer = b'{"ok":true}'
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
server.daemon_threads = True
print("listening", server.server_address[1], flush=True)
server.serve_forever()
