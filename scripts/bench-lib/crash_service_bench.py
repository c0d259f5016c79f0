#!/usr/bin/env python3
"""The crash service under load (standalone): symbolication over HTTP against the in-process
ceiling, the lookup endpoint, crash ingestion and processing, all with wrk on 127.0.0.1.

  crash_service_bench.py [--crashsym BIN] [--duration 10] [--connections 64] [--reports 2000]
                         [--ingest-duration 10] [--backlog 2000] [--postgres] [--json]

With --postgres the server keeps its metadata in a throw-away PostgreSQL 15 (`--database`).

1. Five real modules (python3.11d, libc's debug file, fixtures: as symbolicate_bench.py picks them)
   are uploaded with `crashsym upload` to a fresh `crashsym serve`; a 50-frame ASan report over
   them is the request body.
2. The in-process ceiling: `--reports` copies of the report symbolicated by one
   `crashsym symbolicate DIR --format json` with the same tables (median of 3 runs), as reports/s.
3. `POST …/symbolicate` of the report with wrk (`--connections`, keep-alive, 2 threads): requests/s
   and p99 latency, and the ratio to the ceiling. The answer is first checked to be the CLI's.
4. `GET …/symbolicate?build_id=…&address=…` (50 addresses of one module): requests/s.
5. `POST …/crashes` with wrk for `--ingest-duration` s: crashes accepted per second (201), then how
   long processing takes to catch up (crashsym_crashes_processed_total on /metrics).
6. Late symbols: `--backlog` crashes of a module the server lacks, then its table is uploaded:
   seconds until every one was symbolicated again.
Targets (issue 14): symbolicate >= 5,000 req/s, >= 50% of the ceiling, p99 <= 20 ms; ingestion
>= 2,000 crashes/s with processing within 2x that time; 100,000 re-symbolicated in <= 60 s.
"""

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import contextlib  # noqa: E402
from serverkit import Workspace, default_crashsym, postgres_cluster  # noqa: E402
import symbolicate_bench  # noqa: E402


def wrk(url, script, duration, connections):
    """Runs wrk; returns (requests/s, p99 ms, total requests, non-2xx responses)."""
    out = subprocess.run(["wrk", "-t", "2", "-c", str(connections), "-d", f"{duration}s", "--latency", "-s", script, url],
                         check=True, capture_output=True, text=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[p99.group(2)]
    total = int(re.search(r"(\d+) requests in", out).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return rate, float(p99.group(1)) * scale, total, int(bad.group(1)) if bad else 0


def lua(path, method, key, body_path=None):
    with open(path, "w") as f:
        f.write(f'wrk.method = "{method}"\n')
        f.write(f'wrk.headers["Authorization"] = "Bearer {key}"\n')
        if body_path:
            f.write('wrk.headers["Content-Type"] = "text/plain"\n')
            f.write(f'local f = io.open("{body_path}", "rb"); wrk.body = f:read("*a"); f:close()\n')
    return path


def metric(base, name):
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as answer:
        for line in answer.read().decode().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


def post(base, path, key, body):
    request = urllib.request.Request(base + path, data=body, method="POST",
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "text/plain"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return answer.status, answer.read()


def wait_for(predicate, timeout):
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if predicate():
            return time.perf_counter() - start
        time.sleep(0.05)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crashsym", default=default_crashsym())
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--reports", type=int, default=2000)
    parser.add_argument("--ingest-duration", type=int, default=10)
    parser.add_argument("--backlog", type=int, default=2000)
    parser.add_argument("--postgres", action="store_true", help="metadata in a throw-away PostgreSQL (--database)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = random.Random(1)
    modules = symbolicate_bench.sample_modules(rng)
    result = {"crashsym": args.crashsym, "connections": args.connections, "metadata": "postgres" if args.postgres else "sqlite"}

    with (postgres_cluster() if args.postgres else contextlib.nullcontext()) as database, \
            Workspace(args.crashsym, "crashsym-crash-bench-", database=database) as ws:
        work = ws.work
        tables = os.path.join(work, "tables")
        inputs = []
        for module in modules:
            inputs.append(module["path"])
            debug = f"/usr/lib/debug/.build-id/{module['build_id'][:2]}/{module['build_id'][2:]}.debug"
            if os.path.exists(debug):
                inputs.append(debug)
        base = ws.serve("--max-crashes-per-minute", "0", "--log-level", "error")
        env = dict(os.environ, CRASHSYM_APP_KEY=ws.key, XDG_CACHE_HOME=os.path.join(work, "cache"),
                   XDG_CONFIG_HOME=os.path.join(work, "config"))
        subprocess.run([args.crashsym, "upload", *inputs, "--app-id", ws.app_id, "--server", base, "--version", "1.0"],
                       check=True, capture_output=True, env=env)
        subprocess.run([args.crashsym, "dump", *inputs, "-o", tables], check=True, capture_output=True)
        frames = symbolicate_bench.frames(rng, modules, 50)
        report = symbolicate_bench.asan_report(frames, 4242)
        report_path = os.path.join(work, "report.txt")
        with open(report_path, "w") as f:
            f.write(report)

        # The endpoint answers what the CLI prints.
        status, body = post(base, f"/api/v1/apps/{ws.app_id}/symbolicate", ws.key, report.encode())
        cli = subprocess.run([args.crashsym, "symbolicate", report_path, "--format", "json", "--symbols", tables,
                              "--no-module-paths", "--no-cache"], check=True, capture_output=True, env=env).stdout
        server_frames = json.loads(body)["stacks"]
        cli_frames = json.loads(cli.splitlines()[0])["stacks"]
        if status != 200 or [[x.get("symbolized") for x in s["frames"]] for s in server_frames] != \
                [[x.get("symbolized") for x in s["frames"]] for s in cli_frames]:
            sys.exit("crash_service_bench: the endpoint's frames differ from the CLI's")

        # In-process ceiling.
        directory = os.path.join(work, "reports")
        os.makedirs(directory)
        for i in range(args.reports):
            with open(os.path.join(directory, f"r{i:06d}.txt"), "w") as f:
                f.write(report)
        times = []
        for _ in range(3):
            start = time.perf_counter()
            subprocess.run([args.crashsym, "symbolicate", directory, "--format", "json", "--symbols", tables,
                            "--no-module-paths", "--no-cache"], check=True, stdout=subprocess.DEVNULL, env=env)
            times.append(time.perf_counter() - start)
        ceiling = args.reports / statistics.median(times)
        result["in_process_reports_per_s"] = round(ceiling)

        script = lua(os.path.join(work, "symbolicate.lua"), "POST", ws.key, report_path)
        rate, p99, total, bad = wrk(f"{base}/api/v1/apps/{ws.app_id}/symbolicate", script, args.duration, args.connections)
        result.update(symbolicate_rps=round(rate), symbolicate_p99_ms=round(p99, 2), symbolicate_errors=bad,
                      symbolicate_vs_ceiling=round(rate / ceiling, 2))

        module = modules[0]
        addresses = "&".join(f"address=0x{offset:x}" for m, offset in frames if m is module)[:4000] or "address=0x1000"
        script = lua(os.path.join(work, "lookup.lua"), "GET", ws.key)
        rate, p99, total, bad = wrk(f"{base}/api/v1/apps/{ws.app_id}/symbolicate?build_id={module['build_id']}&{addresses}",
                                    script, args.duration, args.connections)
        result.update(lookup_rps=round(rate), lookup_p99_ms=round(p99, 2), lookup_errors=bad)

        # Ingestion, then processing catching up.
        processed_before = metric(base, "crashsym_crashes_processed_total")
        accepted_before = metric(base, "crashsym_crashes_accepted_total")
        script = lua(os.path.join(work, "ingest.lua"), "POST", ws.key, report_path)
        start = time.perf_counter()
        rate, p99, total, bad = wrk(f"{base}/api/v1/apps/{ws.app_id}/crashes", script, args.ingest_duration, args.connections)
        ingest_seconds = time.perf_counter() - start
        # The server's own count: wrk's total also counts requests cut off at the end of the run.
        accepted = metric(base, "crashsym_crashes_accepted_total") - accepted_before
        caught_up = wait_for(lambda: metric(base, "crashsym_crashes_processed_total") - processed_before >= accepted, 600)
        # None: processing did not catch up within the wait (0.0 is "already caught up").
        behind = float("nan") if caught_up is None else caught_up
        result.update(ingest_per_s=round(accepted / ingest_seconds), ingest_p99_ms=round(p99, 2), ingest_refused=bad,
                      processing_seconds=round(ingest_seconds + behind, 1),
                      processing_vs_ingest=round((ingest_seconds + behind) / ingest_seconds, 2))

        # Late symbols: a backlog of crashes of a module the server lacks, then its table.
        late = os.path.join(work, "late")
        os.makedirs(late)
        # A fixture the server lacks: not one of the sampled (and uploaded) modules.
        fixtures = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "Fixtures/elf")
        uploaded = {m["build_id"] for m in modules}
        fixture, late_id = next((path, bid) for path, bid in
                                ((os.path.join(fixtures, name), symbolicate_bench.build_id(os.path.join(fixtures, name)))
                                 for name in ("gcc-cpp-O2-dwarf5", "clang-c-O2-dwarf4", "gcc-c-O0-dwarf4"))
                                if bid and bid not in uploaded)
        late_report = symbolicate_bench.asan_report(frames[:49], 4343).replace(
            "\n\nSUMMARY", f"\n    #49 0x7f0000001200  (/nonexistent/late+0x1200) (BuildId: {late_id})\n\nSUMMARY")
        late_path = os.path.join(late, "report.txt")
        with open(late_path, "w") as f:
            f.write(late_report)
        requeued_before = metric(base, "crashsym_crashes_requeued_total")
        processed_before = metric(base, "crashsym_crashes_processed_total")
        accepted_before = metric(base, "crashsym_crashes_accepted_total")
        script = lua(os.path.join(work, "late.lua"), "POST", ws.key, late_path)
        sent = 0
        while sent < args.backlog:
            wrk(f"{base}/api/v1/apps/{ws.app_id}/crashes", script, 2, args.connections)
            sent = metric(base, "crashsym_crashes_accepted_total") - accepted_before
        wait_for(lambda: metric(base, "crashsym_crashes_processed_total") - processed_before >= sent, 600)
        start = time.perf_counter()
        subprocess.run([args.crashsym, "upload", fixture, "--app-id", ws.app_id, "--server", base, "--version", "1.0"],
                       check=True, capture_output=True, env=env)
        done = wait_for(lambda: metric(base, "crashsym_crashes_processed_total") - processed_before >= 2 * sent, 900)
        result.update(backlog=int(sent), backlog_resymbolicated_seconds=round(time.perf_counter() - start, 1) if done is not None else None,
                      backlog_requeued=int(metric(base, "crashsym_crashes_requeued_total") - requeued_before))
        with open(f"/proc/{ws.server.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    result["server_peak_rss_mb"] = round(int(line.split()[1]) / 1024, 1)

    if args.json:
        print(json.dumps(result, indent=1))
        return
    r = result
    print(f"crash service ({r['metadata']} metadata), wrk with {r['connections']} connections on 127.0.0.1, "
          f"one 50-frame ASan report over 5 modules")
    print(f"  in-process ceiling (crashsym symbolicate DIR)   {r['in_process_reports_per_s']} reports/s")
    print(f"  POST symbolicate                                {r['symbolicate_rps']} req/s, p99 {r['symbolicate_p99_ms']} ms, "
          f"{r['symbolicate_vs_ceiling']}x the ceiling, {r['symbolicate_errors']} errors "
          f"(targets: >= 5000 req/s, >= 0.5x, p99 <= 20 ms)")
    print(f"  GET symbolicate (lookup)                        {r['lookup_rps']} req/s, p99 {r['lookup_p99_ms']} ms")
    print(f"  POST crashes                                    {r['ingest_per_s']} accepted/s, p99 {r['ingest_p99_ms']} ms, "
          f"{r['ingest_refused']} refused (target >= 2000/s)")
    print(f"  processing caught up after                      {r['processing_seconds']} s "
          f"({r['processing_vs_ingest']}x the ingestion time; target <= 2x)")
    print(f"  late symbols: {r['backlog']} crashes re-symbolicated in {r['backlog_resymbolicated_seconds']} s "
          f"({r['backlog_requeued']} requeued; target 100,000 in <= 60 s)")
    print(f"  server peak RSS                                 {r.get('server_peak_rss_mb')} MiB")


if __name__ == "__main__":
    sys.exit(main())
