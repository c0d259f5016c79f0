#!/usr/bin/env python3
"""A scripted stand-in for `crashsym serve`, for the client tests (docs/http-api.md).

Usage: fake_symbol_server.py --log LOG.jsonl [--script SCRIPT.json] [--listen-after SECONDS]

Prints "PORT <n>" on stdout once bound to 127.0.0.1 on a free port. With --listen-after the socket
is bound at once but only listens after that many seconds, so connections are refused until then
(a server restarting). Every request is appended to LOG as one JSON line: time, method, path,
headers, body size and SHA-256, and the JSON body when there is one.

SCRIPT is a JSON object:
  "missing":  list of actions for POST .../symbols/missing, used in order, then the default
  "upload":   list of actions for POST .../symbols, used in order, then the default
  "present":  build-ids the server already has
  "key":      the app key to require (default: any Bearer key)
  "tables":   a directory of <build-id>.csym served by GET /api/v1/apps/{app}/symbols/{build-id}
              (404 for others), each after "table_delay" seconds; such a request is logged when
              it ends, with "end" and "concurrent" (the table requests in flight when it began)
An action is {"status": 503, "retry_after": "1", "body": {...}} (read the body, answer that),
{"hang": SECONDS} (read nothing, answer nothing for that long, then close), or {"close": true}
(close the connection at once). The default missing answer lists every build-id not in "present";
the default upload reads the zip, checks each file against the manifest's size and SHA-256
(422 on a mismatch) and answers 201 with stored / already_present.
"""
import argparse
import hashlib
import io
import json
import os
import socket
import sys
import tempfile
import threading
import time
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATE = {"missing": [], "upload": [], "present": set(), "key": None, "tables": None, "table_delay": 0, "in_flight": 0}


def log_request(log_path, entry):
    with LOCK:
        with open(log_path, "a") as log:
            log.write(json.dumps(entry) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body, retry_after=None):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Request-Id", "fake")
        if retry_after is not None:
            self.send_header("Retry-After", str(retry_after))
        self.end_headers()
        self.wfile.write(data)

    def read_body(self, sink):
        """Reads the body in 1 MiB chunks into `sink` (a file), returning size and SHA-256."""
        remaining = int(self.headers.get("Content-Length", "0"))
        digest = hashlib.sha256()
        size = 0
        while remaining > 0:
            chunk = self.rfile.read(min(remaining, 1 << 20))
            if not chunk:
                break
            digest.update(chunk)
            if sink is not None:
                sink.write(chunk)
            size += len(chunk)
            remaining -= len(chunk)
        return size, digest.hexdigest()

    def do_POST(self):
        route = "upload" if self.path.endswith("/symbols") else "missing" if self.path.endswith("/symbols/missing") else None
        entry = {"time": time.time(), "method": "POST", "path": self.path,
                 "headers": {k.lower(): v for k, v in self.headers.items()}}
        with LOCK:
            action = STATE[route].pop(0) if route and STATE[route] else None
        if action is not None:
            entry["action"] = action
            if "hang" in action:
                log_request(self.server.log_path, entry)
                time.sleep(action["hang"])
                self.close_connection = True
                return
            if action.get("close"):
                log_request(self.server.log_path, entry)
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            entry["body_size"], entry["body_sha256"] = self.read_body(None)
            log_request(self.server.log_path, entry)
            self.close_connection = True
            self.answer(action["status"], action.get("body", {"error": {"code": "scripted", "message": "scripted answer"}}),
                        action.get("retry_after"))
            return
        key = STATE["key"]
        authorization = self.headers.get("Authorization", "")
        if not authorization.startswith("Bearer ") or (key is not None and authorization != "Bearer " + key):
            self.read_body(None)
            log_request(self.server.log_path, entry)
            self.answer(401, {"error": {"code": "unauthorized", "message": "missing or invalid app key"}})
            return
        if route == "missing":
            body = io.BytesIO()
            entry["body_size"], entry["body_sha256"] = self.read_body(body)
            request = json.loads(body.getvalue())
            entry["json"] = request
            log_request(self.server.log_path, entry)
            ids = [module["build_id"] for module in request["modules"]]
            self.answer(200, {"missing": [i for i in ids if i not in STATE["present"]],
                              "present": [i for i in ids if i in STATE["present"]]})
        elif route == "upload":
            with tempfile.TemporaryFile() as sink:
                entry["body_size"], entry["body_sha256"] = self.read_body(sink)
                sink.seek(0)
                status, answer = self.store(sink, entry)
            log_request(self.server.log_path, entry)
            self.answer(status, answer)
        else:
            self.read_body(None)
            log_request(self.server.log_path, entry)
            self.answer(404, {"error": {"code": "not-found", "message": "no route"}})

    def store(self, sink, entry):
        try:
            archive = zipfile.ZipFile(sink)
            manifest = json.loads(archive.read("manifest.json"))
        except Exception as error:  # not a zip, or no manifest
            return 422, {"error": {"code": "invalid-bundle", "message": str(error)}}
        entry["manifest"] = manifest
        entry["entries"] = archive.namelist()
        for module in manifest["modules"]:
            for kind in ("symbols", "debug"):
                described = module.get(kind)
                if not described:
                    continue
                digest = hashlib.sha256()
                size = 0
                with archive.open(described["path"]) as member:
                    for chunk in iter(lambda: member.read(1 << 20), b""):
                        digest.update(chunk)
                        size += len(chunk)
                if size != described["size"] or digest.hexdigest() != described["sha256"]:
                    return 422, {"error": {"code": "invalid-bundle", "message": described["path"] + ": size or sha256 mismatch"}}
        stored, already = [], []
        with LOCK:
            for module in manifest["modules"]:
                (already if module["build_id"] in STATE["present"] else stored).append(module["build_id"])
                STATE["present"].add(module["build_id"])
        return 201, {"version": manifest["version"], "stored": stored, "already_present": already}

    def do_GET(self):
        entry = {"time": time.time(), "method": "GET", "path": self.path}
        parts = self.path.split("/")
        # /api/v1/apps/{app}/symbols/{build-id}: a table of "tables", after "table_delay" seconds.
        if STATE["tables"] and len(parts) == 7 and parts[1:4] == ["api", "v1", "apps"] and parts[5] == "symbols":
            with LOCK:
                STATE["in_flight"] += 1
                entry["concurrent"] = STATE["in_flight"]
            try:
                time.sleep(STATE["table_delay"])
                path = os.path.join(STATE["tables"], os.path.basename(parts[6]) + ".csym")
                if os.path.isfile(path):
                    with open(path, "rb") as handle:
                        data = handle.read()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/octet-stream")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                else:
                    self.answer(404, {"error": {"code": "not_found", "message": "no such table"}})
            finally:
                with LOCK:
                    STATE["in_flight"] -= 1
            entry["end"] = time.time()
            log_request(self.server.log_path, entry)
            return
        log_request(self.server.log_path, entry)
        self.answer(200 if self.path == "/healthz" else 404, {"status": "ok"})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--script")
    parser.add_argument("--listen-after", type=float, default=0)
    options = parser.parse_args()
    if options.script:
        with open(options.script) as handle:
            script = json.load(handle)
        STATE["missing"] = list(script.get("missing", []))
        STATE["upload"] = list(script.get("upload", []))
        STATE["present"] = set(script.get("present", []))
        STATE["key"] = script.get("key")
        STATE["tables"] = script.get("tables")
        STATE["table_delay"] = float(script.get("table_delay", 0))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler, bind_and_activate=False)
    server.daemon_threads = True
    server.log_path = options.log
    server.server_bind()
    if options.listen_after > 0:
        print("PORT", server.server_address[1], flush=True)
        time.sleep(options.listen_after)
        server.server_activate()
    else:
        server.server_activate()
        print("PORT", server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
