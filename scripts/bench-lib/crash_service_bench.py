#!/usr/bin/env python3
"""The crash service under load (standalone): symbolication over HTTP against the in-process
ceiling, the lookup endpoint, crash ingestion and processing, all with wrk on 127.0.0.1.

  crash_service_bench.py [--crashsym BIN] [--duration 10] [--connections 64] [--reports 2000]
                         [--ingest-duration 10] [--backlog 2000] [--rss-tables-mb 0] [--rss-only]
                         [--postgres] [--shared [--shared-backlog N]] [--healthz] [--crashes-only]
                         [--profile DIR] [--json]

With --postgres the server keeps its metadata in a throw-away PostgreSQL 15 (`--database`). With
--shared every measurement but the ceiling and RSS runs a second time against the shared backends
(a throw-away PostgreSQL 15 and SeaweedFS's S3 gateway, `--object-store s3://…`; tables reach the
node's table cache on the first request, so symbolication runs with warm node caches) and the
ratios shared / embedded are printed (issue 18: >= 0.5 for symbolicate, >= 0.3 for ingestion).
With --healthz, `GET /healthz` under the same wrk load: the HTTP floor of the server.

1. Five real modules (python3.11d, libc's debug file, fixtures: as symbolicate_bench.py picks them)
   are uploaded with `crashsym upload` to a fresh `crashsym serve`; a 50-frame ASan report over
   them is the request body.
2. The in-process ceiling: `--reports` copies of the report symbolicated by one
   `crashsym symbolicate DIR --format json` with the same tables (median of 3 runs), as reports/s.
3. `POST …/symbolicate` of the report with wrk (`--connections`, keep-alive, 2 threads): requests/s
   and p99 latency, and the ratio to the ceiling. The answer is first checked to be the CLI's.
   Also the server's CPU per request (/proc/PID/stat, here and in 4) against the CLI's CPU per
   report (getrusage of the ceiling's runs): a ratio that other load on the machine moves far
   less than the rates (wrk's own CPU is in neither).
4. `GET …/symbolicate?build_id=…&address=…` (50 addresses of one module): requests/s.
5. `POST …/crashes` with wrk for `--ingest-duration` s: crashes accepted per second (201), then how
   long processing takes to catch up (crashsym_crashes_processed_total on /metrics). Each crash
   is new bytes (the report's pid varies per request), so the object store writes and syncs each
   one; --same-bytes posts the one report every time (the object store then writes nothing).
6. Late symbols: `--backlog` crashes of a module the server lacks, then its table is uploaded:
   seconds until every one was symbolicated again.
   For 5 and 6 also the server's CPU time (user + system, /proc/PID/stat) per crash: far less
   sensitive to other load on the machine than the rates. --crashes-only measures only 5 and 6;
   --profile DIR records each of them with `perf record -g` (DIR/processing.perf.data,
   DIR/resymbolication.perf.data).
7. With --rss-tables-mb N: the server's peak RSS with N MiB of stored tables and the default table
   cache (512 MiB) under load. python3.11d's table is stored under as many distinct build-ids as
   make N MiB (its build-id bytes rewritten in each copy, uploaded in bundles), the server is
   restarted, and reports that each touch 8 of those tables (every table several times over) are
   POSTed to symbolicate from 8 threads; then VmHWM of the server. --rss-only runs only this part.
Targets (issue 14): symbolicate >= 5,000 req/s, >= 50% of the ceiling, p99 <= 20 ms; ingestion
>= 2,000 crashes/s with processing within 2x that time; 100,000 re-symbolicated in <= 60 s; peak
RSS <= the table cache + 150 MiB with 2 GiB of tables.
"""

import argparse
import json
import os
import random
import re
import resource
import hashlib
import statistics
import struct
import subprocess
import sys
import threading
import time
import urllib.request
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import contextlib  # noqa: E402
from serverkit import POSTGRES, Workspace, default_crashsym, postgres_cluster, seaweedfs, stop_server  # noqa: E402
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


def distinct_lua(path, key, body_path, pid):
    """`lua` for POST with a distinct body per request: the report's pid (`==PID==`, kept by the
    parser, no part of the grouping signature) made unique per wrk thread and request, so that
    every crash is new bytes the object store must write and sync."""
    lua(path, "POST", key, body_path)
    with open(path, "a") as f:
        f.write('local template = wrk.body\n')
        f.write('local counter = 0\n')
        f.write('local threads = 0\n')
        f.write('function setup(thread) thread:set("tid", threads); threads = threads + 1 end\n')
        f.write('function request()\n')
        f.write('  counter = counter + 1\n')
        f.write(f'  local body = template:gsub("=={pid}==", "==" .. ((tid or 0) * 100000000 + counter) .. "==")\n')
        f.write('  return wrk.format(nil, nil, nil, body)\n')
        f.write('end\n')
    return path


def wal_position(database):
    """PostgreSQL's current write-ahead log position (bytes), or None without a database."""
    if not database:
        return None
    lsn = subprocess.run([POSTGRES + "/psql", database, "-Atc", "SELECT pg_current_wal_lsn()"],
                         check=True, capture_output=True, text=True).stdout.strip()
    high, low = lsn.split("/")
    return (int(high, 16) << 32) + int(low, 16)


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


def children_cpu_seconds():
    """User + system CPU seconds of the children waited for so far (getrusage, microseconds)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_seconds(pid):
    """User + system CPU seconds the process has used so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def profiled(pid, directory, name):
    """`perf record -g` of process `pid` while the block runs, into DIRECTORY/NAME.perf.data
    (nothing without a directory)."""
    if not directory:
        yield
        return
    os.makedirs(directory, exist_ok=True)
    perf = subprocess.Popen(["perf", "record", "-g", "-F", "499", "-p", str(pid), "-o", os.path.join(directory, name + ".perf.data")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        perf.send_signal(2)
        perf.wait(timeout=120)


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


def rss_under_load(ws, module, tables, target_mb, rng):
    """Section 7: stores `target_mb` MiB of distinct copies of `module`'s table, restarts the server
    and symbolicates reports touching all of them; returns the measurements."""
    source = os.path.join(tables, module["build_id"] + ".csym")
    with open(source, "rb") as f:
        table = f.read()
    original = bytes.fromhex(module["build_id"])
    at = table.find(original)
    if at < 0:
        sys.exit("crash_service_bench: the table does not hold its build-id bytes")
    count = max(1, -(-target_mb * (1 << 20) // len(table)))
    ids = []
    bundle = os.path.join(ws.work, "rss-bundle.zip")
    per_bundle = 16
    for first in range(0, count, per_bundle):
        entries = []
        with zipfile.ZipFile(bundle, "w", zipfile.ZIP_STORED) as z:
            for i in range(first, min(count, first + per_bundle)):
                # A distinct build-id of the same length: the last 4 bytes replaced by the copy's number.
                new = original[:-4] + struct.pack(">I", 0x5a000000 + i)
                copy = table[:at] + new + table[at + len(new):]
                bid = new.hex()
                ids.append(bid)
                z.writestr(f"symbols/{bid}.csym", copy)
                entries.append({"build_id": bid, "name": "python3.11d", "arch": "x86_64", "has_dwarf": True,
                                "symbols": {"path": f"symbols/{bid}.csym", "size": len(copy),
                                            "sha256": hashlib.sha256(copy).hexdigest()}})
            manifest = {"format": "crashsym-bundle", "format_version": 1, "app_id": ws.app_id, "package": "bench",
                        "version": "rss", "platform": "linux", "tool": "crash_service_bench", "created": "2026-11-22T00:00:00Z",
                        "modules": entries}
            z.writestr("manifest.json", json.dumps(manifest))
        with open(bundle, "rb") as f:
            status, answer = post(ws.base, f"/api/v1/apps/{ws.app_id}/symbols", ws.key, f.read())
        if status != 201:
            sys.exit(f"crash_service_bench: rss upload answered {status}: {answer[:200]!r}")
    os.remove(bundle)
    stored_mb = count * len(table) / (1 << 20)

    # A fresh process: what the uploads cost is not the measurement.
    stop_server(ws.server)
    ws.base = ws.serve("--max-crashes-per-minute", "0", "--log-level", "error")
    pid = ws.server.pid
    idle = peak_rss_mb(pid)

    # Reports of 8 tables x 6 frames each; every table is touched `passes` times, in shuffled order.
    passes = 3
    order = [bid for _ in range(passes) for bid in rng.sample(ids, len(ids))]
    reports = []
    for start in range(0, len(order), 8):
        frame_list = []
        for i, bid in enumerate(order[start:start + 8]):
            copy = {"path": f"/opt/rss/{i}/python3.11d", "build_id": bid}
            for _ in range(6):
                fstart, size = rng.choice(module["functions"])
                frame_list.append((copy, fstart + rng.randrange(1, size)))
        reports.append(symbolicate_bench.asan_report(frame_list, 4242))
    failures = []
    resolved = [0]
    lock = threading.Lock()
    cursor = [0]

    def worker():
        while True:
            with lock:
                if cursor[0] >= len(reports):
                    return
                body = reports[cursor[0]]
                cursor[0] += 1
            try:
                status, answer = post(ws.base, f"/api/v1/apps/{ws.app_id}/symbolicate", ws.key, body.encode())
                ok = sum(1 for s in json.loads(answer)["stacks"] for x in s["frames"] if x["status"] == "ok")
                with lock:
                    resolved[0] += ok
            except Exception as error:  # noqa: BLE001 - counted and reported
                with lock:
                    failures.append(str(error))

    start = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    if failures:
        sys.exit(f"crash_service_bench: {len(failures)} rss requests failed: {failures[0]}")
    peak = peak_rss_mb(pid)
    return {"rss_tables": count, "rss_tables_mb": round(stored_mb), "rss_reports": len(reports),
            "rss_frames_resolved": resolved[0], "rss_frames": len(order) * 6, "rss_seconds": round(seconds, 1),
            "rss_idle_mb": idle, "rss_peak_mb": peak, "rss_limit_mb": 512 + 150}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crashsym", default=default_crashsym())
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--reports", type=int, default=2000)
    parser.add_argument("--ingest-duration", type=int, default=10)
    parser.add_argument("--backlog", type=int, default=2000)
    parser.add_argument("--postgres", action="store_true", help="metadata in a throw-away PostgreSQL (--database)")
    parser.add_argument("--shared", action="store_true",
                        help="also run against the shared backends (PostgreSQL + SeaweedFS S3) and print the ratios")
    parser.add_argument("--shared-backlog", type=int, default=None,
                        help="the late-symbols backlog of the shared run (default: --backlog)")
    parser.add_argument("--healthz", action="store_true", help="also measure GET /healthz (the HTTP floor)")
    parser.add_argument("--rss-tables-mb", type=int, default=0,
                        help="also measure peak RSS with this many MiB of stored tables (0: skip)")
    parser.add_argument("--rss-only", action="store_true", help="only the RSS measurement (needs --rss-tables-mb)")
    parser.add_argument("--crashes-only", action="store_true",
                        help="only ingestion, processing and late symbols (no ceiling, symbolicate or lookup)")
    parser.add_argument("--profile", metavar="DIR",
                        help="perf record -g the server during processing (DIR/processing.perf.data) and "
                             "re-symbolication (DIR/resymbolication.perf.data)")
    parser.add_argument("--serve-arg", action="append", default=[], metavar="ARG",
                        help="an extra argument for `crashsym serve` (repeatable), e.g. --serve-arg=--crash-workers=4")
    parser.add_argument("--same-bytes", action="store_true",
                        help="ingest the same report bytes every time (the object is then never written again: "
                             "an optimistic ingestion rate, for comparison with earlier runs)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = random.Random(1)
    modules = symbolicate_bench.sample_modules(rng)
    frames = symbolicate_bench.frames(rng, modules, 50)
    result = measure(args, rng, modules, frames, "postgres" if args.postgres else "embedded")
    if args.rss_only:
        print(json.dumps(result, indent=1))
        return
    if args.shared:
        # The same report, ingestion and backlog against PostgreSQL + S3 (node caches warmed by
        # the first request); the ceiling and RSS are not measured again.
        shared = measure(args, random.Random(2), modules, frames, "shared", ceiling=result["in_process_reports_per_s"])
        result["shared"] = shared
        if "symbolicate_cpu_us_per_request" in shared and "in_process_cpu_us_per_report" in result:
            shared["in_process_cpu_us_per_report"] = result["in_process_cpu_us_per_report"]
            shared["symbolicate_cpu_vs_ceiling"] = round(result["in_process_cpu_us_per_report"] / shared["symbolicate_cpu_us_per_request"], 2)
        result["shared_ratios"] = {
            "symbolicate": round(shared["symbolicate_rps"] / result["symbolicate_rps"], 2) if "symbolicate_rps" in shared else None,
            "lookup": round(shared["lookup_rps"] / result["lookup_rps"], 2) if "lookup_rps" in shared else None,
            "ingest": round(shared["ingest_per_s"] / result["ingest_per_s"], 2),
            "resymbolicate": round((shared["backlog"] / shared["backlog_resymbolicated_seconds"])
                                   / (result["backlog"] / result["backlog_resymbolicated_seconds"]), 2)
            if shared.get("backlog_resymbolicated_seconds") and result.get("backlog_resymbolicated_seconds") else None,
        }
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print_result(result)
    if "shared" in result:
        print()
        print_result(result["shared"])
        q = result["shared_ratios"]
        print(f"  shared / embedded: symbolicate {q['symbolicate']}x (target >= 0.5), lookup {q['lookup']}x, "
              f"ingestion {q['ingest']}x (target >= 0.3), re-symbolication {q['resymbolicate']}x")


def measure_symbolication(args, ws, base, report_path, modules, frames, ceiling, result):
    """POST symbolicate, GET /healthz (with --healthz) and the lookup endpoint, with wrk."""
    work = ws.work
    pid = ws.server.pid

    def measured(name, url, script):
        """wrk on `url`; rate, p99, errors and the server's CPU per request as NAME_…"""
        cpu_before = cpu_seconds(pid)
        rate, p99, total, bad = wrk(url, script, args.duration, args.connections)
        result.update({f"{name}_rps": round(rate), f"{name}_p99_ms": round(p99, 2), f"{name}_errors": bad,
                       f"{name}_cpu_us_per_request": round((cpu_seconds(pid) - cpu_before) * 1e6 / max(total, 1), 1)})
        return rate

    script = lua(os.path.join(work, "symbolicate.lua"), "POST", ws.key, report_path)
    rate = measured("symbolicate", f"{base}/api/v1/apps/{ws.app_id}/symbolicate", script)
    result["symbolicate_vs_ceiling"] = round(rate / ceiling, 2)
    if "in_process_cpu_us_per_report" in result:
        result["symbolicate_cpu_vs_ceiling"] = round(result["in_process_cpu_us_per_report"] / result["symbolicate_cpu_us_per_request"], 2)

    if args.healthz:
        # The HTTP floor: the same load on a route that does nothing (no key, no body).
        script = lua(os.path.join(work, "healthz.lua"), "GET", ws.key)
        measured("healthz", f"{base}/healthz", script)

    module = modules[0]
    addresses = "&".join(f"address=0x{offset:x}" for m, offset in frames if m is module)[:4000] or "address=0x1000"
    script = lua(os.path.join(work, "lookup.lua"), "GET", ws.key)
    measured("lookup", f"{base}/api/v1/apps/{ws.app_id}/symbolicate?build_id={module['build_id']}&{addresses}", script)


def measure(args, rng, modules, frames, backends, ceiling=None):
    """One run of every measurement against `backends` (embedded: SQLite and the data directory;
    postgres: PostgreSQL metadata; shared: PostgreSQL and SeaweedFS S3); returns the results.
    `ceiling`: the in-process rate measured before (not measured again)."""
    result = {"crashsym": args.crashsym, "connections": args.connections,
              "metadata": {"embedded": "sqlite", "postgres": "postgres", "shared": "postgres"}[backends],
              "objects": "s3" if backends == "shared" else "directory"}
    with (postgres_cluster() if backends != "embedded" else contextlib.nullcontext()) as database, \
            (seaweedfs() if backends == "shared" else contextlib.nullcontext()) as object_store, \
            Workspace(args.crashsym, "crashsym-crash-bench-", database=database, object_store=object_store) as ws:
        work = ws.work
        tables = os.path.join(work, "tables")
        inputs = []
        for module in modules:
            inputs.append(module["path"])
            debug = f"/usr/lib/debug/.build-id/{module['build_id'][:2]}/{module['build_id'][2:]}.debug"
            if os.path.exists(debug):
                inputs.append(debug)
        base = ws.base = ws.serve("--max-crashes-per-minute", "0", "--log-level", "error", *args.serve_arg)
        env = dict(os.environ, CRASHSYM_APP_KEY=ws.key, XDG_CACHE_HOME=os.path.join(work, "cache"),
                   XDG_CONFIG_HOME=os.path.join(work, "config"))
        subprocess.run([args.crashsym, "upload", *inputs, "--app-id", ws.app_id, "--server", base, "--version", "1.0"],
                       check=True, capture_output=True, env=env)
        subprocess.run([args.crashsym, "dump", *inputs, "-o", tables], check=True, capture_output=True)
        if args.rss_only:
            result.update(rss_under_load(ws, modules[0], tables, args.rss_tables_mb, rng))
            return result
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
        if args.crashes_only:
            ceiling = ceiling or 0
        elif ceiling is None:
            directory = os.path.join(work, "reports")
            os.makedirs(directory)
            for i in range(args.reports):
                with open(os.path.join(directory, f"r{i:06d}.txt"), "w") as f:
                    f.write(report)
            times, cpu = [], []
            for _ in range(3):
                start = time.perf_counter()
                before = children_cpu_seconds()
                subprocess.run([args.crashsym, "symbolicate", directory, "--format", "json", "--symbols", tables,
                                "--no-module-paths", "--no-cache"], check=True, stdout=subprocess.DEVNULL, env=env)
                times.append(time.perf_counter() - start)
                cpu.append(children_cpu_seconds() - before)
            ceiling = args.reports / statistics.median(times)
            # The CLI's CPU per report: with the server's CPU per request, a ratio that other load
            # on the machine moves far less than the rates.
            result["in_process_cpu_us_per_report"] = round(statistics.median(cpu) * 1e6 / args.reports, 1)
        result["in_process_reports_per_s"] = round(ceiling)

        if not args.crashes_only:
            measure_symbolication(args, ws, base, report_path, modules, frames, ceiling, result)
        pid = ws.server.pid

        # Ingestion, then processing catching up.
        processed_before = metric(base, "crashsym_crashes_processed_total")
        accepted_before = metric(base, "crashsym_crashes_accepted_total")
        if args.same_bytes:
            script = lua(os.path.join(work, "ingest.lua"), "POST", ws.key, report_path)
        else:
            script = distinct_lua(os.path.join(work, "ingest.lua"), ws.key, report_path, 4242)
        wal_before = wal_position(database)
        cpu_before = cpu_seconds(pid)
        start = time.perf_counter()
        with profiled(pid, args.profile, "processing"):
            rate, p99, total, bad = wrk(f"{base}/api/v1/apps/{ws.app_id}/crashes", script, args.ingest_duration, args.connections)
            ingest_seconds = time.perf_counter() - start
            # The server's own count: wrk's total also counts requests cut off at the end of the run.
            accepted = metric(base, "crashsym_crashes_accepted_total") - accepted_before
            caught_up = wait_for(lambda: metric(base, "crashsym_crashes_processed_total") - processed_before >= accepted, 600)
        if accepted:
            # The server's CPU per crash, accepted and processed: far less sensitive to other load than rates.
            result["ingest_cpu_ms_per_crash"] = round((cpu_seconds(pid) - cpu_before) * 1000 / accepted, 3)
        # None: processing did not catch up within the wait (0.0 is "already caught up").
        behind = float("nan") if caught_up is None else caught_up
        result.update(ingest_per_s=round(accepted / ingest_seconds), ingest_p99_ms=round(p99, 2), ingest_refused=bad,
                      processing_seconds=round(ingest_seconds + behind, 1),
                      processing_vs_ingest=round((ingest_seconds + behind) / ingest_seconds, 2))
        if database and accepted:
            # PostgreSQL's write-ahead log per crash accepted and processed (every row written).
            result["wal_bytes_per_crash"] = round((wal_position(database) - wal_before) / accepted)

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
        backlog = args.shared_backlog if backends == "shared" and args.shared_backlog else args.backlog
        while sent < backlog:
            wrk(f"{base}/api/v1/apps/{ws.app_id}/crashes", script, 2, args.connections)
            sent = metric(base, "crashsym_crashes_accepted_total") - accepted_before
        wait_for(lambda: metric(base, "crashsym_crashes_processed_total") - processed_before >= sent, 600)
        cpu_before = cpu_seconds(pid)
        start = time.perf_counter()
        with profiled(pid, args.profile, "resymbolication"):
            subprocess.run([args.crashsym, "upload", fixture, "--app-id", ws.app_id, "--server", base, "--version", "1.0"],
                           check=True, capture_output=True, env=env)
            done = wait_for(lambda: metric(base, "crashsym_crashes_processed_total") - processed_before >= 2 * sent, 900)
        if sent:
            result["backlog_cpu_ms_per_crash"] = round((cpu_seconds(pid) - cpu_before) * 1000 / sent, 3)
        result.update(backlog=int(sent), backlog_resymbolicated_seconds=round(time.perf_counter() - start, 1) if done is not None else None,
                      backlog_requeued=int(metric(base, "crashsym_crashes_requeued_total") - requeued_before))
        result["server_peak_rss_mb"] = peak_rss_mb(ws.server.pid)
        if args.rss_tables_mb > 0 and backends != "shared":
            result.update(rss_under_load(ws, modules[0], tables, args.rss_tables_mb, rng))
    return result


def print_result(r):

    print(f"crash service ({r['metadata']} metadata, {r['objects']} objects), wrk with {r['connections']} connections on 127.0.0.1, "
          f"one 50-frame ASan report over 5 modules")
    if "symbolicate_rps" in r:
        print(f"  in-process ceiling (crashsym symbolicate DIR)   {r['in_process_reports_per_s']} reports/s, "
              f"CPU {r.get('in_process_cpu_us_per_report')} us/report")
        print(f"  POST symbolicate                                {r['symbolicate_rps']} req/s, p99 {r['symbolicate_p99_ms']} ms, "
              f"{r['symbolicate_vs_ceiling']}x the ceiling, {r['symbolicate_errors']} errors "
              f"(targets: >= 5000 req/s, >= 0.5x, p99 <= 20 ms)")
        print(f"  server CPU per symbolicate request              {r['symbolicate_cpu_us_per_request']} us "
              f"({r.get('symbolicate_cpu_vs_ceiling')}x the CLI's CPU per report)")
        if "healthz_rps" in r:
            print(f"  GET /healthz (the HTTP floor)                   {r['healthz_rps']} req/s, p99 {r['healthz_p99_ms']} ms, "
                  f"CPU {r['healthz_cpu_us_per_request']} us/request")
        print(f"  GET symbolicate (lookup)                        {r['lookup_rps']} req/s, p99 {r['lookup_p99_ms']} ms, "
              f"CPU {r['lookup_cpu_us_per_request']} us/request")
    print(f"  POST crashes                                    {r['ingest_per_s']} accepted/s, p99 {r['ingest_p99_ms']} ms, "
          f"{r['ingest_refused']} refused (target >= 2000/s)")
    if "wal_bytes_per_crash" in r:
        print(f"  PostgreSQL WAL per crash (ingested + processed) {r['wal_bytes_per_crash']} bytes")
    print(f"  processing caught up after                      {r['processing_seconds']} s "
          f"({r['processing_vs_ingest']}x the ingestion time; target <= 2x)")
    print(f"  server CPU per crash, ingested and processed    {r.get('ingest_cpu_ms_per_crash')} ms")
    print(f"  late symbols: {r['backlog']} crashes re-symbolicated in {r['backlog_resymbolicated_seconds']} s "
          f"({r['backlog_requeued']} requeued; target 100,000 in <= 60 s)")
    print(f"  server CPU per re-symbolicated crash            {r.get('backlog_cpu_ms_per_crash')} ms")
    print(f"  server peak RSS                                 {r.get('server_peak_rss_mb')} MiB")
    if "rss_peak_mb" in r:
        print(f"  peak RSS with {r['rss_tables_mb']} MiB of tables ({r['rss_tables']} tables, {r['rss_reports']} reports, "
              f"{r['rss_frames_resolved']}/{r['rss_frames']} frames resolved in {r['rss_seconds']} s)  "
              f"{r['rss_peak_mb']} MiB (target <= {r['rss_limit_mb']} MiB: the default 512 MiB cache + 150)")


if __name__ == "__main__":
    sys.exit(main())
