#!/usr/bin/env python3
"""Upload benchmark (standalone): `crashsym upload --bundle` vs `curl -T` over loopback, to `crashsym serve`.

    python3 scripts/bench-lib/upload_bench.py [--crashsym PATH] [--size-mib 1024] [--runs 3]

Builds a valid bundle of about --size-mib MiB (the table of a fixture from `crashsym dump`, and as
its debug file the fixture padded with random bytes after its last section, stored uncompressed),
starts the real `crashsym serve` on 127.0.0.1 (port 0, fresh data directory), uploads it once to
store it, then uploads the same file alternately with crashsym and with curl, in the same run. Each
timed upload includes the server's validation (every byte is inflated and hashed) and its answer;
the server answers 201 with the module already present. Reports the median time and throughput of
each, crashsym's share of curl's, and crashsym's peak RSS (from wait4). curl gets an empty `Expect:`
header as crashsym sends (the server never answers `100 Continue`; curl would wait 1 s). The issue's
targets: peak RSS <= 64 MB, throughput >= 80% of curl.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from serverkit import ROOT, Workspace, default_crashsym, make_bundle


def make_padded_bundle(crashsym, fixture, size_mib, work, app_id):
    """A bundle the server's validator accepts, of about `size_mib` MiB: the fixture's table, and as
    its debug file the fixture padded with random bytes after its last section."""
    debug = os.path.join(work, "padded.debug")
    shutil.copyfile(fixture, debug)
    with open(debug, "ab") as handle:
        chunk = os.urandom(1 << 20)
        for _ in range(size_mib):
            handle.write(chunk)
    bundle, _ = make_bundle(crashsym, fixture, work, app_id, "upload_bench.py", debug=debug)
    os.unlink(debug)
    return bundle


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
    parser.add_argument("--crashsym", default=default_crashsym())
    parser.add_argument("--fixture", default=os.path.join(ROOT, "Fixtures/elf/gcc-c-O2-dwarf5"))
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    options = parser.parse_args()

    with Workspace(options.crashsym, "crashsym-upload-bench-") as workspace:
        key = workspace.key
        bundle = make_padded_bundle(options.crashsym, options.fixture, options.size_mib, workspace.work, "bench")
        size = os.path.getsize(bundle)
        base = workspace.serve()
        crashsym = [options.crashsym, "upload", "--bundle", bundle, "--app-id", "bench", "--app-key", key,
                    "--server", base]
        curl = ["curl", "-sS", "--fail-with-body", "-o", "/dev/null", "-X", "POST", "-T", bundle,
                "-H", "Authorization: Bearer " + key, "-H", "Content-Type: application/zip", "-H", "Expect:",
                base + "/api/v1/apps/bench/symbols"]
        # Store it once, so every timed upload does the same server-side work.
        if run_measured(crashsym)[2] != 0:
            sys.exit("the first upload failed")
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

    crashsym_rate = size / statistics.median(results["crashsym"]) / 1e6
    curl_rate = size / statistics.median(results["curl"]) / 1e6
    report = {"bundle_bytes": size, "runs": options.runs, "server": "crashsym serve",
              "crashsym_seconds": [round(x, 2) for x in results["crashsym"]],
              "curl_seconds": [round(x, 2) for x in results["curl"]],
              "crashsym_mb_per_s": round(crashsym_rate, 1), "curl_mb_per_s": round(curl_rate, 1),
              "crashsym_share_of_curl": round(crashsym_rate / curl_rate, 3),
              "crashsym_peak_rss_mb": round(peak / 1e6, 1), "crashsym": options.crashsym}
    if options.json:
        print(json.dumps(report))
    else:
        print("upload of a %.0f MiB bundle to crashsym serve over loopback, median of %d runs" % (size / 2**20, options.runs))
        print("  crashsym upload --bundle  %8.1f MB/s   peak RSS %.1f MB" % (crashsym_rate, peak / 1e6))
        print("  curl -T                   %8.1f MB/s" % curl_rate)
        print("  crashsym / curl           %8.1f %%" % (100 * crashsym_rate / curl_rate))


if __name__ == "__main__":
    main()
