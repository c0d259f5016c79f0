#!/usr/bin/env python3
"""The web console's pages under a large app (standalone): how long the groups page and the crash
page take to render.

  console_bench.py [--crashsym BIN] [--crashes 100000] [--groups 2000] [--requests 50] [--json]

1. A fresh `crashsym serve` gets one real crash (the ASan fixture, processed and grouped), so the
   stored report is the engine's JSON for a real report.
2. With the server stopped, `--crashes` crash rows over `--groups` groups are written straight into
   its SQLite database (the crash service's own tables, copying the real crash's report and raw
   object): 30 days of arrivals, 6 versions, 50 hosts, group sizes skewed like real apps.
3. The server restarts; an admin made with `crashsym users create` signs in through the form.
4. Each page is fetched `--requests` times one after another on one keep-alive connection (after
   5 warm-up requests): the groups page (first page, most crashes first, with its 30-day chart),
   its second page (cursor), a filtered page (version + text), a group page and the crash page.
   Reported: the first request's milliseconds (the app's chart not cached yet), then median and
   p90 milliseconds on 127.0.0.1 (server time plus the loopback round trip).
Targets (issue 17): groups page <= 50 ms median with 100,000 crashes in 2,000 groups, crash page
<= 20 ms.
"""

import argparse
import http.client
import json
import os
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverkit import ROOT, Workspace, default_crashsym, start_server, stop_server  # noqa: E402


class Browser:
    """One keep-alive connection with the console's cookies."""

    def __init__(self, base):
        parsed = urllib.parse.urlparse(base)
        self.connection = http.client.HTTPConnection(parsed.hostname, parsed.port)
        self.cookies = {}

    def request(self, method, path, form=None):
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        body = None
        if form is not None:
            body = urllib.parse.urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        self.connection.request(method, path, body=body, headers=headers)
        response = self.connection.getresponse()
        text = response.read().decode()
        for name, value in response.getheaders():
            if name.lower() == "set-cookie":
                key, _, rest = value.partition("=")
                self.cookies[key] = rest.split(";")[0]
        return response.status, text


def seed(database, crashes, groups, seed_value):
    """Writes the synthetic crashes and groups, copying the one real crash's report and bytes."""
    random.seed(seed_value)
    db = sqlite3.connect(database)
    real = db.execute("SELECT app_id, raw_sha256, raw_size, report, format, signal FROM crash LIMIT 1").fetchone()
    app_id, raw, raw_size, report, format_, signal = real
    now = int(time.time() * 1000)
    day = 86_400_000
    versions = ["1.0.0", "1.1.0", "1.2.0", "1.2.1", "2.0.0", "2.0.1"]
    # Zipf-like sizes: a few groups hold most crashes, as in real apps.
    weights = [1.0 / (rank + 1) ** 0.9 for rank in range(groups)]
    total = sum(weights)
    sizes = [max(1, int(crashes * w / total)) for w in weights]
    sizes[0] += crashes - sum(sizes)
    crash_rows, group_rows, version_rows, host_rows = [], [], [], []
    seq_id = 0
    for index, size in enumerate(sizes):
        group_id = f"{index:016x}"
        signature = f"frame_{index} | caller_{index % 97} | main"
        first, last = now, 0
        per_version, hosts = {}, set()
        for _ in range(size):
            received = now - random.randint(0, 30 * day)
            version = random.choice(versions)
            host = f"web-{random.randint(0, 49)}"
            seq_id += 1
            crash_rows.append((f"{seq_id:032x}", app_id, received, version, 1, host, "prod", raw, raw_size, "done", format_,
                               signal, signature, f"{signal} in frame_{index}", group_id, report, received + 5, "[]"))
            first, last = min(first, received), max(last, received)
            per_version[version] = per_version.get(version, 0) + 1
            hosts.add(host)
        state = "open" if index % 10 else random.choice(["resolved", "ignored"])
        group_rows.append((group_id, app_id, signature, f"{signal} in frame_{index}", size, first, last, state,
                           f"{1:032x}"))
        version_rows += [(group_id, v, n) for v, n in per_version.items()]
        host_rows += [(group_id, h) for h in hosts]
    crash_rows.sort(key=lambda row: row[2])
    db.executemany("""INSERT INTO crash (id, app_id, received_ms, version, version_given, host, environment, raw_sha256,
                      raw_size, state, format, signal, signature, title, group_id, report, symbolicated_ms, missing_build_ids)
                      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""", crash_rows)
    db.executemany("""INSERT INTO crash_group (id, app_id, signature, title, count, first_seen_ms, last_seen_ms, state,
                      sample_crash_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""", group_rows)
    db.executemany("INSERT INTO crash_group_version (group_id, version, count) VALUES (?, ?, ?)", version_rows)
    db.executemany("INSERT INTO crash_group_host (group_id, host) VALUES (?, ?)", host_rows)
    db.commit()
    db.execute("ANALYZE")
    db.close()


def measure(browser, path, requests):
    first = None
    for _ in range(5):
        start = time.perf_counter()
        status, _ = browser.request("GET", path)
        first = first or (time.perf_counter() - start) * 1000
        assert status == 200, f"{path}: HTTP {status}"
    times = []
    for _ in range(requests):
        start = time.perf_counter()
        status, text = browser.request("GET", path)
        times.append((time.perf_counter() - start) * 1000)
        assert status == 200
    times.sort()
    return {"first_ms": round(first, 2), "median_ms": round(statistics.median(times), 2), "p90_ms": round(times[int(len(times) * 0.9) - 1], 2),
            "bytes": len(text)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--crashsym", default=default_crashsym())
    parser.add_argument("--crashes", type=int, default=100_000)
    parser.add_argument("--groups", type=int, default=2_000)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with Workspace(args.crashsym, "crashsym-console-bench-") as space:
        base = space.serve()
        fixture = os.path.join(ROOT, "Fixtures/reports/asan-use-after-free.txt")
        out = subprocess.run(["curl", "-sS", "-H", f"Authorization: Bearer {space.key}", "-H", "Content-Type: text/plain",
                              "--data-binary", "@" + fixture, f"{base}/api/v1/apps/{space.app_id}/crashes?wait=30&version=1.0.0"],
                             check=True, capture_output=True, text=True).stdout
        real = json.loads(out)
        stop_server(space.server)
        print(f"console_bench: seeding {args.crashes} crashes in {args.groups} groups", file=sys.stderr)
        seed(os.path.join(space.data, "metadata.sqlite"), args.crashes - 1, args.groups, args.seed)
        password = json.loads(subprocess.run([args.crashsym, "users", "create", "bench", "--admin", "--data-dir", space.data,
                                              "--format", "json"], check=True, capture_output=True, text=True).stdout)["password"]
        space.server, base = start_server(args.crashsym, space.data)
        browser = Browser(base)
        _, page = browser.request("GET", "/signin")
        token = re.search(r'name="csrf" value="([0-9a-f]+)"', page).group(1)
        status, _ = browser.request("POST", "/signin", {"csrf": token, "name": "bench", "password": password, "next": "/apps"})
        assert status == 303, f"sign-in: HTTP {status}"
        app = f"/apps/{space.app_id}"
        start = time.perf_counter()
        _, first = browser.request("GET", app + "?state=all")
        uncached = round((time.perf_counter() - start) * 1000, 2)
        after = re.search(r'rel="next" href="([^"]+)"', first).group(1).replace("&amp;", "&")
        results = {
            "groups page (most crashes, all states)": measure(browser, app + "?state=all", args.requests),
            "groups page 2 (cursor)": measure(browser, after, args.requests),
            "groups page (version + text filter)": measure(browser, app + "?state=all&version=2.0.1&q=caller_5", args.requests),
            "apps page": measure(browser, "/apps", args.requests),
            "group page (largest group)": measure(browser, f"{app}/groups/{0:016x}", args.requests),
            "crash page": measure(browser, f"{app}/crashes/{real['id']}", args.requests),
        }
    results["groups page, first request (chart counted)"] = {"first_ms": uncached, "median_ms": uncached, "p90_ms": uncached,
                                                             "bytes": len(first)}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"Console pages with {args.crashes:,} crashes in {args.groups:,} groups (median of {args.requests} requests, 127.0.0.1):\n")
    print("| Page | First ms | Median ms | p90 ms | HTML bytes |")
    print("|------|---------:|----------:|-------:|-----------:|")
    for name, result in results.items():
        print(f"| {name} | {result['first_ms']} | {result['median_ms']} | {result['p90_ms']} | {result['bytes']:,} |")
    print("\nFirst: the first of the timed page's requests. The app's chart (30 days of crashes per version) is")
    print("counted once a minute: the last line is the very first groups request, which counted it.")


if __name__ == "__main__":
    main()
