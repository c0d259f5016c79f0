#!/usr/bin/env python3
"""Notifications under load (standalone): a burst of new crash groups with and without a webhook.

  webhook_bench.py [--crashsym BIN] [--groups 1000] [--receiver-ms 0] [--json]

1. A fresh `crashsym serve`; `--groups` reports, each a different bug (so each makes a new group),
   are posted by 8 threads: crashes accepted per second, and seconds until all are processed
   (crashsym_crashes_processed_total on /metrics).
2. The same with a webhook for `group.new` to a receiver on 127.0.0.1
   (Tests/SymServerTests/Support/webhook_receiver.py, answering after `--receiver-ms`): the same
   two numbers (the outbox must not slow ingestion or processing down), seconds until the last
   notification arrived, and the notification latency (from the commit of the group change, the
   payload's `created`, to the receiver) at p50 and p99. Deliveries to one webhook are sequential.
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverkit import ROOT, Workspace, default_crashsym  # noqa: E402

RECEIVER = os.path.join(ROOT, "Tests/SymServerTests/Support/webhook_receiver.py")


def processed(base):
    text = urllib.request.urlopen(base + "/metrics").read().decode()
    for line in text.splitlines():
        if line.startswith("crashsym_crashes_processed_total "):
            return float(line.split()[-1])
    return 0


def post_all(base, app, key, groups, tag):
    reports = [f"/app/prog(bug_{tag}_{i}+0x10)[0x5555555551a0]\n/app/prog(main+0x20)[0x555555555200]\n".encode()
               for i in range(groups)]
    failures = []

    def worker(part):
        for body in part:
            request = urllib.request.Request(f"{base}/api/v1/apps/{app}/crashes?version=1.0", data=body, method="POST",
                                             headers={"Authorization": f"Bearer {key}", "Content-Type": "text/plain"})
            try:
                urllib.request.urlopen(request).read()
            except Exception as error:  # noqa: BLE001
                failures.append(error)

    threads = [threading.Thread(target=worker, args=(reports[i::8],)) for i in range(8)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        sys.exit(f"webhook_bench: {len(failures)} crashes refused: {failures[0]}")
    return start, time.monotonic()


def run(crashsym, groups, receiver_ms, hook):
    with Workspace(crashsym, "crashsym-webhook-bench-") as ws:
        receiver = None
        log = os.path.join(ws.work, "receiver.jsonl")
        try:
            if hook:
                receiver = subprocess.Popen([sys.executable, RECEIVER, "--log", log], stdout=subprocess.PIPE, text=True)
                port = int(receiver.stdout.readline().split()[1])
                path = f"/slow/{receiver_ms}" if receiver_ms else "/ok"
                subprocess.run([crashsym, "apps", "webhooks", "add", ws.app_id, f"http://127.0.0.1:{port}{path}",
                                "--events", "new-group", "--data-dir", ws.data], check=True, capture_output=True)
            base = ws.serve("--max-crashes-per-minute", "0", "--spike-min", "1000000")
            start, posted = post_all(base, ws.app_id, ws.key, groups, "h" if hook else "n")
            while processed(base) < groups:
                time.sleep(0.02)
            done = time.monotonic()
            result = {"accepted_per_s": groups / (posted - start), "processed_s": done - start}
            if hook:
                lines = []
                while len(lines) < groups:
                    time.sleep(0.02)
                    with open(log) as f:
                        lines = f.read().splitlines()
                    if time.monotonic() - done > 300:
                        sys.exit(f"webhook_bench: only {len(lines)} of {groups} notifications in 300 s")
                result["delivered_s"] = time.monotonic() - start
                latencies = []
                for line in lines:
                    record = json.loads(line)
                    created = json.loads(record["body"])["created"]
                    moment = datetime.datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()
                    latencies.append((record["time"] - moment) * 1000)
                latencies.sort()
                result["latency_p50_ms"] = statistics.median(latencies)
                result["latency_p99_ms"] = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
                result["notifications"] = len(lines)
            return result
        finally:
            if receiver:
                receiver.kill()
                receiver.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--crashsym", default=default_crashsym())
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--receiver-ms", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    without = run(args.crashsym, args.groups, args.receiver_ms, hook=False)
    with_hook = run(args.crashsym, args.groups, args.receiver_ms, hook=True)
    if args.json:
        print(json.dumps({"without": without, "with": with_hook}))
        return
    print(f"{args.groups} new groups, posted by 8 threads; receiver answers after {args.receiver_ms} ms")
    print(f"  no webhook:  {without['accepted_per_s']:8.0f} crashes/s accepted, all processed after {without['processed_s']:.2f} s")
    print(f"  one webhook: {with_hook['accepted_per_s']:8.0f} crashes/s accepted, all processed after {with_hook['processed_s']:.2f} s"
          f" (x{with_hook['processed_s'] / without['processed_s']:.2f}),")
    print(f"               {with_hook['notifications']} notifications, the last after {with_hook['delivered_s']:.2f} s;"
          f" latency p50 {with_hook['latency_p50_ms']:.0f} ms, p99 {with_hook['latency_p99_ms']:.0f} ms")


if __name__ == "__main__":
    main()
