#!/usr/bin/env python3
"""Measures `crashsym symbolicate` against llvm-symbolizer on the same frames, in one run.

The issue's two targets, each printed as a ratio to llvm-symbolizer measured in the same run:

1. Latency: one sanitizer report of 50 frames over 5 modules, symbol tables already cached,
   end to end in a fresh process (median of --runs runs). Target: at most 30 ms.
2. Throughput: --reports reports (default 10,000) in one invocation (`symbolicate DIR`), against
   one llvm-symbolizer process answering every frame of every report (medians of --bulk-runs runs,
   the tools taking turns). Target: at least 5x faster.
   Measured with JSON output on both sides (the target) and with each tool's default text output.

Reports are ASan-style (`#N 0x… (/path/module+0xOFF) (BuildId: …)`, an exact convention, so both
tools look up the same offsets); addresses are sampled inside the modules' function symbols with
a fixed seed. Standalone: needs only python3, the crashsym binary, llvm-symbolizer, llvm-nm and
readelf.

Each run checks that both tools get the same frames of the 50-frame report and prints how many
answers agree (--check does the same for the throughput run).

Usage: symbolicate_bench.py --crashsym PATH [--reports N] [--frames N] [--runs N] [--bulk-runs N]
                            [--seed N] [--work DIR] [--json] [--check]
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

LLVM_BIN = "/opt/swift/usr/bin"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def candidate_modules():
    """Five modules with DWARF (or a separate debug file found by build-id), largest first."""
    fixtures = os.path.join(ROOT, "Fixtures", "elf")
    return [
        ("/usr/bin/python3.11d", None),
        ("/usr/lib/x86_64-linux-gnu/libc.so.6", "debug"),
        (os.path.join(fixtures, "clang-cpp-O2-dwarf5"), None),
        (os.path.join(fixtures, "gcc-c-O2-dwarf5"), None),
        (os.path.join(fixtures, "rust-O2"), None),
    ]


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "Build ID:" in line:
            return line.split("Build ID:")[1].strip()
    return None


def functions(path):
    """(start, size) of sized function symbols, from the file or its debug file."""
    out = subprocess.run([f"{LLVM_BIN}/llvm-nm", "--defined-only", "-S", path], capture_output=True, text=True).stdout
    result = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            start, size = int(parts[0], 16), int(parts[1], 16)
            if size > 4:
                result.append((start, size))
    return result


def sample_modules(rng):
    modules = []
    for path, debug in candidate_modules():
        if not os.path.exists(path):
            continue
        bid = build_id(path)
        if not bid:
            continue
        source = path
        if debug:
            source = f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug"
            if not os.path.exists(source):
                continue
        funcs = functions(source)
        if funcs:
            modules.append({"path": path, "build_id": bid, "functions": funcs})
    if len(modules) < 5:
        sys.exit(f"symbolicate_bench: only {len(modules)} usable modules found (need 5: python3.11-dbg, libc6-dbg, fixtures)")
    return modules[:5]


def frames(rng, modules, count):
    result = []
    for _ in range(count):
        module = rng.choice(modules)
        start, size = rng.choice(module["functions"])
        result.append((module, start + rng.randrange(1, size)))
    return result


def asan_report(frame_list, pid):
    lines = ["=================================================================",
             f"=={pid}==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000 (pc 0x1 bp 0x2 sp 0x3 T0)",
             "==%d==The signal is caused by a READ memory access." % pid]
    for index, (module, offset) in enumerate(frame_list):
        lines.append(f"    #{index} 0x{0x7f0000000000 + offset:x}  ({module['path']}+0x{offset:x}) (BuildId: {module['build_id']})")
    lines += ["", "SUMMARY: AddressSanitizer: SEGV", f"=={pid}==ABORTING", ""]
    return "\n".join(lines)


def agreement(crashsym_json, llvm_json):
    """How many frames both tools resolved alike: (frames, same answers), comparing each frame's
    inline chain as (file, line, column) per level, innermost first (names are left out: the two
    tools demangle differently, e.g. Rust and `> >`). crashsym prints one JSON report per line;
    llvm-symbolizer one JSON object per request line, in the same order (the requests list each
    report's frames)."""
    ours = []
    for line in crashsym_json.splitlines():
        if line.strip():
            for stack in json.loads(line)["stacks"]:
                ours += [[(s["file"], s["line"], s["column"]) for s in frame["symbolized"]] for frame in stack["frames"]]
    theirs = [[(s["FileName"], s["Line"], s["Column"]) for s in json.loads(line).get("Symbol", [])]
              for line in llvm_json.splitlines() if line.strip()]
    if len(ours) != len(theirs):
        sys.exit(f"symbolicate_bench: crashsym answered {len(ours)} frames, llvm-symbolizer {len(theirs)}: not the same work")
    return len(ours), sum(1 for a, b in zip(ours, theirs) if a == b)


def check(crashsym_argv, llvm_argv, requests, env, label):
    """Runs both tools once more (untimed) and prints how far their answers agree."""
    ours = subprocess.run(crashsym_argv, capture_output=True, text=True, env=env).stdout
    with open(requests, "rb") as stdin:
        theirs = subprocess.run(llvm_argv, stdin=stdin, capture_output=True, text=True).stdout
    frames, same = agreement(ours, theirs)
    print(f"{label}: {frames} frames to each tool, the same inline chain (file:line:column) for {same} ({100 * same / frames:.1f}%)",
          file=sys.stderr)


def timed(argv, stdin_path=None, stdout_path=os.devnull, env=None):
    with open(stdin_path or os.devnull, "rb") as stdin, open(stdout_path, "wb") as stdout:
        start = time.perf_counter()
        status = subprocess.run(argv, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, env=env).returncode
        elapsed = time.perf_counter() - start
    if status != 0:
        sys.exit(f"symbolicate_bench: {' '.join(argv)} exited with {status}")
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crashsym", required=True)
    parser.add_argument("--reports", type=int, default=10000)
    parser.add_argument("--frames", type=int, default=20, help="frames per report of the throughput run")
    parser.add_argument("--runs", type=int, default=20, help="fresh-process runs of the latency measurement")
    parser.add_argument("--bulk-runs", type=int, default=3, help="runs of the throughput measurement (medians)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work", help="working directory (default: a temporary one, removed)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--check", action="store_true",
                        help="also check that both tools answered the same frames of the throughput run (slow)")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    work = args.work or tempfile.mkdtemp(prefix="crashsym-symbolicate-bench-")
    os.makedirs(work, exist_ok=True)
    cache = os.path.join(work, "cache")
    env = dict(os.environ, CRASHSYM_CACHE_DIR=cache)
    symbolizer = f"{LLVM_BIN}/llvm-symbolizer"
    try:
        modules = sample_modules(rng)
        print(f"modules: {', '.join(os.path.basename(m['path']) for m in modules)}", file=sys.stderr)

        # 1. Latency: one 50-frame report, tables cached by a first run.
        report = os.path.join(work, "report-50.txt")
        frame_list = frames(rng, modules, 50)
        with open(report, "w") as out:
            out.write(asan_report(frame_list, 4242))
        requests = os.path.join(work, "report-50.requests")
        with open(requests, "w") as out:
            out.writelines(f"{m['path']} 0x{offset:x}\n" for m, offset in frame_list)
        crashsym = [args.crashsym, "symbolicate", report, "--format", "json"]
        llvm = [symbolizer, "--inlining", "--output-style=JSON"]
        warm = timed(crashsym, env=env)  # converts and caches the five tables
        print(f"first run (converting 5 modules into the cache): {warm * 1000:.0f} ms", file=sys.stderr)
        # Fairness: the same frames go to both tools, and their answers agree.
        check(crashsym, llvm, requests, env, "50-frame report")
        ours = statistics.median(timed(crashsym, env=env) for _ in range(args.runs))
        theirs = statistics.median(timed(llvm, stdin_path=requests) for _ in range(args.runs))

        # 2. Throughput: many reports in one invocation against one llvm-symbolizer process.
        directory = os.path.join(work, "reports")
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
        all_requests = os.path.join(work, "reports.requests")
        with open(all_requests, "w") as requests_out:
            for number in range(args.reports):
                batch = frames(rng, modules, args.frames)
                with open(os.path.join(directory, f"report-{number:05d}.txt"), "w") as out:
                    out.write(asan_report(batch, 10000 + number))
                requests_out.writelines(f"{m['path']} 0x{offset:x}\n" for m, offset in batch)
        if args.check:
            check([args.crashsym, "symbolicate", directory, "--format", "json"], llvm, all_requests, env, "throughput run")
        # Medians of --bulk-runs runs, the two tools taking turns so that both meet the same load.
        samples = {"json": ([], []), "text": ([], [])}
        for _ in range(args.bulk_runs):
            samples["json"][0].append(timed([args.crashsym, "symbolicate", directory, "--format", "json"], env=env))
            samples["json"][1].append(timed(llvm, stdin_path=all_requests))
            # The same in each tool's default text output.
            samples["text"][0].append(timed([args.crashsym, "symbolicate", directory], env=env))
            samples["text"][1].append(timed([symbolizer, "--inlining"], stdin_path=all_requests))
        bulk_ours, bulk_theirs = (statistics.median(runs) for runs in samples["json"])
        text_ours, text_theirs = (statistics.median(runs) for runs in samples["text"])

        results = {
            "latency": {"frames": 50, "modules": 5, "crashsym_ms": ours * 1000, "llvm_symbolizer_ms": theirs * 1000,
                        "ratio": theirs / ours, "target_ms": 30, "met": ours * 1000 <= 30},
            "throughput": {"reports": args.reports, "frames": args.reports * args.frames,
                           "crashsym_s": bulk_ours, "llvm_symbolizer_s": bulk_theirs,
                           "ratio": bulk_theirs / bulk_ours, "target_ratio": 5, "met": bulk_theirs / bulk_ours >= 5,
                           "text_crashsym_s": text_ours, "text_llvm_symbolizer_s": text_theirs,
                           "text_ratio": text_theirs / text_ours},
        }
        if args.json:
            print(json.dumps(results, indent=2))
        else:
            lat, thr = results["latency"], results["throughput"]
            print("| Measurement | crashsym | llvm-symbolizer | ratio | target |")
            print("|---|---|---|---|---|")
            print(f"| 50-frame report, 5 modules, cached, fresh process (median of {args.runs}) | "
                  f"{lat['crashsym_ms']:.1f} ms | {lat['llvm_symbolizer_ms']:.1f} ms | {lat['ratio']:.1f}x | "
                  f"<= 30 ms: {'met' if lat['met'] else 'NOT met'} |")
            print(f"| {thr['reports']} reports, {thr['frames']} frames, one invocation, JSON (median of {args.bulk_runs}) | {thr['crashsym_s']:.2f} s | "
                  f"{thr['llvm_symbolizer_s']:.2f} s | {thr['ratio']:.1f}x | >= 5x: {'met' if thr['met'] else 'NOT met'} |")
            print(f"| the same, text output | {thr['text_crashsym_s']:.2f} s | {thr['text_llvm_symbolizer_s']:.2f} s | "
                  f"{thr['text_ratio']:.1f}x | — |")
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
