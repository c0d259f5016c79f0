#!/usr/bin/env python3
"""Stack walking (issue 15): crashsym on core files against eu-stack and gdb.

Makes real cores (the kernel's when /proc/sys/kernel/core_pattern is a plain name, else gdb's
generate-core-file): python3.11d with 8 threads (7 asleep in system calls, the main one in
abort()), and a python3 that filled 2 GiB before aborting. Measures, median of --runs each with
/usr/bin/time (wall, peak RSS):
- walking and symbolicating every thread of the python3.11d core: `crashsym symbolicate core`
  (JSON; the conversion cache warmed by one run first, as on a machine that has seen the build)
  against `eu-stack -i -l --core core` and gdb's `thread apply all bt` (target: <= 0.5x eu-stack);
- the 2 GiB core's peak RSS (target <= 64 MB: the core is mapped, never read whole);
- what the unwind rules add to a table (`crashsym dump`: the unwind-rules section of the .csym
  directory against the rest) for python3.11d and libc with its debug file (target <= 25 %).
Prints a markdown report.
"""
import argparse
import glob
import os
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import measure  # noqa: E402

THREADS = """import os, threading, time
for _ in range(7):
    threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
time.sleep(0.5)
os.abort()
"""
BIG = """import os
held = bytearray(b"\\x01") * ({size})
os.abort()
"""


def say(text):
    print(f"walk_bench: {text}", file=sys.stderr, flush=True)


def make_core(argv, directory, name):
    """Runs argv until it aborts and returns the path of its core (DIR/NAME.core)."""
    target = os.path.join(directory, name + ".core")
    pattern = open("/proc/sys/kernel/core_pattern").read().strip()
    if pattern in ("core", "core.%p"):
        work = tempfile.mkdtemp(dir=directory)

        def unlimited():
            resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

        subprocess.run(["setarch", os.uname().machine, "-R", *argv], cwd=work, preexec_fn=unlimited,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        found = glob.glob(os.path.join(work, "core*"))
        if found:
            os.rename(found[0], target)
            shutil.rmtree(work)
            return target
        shutil.rmtree(work)
    subprocess.run(["gdb", "-q", "-batch", "-ex", "set startup-with-shell off", "-ex", "run",
                    "-ex", f"generate-core-file {target}", "--args", *argv],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not os.path.exists(target):
        sys.exit(f"walk_bench: no core for {name}")
    return target


def timed(argv, runs):
    results = [measure.run(argv, timeout=1800) for _ in range(runs)]
    failed = [r for r in results if r.status != 0]
    if failed:
        sys.exit(f"walk_bench: {argv[0]} failed ({failed[0].status}): {failed[0].stderr_tail}")
    return statistics.median(r.wall for r in results), max(r.max_rss for r in results)


def unwind_share(table):
    """(unwind-rules bytes, the rest) of a .csym: its section directory (docs/csym-format.md)."""
    with open(table, "rb") as handle:
        data = handle.read()
    count = data[11]
    if count < 11:
        return None
    offset, size = struct.unpack_from("<QQ", data, 88 + 10 * 16)
    return size, len(data) - size


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crashsym", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--big-gib", type=float, default=2.0)
    parser.add_argument("--python", default="/usr/bin/python3.11d")
    parser.add_argument("--libc", default="/lib/x86_64-linux-gnu/libc.so.6")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="crashsym-walk-bench-")
    cache = os.path.join(work, "cache")
    try:
        say("making the python3.11d core (8 threads)")
        core = make_core([args.python, "-c", THREADS], work, "python-threads")
        crashsym = [args.crashsym, "symbolicate", core, "--format", "json", "--cache-dir", cache]
        say("warming the conversion cache (python3.11d, libc)")
        measure.run(crashsym, timeout=1800)
        ours = timed(crashsym, args.runs)
        eu = timed(["eu-stack", "-i", "-l", "--core", core], args.runs)
        gdb = timed(["gdb", "-q", "-batch", "-ex", "thread apply all bt", args.python, core], args.runs)
        size = os.path.getsize(core)

        say(f"making a {args.big_gib} GiB core")
        big = make_core(["python3", "-c", BIG.format(size=int(args.big_gib * (1 << 30)))], work, "big")
        big_size = os.path.getsize(big)
        big_crashsym = [args.crashsym, "symbolicate", big, "--format", "json", "--cache-dir", cache]
        measure.run(big_crashsym, timeout=1800)
        big_ours = timed(big_crashsym, max(2, args.runs // 2))
        os.remove(big)

        say("dumping python3.11d and libc")
        tables = os.path.join(work, "tables")
        growth = []
        for path in (args.python, args.libc):
            out = subprocess.run([args.crashsym, "dump", path, "-o", tables, "--format", "json"],
                                 capture_output=True, text=True, check=True)
            import json
            module = json.loads(out.stdout.splitlines()[-1])
            share = unwind_share(module["output"])
            growth.append((os.path.basename(path), module["size"], share))

        mb = 1 << 20
        print(f"Cores made on this machine; median of {args.runs} runs (wall, peak RSS by /usr/bin/time).\n")
        print(f"| python3.11d core, 8 threads ({size / mb:.0f} MB) | wall | peak RSS | wall vs crashsym |")
        print("|---|---:|---:|---:|")
        print(f"| crashsym symbolicate (JSON, tables cached) | {ours[0]:.3f} s | {ours[1] / mb:.1f} MB | 1.00x |")
        print(f"| eu-stack -i -l --core | {eu[0]:.3f} s | {eu[1] / mb:.1f} MB | {eu[0] / ours[0]:.2f}x |")
        print(f"| gdb thread apply all bt | {gdb[0]:.3f} s | {gdb[1] / mb:.1f} MB | {gdb[0] / ours[0]:.2f}x |")
        print(f"\ncrashsym / eu-stack wall: {ours[0] / eu[0]:.2f} (target <= 0.5); crashsym / gdb: {ours[0] / gdb[0]:.2f}\n")
        print(f"{big_size / (1 << 30):.2f} GiB core: crashsym symbolicate {big_ours[0]:.3f} s, peak RSS "
              f"{big_ours[1] / mb:.1f} MB (target <= 64 MB)\n")
        print("| table | size | unwind rules | growth over the table without them (target <= 25 %) |")
        print("|---|---:|---:|---:|")
        for name, total, share in growth:
            if share is None:
                print(f"| {name} | {total:,} | none | - |")
            else:
                rules, rest = share
                print(f"| {name} | {total:,} | {rules:,} | +{100 * rules / rest:.1f} % |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
