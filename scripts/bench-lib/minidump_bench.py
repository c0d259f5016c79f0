#!/usr/bin/env python3
"""Minidump uploads (standalone): POST …/minidump as Crashpad sends it, accepted and processed per second.

  minidump_bench.py [--crashsym BIN] [--duration 10] [--connections 64] [--variants 20000] [--json]

1. A fresh `crashsym serve`; the reference binary's symbols (`../shared/reference/minidump-linux/
   crash_linux`) uploaded with `crashsym upload`, so every minidump is walked with its CFI.
2. `--variants` distinct requests built as Crashpad's `crashpad_handler` builds them: a multipart
   form (annotations prod, ver, guid; the minidump in `upload_file_minidump`) gzip'd as a whole
   (`Content-Encoding: gzip`). Each carries the reference minidump with 8 different bytes after its
   last stream (ignored by readers), so that no upload is a duplicate of another.
3. wrk with `--connections` clients for `--duration` s cycles through them: minidumps accepted per
   second (200 with a crash id), p99 latency; then how long processing (read, walk with CFI,
   symbolicate, group) takes to catch up (crashsym_crashes_processed_total), as minidumps
   processed per second.
"""

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serverkit import Workspace, default_crashsym  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFERENCE = os.path.join(os.path.dirname(ROOT), "shared", "reference", "minidump-linux")


def crashpad_body(minidump, index):
    """A Crashpad-shaped gzip'd multipart body and its content type."""
    boundary = f"---MultipartBoundary-{index:032d}---"
    parts = []
    for key, value in sorted({"prod": "crash_linux", "ver": "1.0", "guid": f"bench-{index}"}.items()):
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode())
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="upload_file_minidump"; '
                 f'filename="{index}.dmp"\r\nContent-Type: application/octet-stream\r\n\r\n'.encode())
    parts.append(minidump + index.to_bytes(8, "little"))
    parts.append(f"\r\n--{boundary}--\r\n".encode())
    return gzip.compress(b"".join(parts), compresslevel=6), f"multipart/form-data; boundary={boundary}"


def metric(base, name):
    with urllib.request.urlopen(f"{base}/metrics", timeout=10) as answer:
        for line in answer.read().decode().splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crashsym", default=default_crashsym())
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--variants", type=int, default=20000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with open(os.path.join(REFERENCE, "crash_linux.dmp"), "rb") as f:
        minidump = f.read()
    result = {"crashsym": args.crashsym, "connections": args.connections}

    with Workspace(args.crashsym, "crashsym-minidump-bench-") as ws:
        work = ws.work
        base = ws.serve("--max-crashes-per-minute", "0", "--log-level", "error")
        env = dict(os.environ, CRASHSYM_APP_KEY=ws.key, XDG_CACHE_HOME=os.path.join(work, "cache"),
                   XDG_CONFIG_HOME=os.path.join(work, "config"))
        subprocess.run([args.crashsym, "upload", os.path.join(REFERENCE, "crash_linux"), "--app-id", ws.app_id,
                        "--server", base, "--version", "1.0"], check=True, capture_output=True, env=env)
        bodies = os.path.join(work, "bodies")
        os.mkdir(bodies)
        content_type = None
        size = 0
        for index in range(args.variants):
            body, content_type_i = crashpad_body(minidump, index)
            size = len(body)
            with open(os.path.join(bodies, f"{index}"), "wb") as f:
                f.write(body)
            with open(os.path.join(bodies, f"{index}.type"), "w") as f:
                f.write(content_type_i)
            content_type = content_type_i
        script = os.path.join(work, "minidump.lua")
        path = f"/api/v1/apps/{ws.app_id}/minidump?key={ws.key}"
        with open(script, "w") as f:
            f.write(f"""
local bodies, types, count, next = {{}}, {{}}, {args.variants}, 0
for i = 0, count - 1 do
  local b = io.open("{bodies}/" .. i, "rb"); bodies[i] = b:read("*a"); b:close()
  local t = io.open("{bodies}/" .. i .. ".type", "rb"); types[i] = t:read("*a"); t:close()
end
-- Each thread starts half the variants further on (a global, set in the thread's own state).
offset = 0
local starts = 0
function setup(thread) thread:set("offset", starts); starts = starts + math.floor(count / 2) end
function request()
  local i = (offset + next) % count
  next = next + 1
  return wrk.format("POST", "{path}", {{["Content-Type"] = types[i], ["Content-Encoding"] = "gzip",
                                       ["User-Agent"] = "Crashpad/0.8.0"}}, bodies[i])
end
""")
        # One request first: the answer is a crash id.
        first_body, first_type = crashpad_body(minidump, args.variants + 1)
        request = urllib.request.Request(base + path, data=first_body, method="POST",
                                         headers={"Content-Type": first_type, "Content-Encoding": "gzip"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            if answer.status != 200 or not re.fullmatch(rb"[0-9a-f]{32}", answer.read()):
                sys.exit("minidump_bench: the first upload got no crash id")
        processed_before = metric(base, "crashsym_crashes_processed_total")
        start = time.perf_counter()
        out = subprocess.run(["wrk", "-t", "2", "-c", str(args.connections), "-d", f"{args.duration}s", "--latency",
                              "-s", script, base + path], check=True, capture_output=True, text=True).stdout
        ingest_seconds = time.perf_counter() - start
        total = int(re.search(r"(\d+) requests in", out).group(1))
        bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        bad = int(bad.group(1)) if bad else 0
        p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
        p99_ms = float(p99.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[p99.group(2)]
        accepted_metric = metric(base, "crashsym_minidumps_accepted_total")
        new = accepted_metric - 1  # the first request above
        target = processed_before + new
        while metric(base, "crashsym_crashes_processed_total") < target:
            time.sleep(0.1)
        processing_seconds = time.perf_counter() - start
        result.update(body_bytes=size, requests=total, refused=bad, duplicates=total - bad - int(new),
                      requests_per_s=round(total / ingest_seconds),
                      accepted_per_s=round(new / ingest_seconds), accepted_p99_ms=round(p99_ms, 2),
                      processed=int(new), processing_seconds=round(processing_seconds, 1),
                      processed_per_s=round(new / processing_seconds))

    if args.json:
        print(json.dumps(result))
        return
    r = result
    print(f"  POST minidump (Crashpad: gzip'd multipart, {r['body_bytes']} bytes, {args.connections} clients)")
    print(f"    accepted         {r['accepted_per_s']} new crashes/s ({r['requests_per_s']} requests/s), "
          f"p99 {r['accepted_p99_ms']} ms, {r['refused']} refused, {r['duplicates']} duplicates (variants cycled)")
    print(f"    processed        {r['processed_per_s']}/s ({r['processed']} minidumps walked with CFI, symbolicated and "
          f"grouped in {r['processing_seconds']} s from the first upload)")


if __name__ == "__main__":
    main()
