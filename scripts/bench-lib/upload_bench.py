#!/usr/bin/env python3
"""Upload benchmark (standalone): `crashsym upload --bundle` vs `curl -T` over loopback.

    python3 scripts/bench-lib/upload_bench.py [--crashsym PATH] [--size-mib 1024] [--runs 3]

Writes a bundle-sized file of random bytes (the client streams bytes; it does not look inside),
starts a sink HTTP server on 127.0.0.1 that reads and discards request bodies in 1 MiB chunks, then
uploads the same file alternately with crashsym and with curl, in the same run. Reports the median
throughput of each, crashsym's share of curl's, and crashsym's peak RSS (from wait4). The issue's
targets: peak RSS <= 64 MB, throughput >= 80% of curl.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        remaining = int(self.headers.get("Content-Length", "0"))
        view = memoryview(bytearray(1 << 20))
        while remaining > 0:
            count = self.rfile.readinto(view[: min(remaining, len(view))])
            if not count:
                break
            remaining -= count
        body = json.dumps({"version": "bench", "stored": ["bench"], "already_present": []}).encode()
        self.send_response(201)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_PUT = do_POST


def run_measured(command):
    """Runs `command`, returns (seconds, peak RSS in bytes, exit status)."""
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.monotonic() - started
    process.stderr.close()
    return elapsed, usage.ru_maxrss * 1024, os.waitstatus_to_exitcode(status)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default = os.path.join(ROOT, ".build/release/crashsym")
    if not os.path.exists(default):
        default = os.path.join(ROOT, ".build/debug/crashsym")
    parser.add_argument("--crashsym", default=default)
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    options = parser.parse_args()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = "http://127.0.0.1:%d" % server.server_address[1]

    with tempfile.TemporaryDirectory(prefix="crashsym-upload-bench-") as directory:
        bundle = os.path.join(directory, "bundle.zip")
        with open(bundle, "wb") as handle:
            chunk = os.urandom(1 << 20)
            for _ in range(options.size_mib):
                handle.write(chunk)
        size = options.size_mib << 20
        crashsym = [options.crashsym, "upload", "--bundle", bundle, "--app-id", "bench", "--app-key", "bench-key",
                    "--server", base]
        curl = ["curl", "-sS", "-o", "/dev/null", "-T", bundle, "-H", "Authorization: Bearer bench-key",
                "-H", "Content-Type: application/zip", base + "/api/v1/apps/bench/symbols"]
        results = {"crashsym": [], "curl": []}
        peak = 0
        for _ in range(options.runs):
            for name, command in (("crashsym", crashsym), ("curl", curl)):
                seconds, rss, status = run_measured(command)
                if status != 0:
                    sys.exit("%s failed with status %d" % (name, status))
                results[name].append(seconds)
                if name == "crashsym":
                    peak = max(peak, rss)
    server.shutdown()

    crashsym_rate = size / statistics.median(results["crashsym"]) / 1e6
    curl_rate = size / statistics.median(results["curl"]) / 1e6
    report = {"size_mib": options.size_mib, "runs": options.runs,
              "crashsym_mb_per_s": round(crashsym_rate, 1), "curl_mb_per_s": round(curl_rate, 1),
              "crashsym_share_of_curl": round(crashsym_rate / curl_rate, 3),
              "crashsym_peak_rss_mb": round(peak / 1e6, 1), "crashsym": options.crashsym}
    if options.json:
        print(json.dumps(report))
    else:
        print("upload of %d MiB over loopback, median of %d runs" % (options.size_mib, options.runs))
        print("  crashsym upload --bundle  %8.1f MB/s   peak RSS %.1f MB" % (crashsym_rate, peak / 1e6))
        print("  curl -T                   %8.1f MB/s" % curl_rate)
        print("  crashsym / curl           %8.1f %%" % (100 * crashsym_rate / curl_rate))


if __name__ == "__main__":
    main()
