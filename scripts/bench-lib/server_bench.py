#!/usr/bin/env python3
"""crashsym serve under load (standalone): concurrent large uploads and symbols/missing latency.

  server_bench.py [--crashsym BIN] [--elf FILE] [--uploads 8] [--missing-ids 1000] [--runs 200]

1. Converts FILE (default libLLVM-14.so.1 of Debian 12, 105 MB) with `crashsym dump` and zips a
   bundle of its table plus the ELF itself as debug file (stored, so the body is about the ELF's
   size), like `crashsym upload --include-debug` would.
2. Starts `crashsym serve` on a fresh data directory (port 0), uploads the bundle with N concurrent
   curl processes, and reads the server's peak RSS (VmHWM from /proc) afterwards.
3. Sends `symbols/missing` with M build-ids (one present, the rest random) `--runs` times over one
   keep-alive connection and reports the median and p95 latency.

Prints one JSON object. Targets from issue 4: peak RSS <= 150 MB with 8 concurrent 100 MB uploads;
median symbols/missing with 1,000 build-ids <= 20 ms.
"""

import argparse
import hashlib
import http.client
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def make_bundle(crashsym, elf, work, app_id):
    out = subprocess.run([crashsym, "dump", elf, "-o", work, "--format", "json"], check=True,
                         capture_output=True, text=True).stdout.splitlines()[0]
    module = json.loads(out)
    build_id = module["build_id"]
    files = {"symbols": module["output"], "debug": elf}
    manifest = {
        "format": "crashsym-bundle", "format_version": 1, "app_id": app_id, "package": "bench",
        "version": "1.0", "platform": "linux", "tool": "server_bench.py", "created": "2026-11-22T00:00:00Z",
        "modules": [{
            "build_id": build_id, "name": os.path.basename(elf), "arch": module["arch"],
            "has_dwarf": module["dwarf"],
            "symbols": {"path": f"symbols/{build_id}.csym", "size": os.path.getsize(files["symbols"]),
                        "sha256": sha256(files["symbols"])},
            "debug": {"path": f"debug/{build_id}.debug", "size": os.path.getsize(elf), "sha256": sha256(elf)},
        }],
    }
    bundle = os.path.join(work, "bundle.zip")
    with zipfile.ZipFile(bundle, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
        z.writestr("manifest.json", json.dumps(manifest))
        z.write(files["symbols"], f"symbols/{build_id}.csym")
        z.write(elf, f"debug/{build_id}.debug")
    return bundle, build_id


def peak_rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    default = os.path.join(root, ".build/release/crashsym")
    if not os.path.exists(default):
        default = os.path.join(root, ".build/debug/crashsym")
    parser.add_argument("--crashsym", default=default)
    parser.add_argument("--elf", default="/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1")
    parser.add_argument("--uploads", type=int, default=8)
    parser.add_argument("--missing-ids", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="crashsym-server-bench-")
    server = None
    try:
        data = os.path.join(work, "data")
        created = json.loads(subprocess.run([args.crashsym, "apps", "create", "bench", "--id", "bench",
                                             "--data-dir", data, "--format", "json"],
                                            check=True, capture_output=True, text=True).stdout)
        key = created["key"]
        bundle, build_id = make_bundle(args.crashsym, args.elf, work, "bench")
        server = subprocess.Popen([args.crashsym, "serve", "--data-dir", data, "--port", "0", "--log-level", "warning",
                                   "--max-concurrent-uploads", str(args.uploads)],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        port = int(server.stdout.readline().rsplit(":", 1)[1])
        rss_idle = peak_rss(server.pid)
        url = f"http://127.0.0.1:{port}/api/v1/apps/bench/symbols"

        start = time.perf_counter()
        statuses = []

        def upload():
            result = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H",
                                     f"Authorization: Bearer {key}", "-H", "Content-Type: application/zip", "-H", "Expect:",
                                     "--data-binary", "@" + bundle, url], capture_output=True, text=True)
            statuses.append(result.stdout)

        threads = [threading.Thread(target=upload) for _ in range(args.uploads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        upload_seconds = time.perf_counter() - start
        rss_uploads = peak_rss(server.pid)

        ids = [build_id] + [os.urandom(20).hex() for _ in range(args.missing_ids - 1)]
        body = json.dumps({"version": "1.1", "modules": [{"build_id": i} for i in ids]})
        connection = http.client.HTTPConnection("127.0.0.1", port)
        latencies = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            connection.request("POST", "/api/v1/apps/bench/symbols/missing", body=body,
                               headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
            answer = connection.getresponse()
            payload = json.loads(answer.read())
            latencies.append(time.perf_counter() - t0)
            assert answer.status == 200 and payload["present"] == [build_id], payload
        latencies.sort()
        print(json.dumps({
            "crashsym": args.crashsym,
            "bundle_bytes": os.path.getsize(bundle),
            "uploads": args.uploads,
            "upload_statuses": sorted(statuses),
            "upload_seconds": round(upload_seconds, 2),
            "server_peak_rss_idle_mb": round(rss_idle / 2**20, 1),
            "server_peak_rss_mb": round(rss_uploads / 2**20, 1),
            "missing_ids": args.missing_ids,
            "missing_median_ms": round(statistics.median(latencies) * 1000, 2),
            "missing_p95_ms": round(latencies[int(len(latencies) * 0.95) - 1] * 1000, 2),
        }, indent=1))
    finally:
        if server:
            server.terminate()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
