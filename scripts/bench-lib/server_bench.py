#!/usr/bin/env python3
"""crashsym serve under load (standalone): concurrent large uploads and symbols/missing latency.

  server_bench.py [--crashsym BIN] [--elf FILE] [--uploads 8] [--missing-ids 1000] [--runs 200] [--json]

1. Converts FILE (default libLLVM-14.so.1 of Debian 12, 105 MB) with `crashsym dump` and zips a
   bundle of its table plus the ELF itself as debug file (stored, so the body is about the ELF's
   size), like `crashsym upload --include-debug` would.
2. Starts `crashsym serve` on a fresh data directory (port 0), uploads the bundle with N concurrent
   curl processes, and reads the server's peak RSS (VmHWM from /proc) afterwards.
3. Sends `symbols/missing` with M build-ids (one present, the rest random) `--runs` times over one
   keep-alive connection and reports the median and p95 latency.

Prints a short text summary (one JSON object with --json). Targets from issue 4: peak RSS <= 150 MB with 8 concurrent 100 MB uploads;
median symbols/missing with 1,000 build-ids <= 20 ms.
"""

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time

from serverkit import Workspace, default_crashsym, make_bundle


def peak_rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crashsym", default=default_crashsym())
    parser.add_argument("--elf", default="/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1")
    parser.add_argument("--uploads", type=int, default=8)
    parser.add_argument("--missing-ids", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    args = parser.parse_args()

    with Workspace(args.crashsym, "crashsym-server-bench-") as workspace:
        key = workspace.key
        bundle, build_id = make_bundle(args.crashsym, args.elf, workspace.work, "bench", "server_bench.py")
        base = workspace.serve("--max-concurrent-uploads", str(args.uploads))
        server = workspace.server
        port = int(base.rsplit(":", 1)[1])
        rss_idle = peak_rss(server.pid)
        url = f"{base}/api/v1/apps/bench/symbols"

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
        report = {
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
        }
        if args.json:
            print(json.dumps(report, indent=1))
        else:
            r = report
            print(f"crashsym serve, {r['uploads']} concurrent uploads of a {r['bundle_bytes'] / 1e6:.1f} MB bundle "
                  f"(curl), then symbols/missing {args.runs} times")
            print(f"  upload answers            {', '.join(sorted(set(r['upload_statuses'])))} "
                  f"(all {r['uploads']} in {r['upload_seconds']} s)")
            print(f"  server peak RSS           {r['server_peak_rss_mb']} MiB (idle {r['server_peak_rss_idle_mb']} MiB; "
                  f"target <= 150 MB)")
            print(f"  symbols/missing, {r['missing_ids']} ids   median {r['missing_median_ms']} ms, "
                  f"p95 {r['missing_p95_ms']} ms (target: median <= 20 ms)")


if __name__ == "__main__":
    sys.exit(main())
