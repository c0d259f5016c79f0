#!/usr/bin/env python3
"""Core capture (issue 16): `crashsym-agent agent capture` on real cores piped in as the kernel
pipes them, against the floor (`cat core > /dev/null`: reading the pipe) and eu-stack on the core
file.

Makes real cores of `big-heap` (scripts/build-core-fixtures: BIG_HEAP_MB MiB of touched heap,
three threads, a null write) of each --sizes-mib, then, median of --runs each with /usr/bin/time
(wall, peak RSS of the largest process):
- `cat core | crashsym-agent agent capture …` with the default bounds (64 MiB kept, 512 KiB a
  stack): the helper reads the notes, keeps the stacks and first pages, walks and writes the
  report (the conversion cache warmed by one run first, as on a host that has seen the build);
- the same through zstd (`zstd -dc core.zst | …`, systemd-coredump's compression);
- `cat core > /dev/null`, the cost of the pipe alone, and `eu-stack -i --core core`.
Target (issue 16): peak RSS bounded whatever the core's size. Prints a markdown report.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def say(text):
    print(f"capture_bench: {text}", file=sys.stderr, flush=True)


def timed(command):
    """(wall seconds, peak RSS in MB) of a shell command, by /usr/bin/time."""
    result = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M", "/bin/sh", "-c", command],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise SystemExit(f"capture_bench: failed ({result.returncode}): {command}\n{result.stderr}")
    line = [l for l in result.stderr.splitlines() if l.startswith("TIME ")][-1]
    _, wall, peak = line.split()
    return float(wall), int(peak) / 1024


def median(command, runs):
    samples = [timed(command) for _ in range(runs)]
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crashsym", required=True, help="the crashsym binary (crashsym-agent beside it)")
    parser.add_argument("--sizes-mib", default="256,1024,2048")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    agent = os.path.join(os.path.dirname(os.path.abspath(args.crashsym)), "crashsym-agent")
    work = tempfile.mkdtemp(prefix="capture-bench-")
    rows = []
    try:
        for size in [int(s) for s in args.sizes_mib.split(",")]:
            directory = os.path.join(work, f"big-{size}")
            say(f"making a core with {size} MiB of heap")
            subprocess.run(["bash", os.path.join(ROOT, "scripts/build-core-fixtures"), directory, "big-heap"],
                           env={**os.environ, "BIG_HEAP_MB": str(size)}, check=True, stdout=subprocess.DEVNULL)
            core = os.path.join(directory, "big-heap.core")
            compressed = core + ".zst"
            subprocess.run(["zstd", "-q", "-3", "-T0", core, "-o", compressed], check=True)
            state = os.path.join(directory, "state")
            capture = (f"'{agent}' agent capture --state-dir '{state}' --max-captures-per-minute 0 "
                       f"4242 4242 11 1700000000 big-heap")
            timed(f"cat '{core}' | {capture}")  # warms the conversion cache
            piped = median(f"cat '{core}' | {capture}", args.runs)
            unzstd = median(f"zstd -dc '{compressed}' | {capture}", args.runs)
            floor = median(f"cat '{core}' > /dev/null", args.runs)
            eu = median(f"eu-stack -i --core '{core}' -e '{directory}/big-heap'", args.runs)
            rows.append((os.path.getsize(core), piped, unzstd, floor, eu))
            os.remove(compressed)
            os.remove(core)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("## Core capture\n")
    print(f"`crashsym-agent agent capture` fed by a pipe, default bounds; median of {args.runs}; "
          "wall seconds / peak RSS MB.\n")
    print("| core | capture (`cat` pipe) | capture (`zstd -dc` pipe) | `cat` alone | eu-stack on the file |")
    print("|---|---|---|---|---|")
    for size, piped, unzstd, floor, eu in rows:
        cells = [f"{w:.2f} s / {m:.1f} MB" for w, m in (piped, unzstd, floor, eu)]
        print(f"| {size / (1 << 20):.0f} MiB | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
