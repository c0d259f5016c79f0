"""Runs processes and measures them: wall time and peak RSS of one run, medians over many.

Peak RSS comes from `/usr/bin/time -f %M` (the tool's `ru_maxrss`). Not from wait4(2) here:
Linux counts the pages a child had before exec, and a child of this Python process starts with
all of the parent's memory (hundreds of MB after reading a large ELF file), while /usr/bin/time
is a few hundred KB. Fresh-process latency is measured with hyperfine, which runs each command
many times without a shell in between.
"""

import json
import os
import shlex
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass


@dataclass
class Run:
    """One finished process."""
    wall: float          # seconds, spawn to reap
    max_rss: int         # bytes
    status: int          # exit code, or -signal
    stderr_tail: str     # last lines of stderr, for failure messages


TIME = "/usr/bin/time"


def run(argv, stdin_path=None, stdout_path=None, timeout=900):
    """Runs argv once with stdin from a file (or /dev/null) and stdout into a file (or /dev/null).

    The wall time includes /usr/bin/time's own fork and exec (about a millisecond).
    """
    stdin = open(stdin_path or os.devnull, "rb")
    stdout = open(stdout_path or os.devnull, "wb")
    with tempfile.TemporaryFile() as stderr, tempfile.NamedTemporaryFile("r") as rss, stdin, stdout:
        start = time.perf_counter()
        process = subprocess.Popen([TIME, "-f", "%M", "-o", rss.name, *argv],
                                   stdin=stdin, stdout=stdout, stderr=stderr,
                                   start_new_session=True)
        # A session of its own, so a timeout kills the tool and not only /usr/bin/time.
        killer = threading.Timer(timeout, lambda: os.killpg(process.pid, signal.SIGKILL))
        killer.start()
        try:
            status = process.wait()
        finally:
            killer.cancel()
        wall = time.perf_counter() - start
        stderr.seek(0)
        tail = stderr.read()[-2000:].decode("utf-8", "replace").strip()
        # GNU time puts "Command exited with non-zero status N" (or "terminated by signal")
        # before the %M line; the last line is the number.
        report = rss.read().strip().splitlines()
    max_rss = int(report[-1]) * 1024 if report and report[-1].isdigit() else 0
    if report and report[0].startswith("Command terminated by signal"):
        status = -int(report[0].split()[-1])
    return Run(wall=wall, max_rss=max_rss, status=status, stderr_tail=tail)


def summary(values):
    """Median, min, max and count of a list of numbers (None when empty)."""
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values)}


def hyperfine(argv, runs, warmup, json_path, ignore_failure=False):
    """Fresh-process wall time of argv over `runs` runs (hyperfine -N); returns summary() seconds.

    Raises RuntimeError with hyperfine's message when the command fails (hyperfine stops on a
    non-zero exit, so a failing tool cannot look fast). ignore_failure is for tools known to
    exit non-zero after printing their answer (eu-addr2line -i on clang DWARF 5).
    """
    command = " ".join(shlex.quote(a) for a in argv)
    process = subprocess.run(
        ["hyperfine", "-N", "--style", "none", "--warmup", str(warmup), "--runs", str(runs),
         "--export-json", json_path] + (["--ignore-failure"] if ignore_failure else []) + [command],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if process.returncode != 0:
        raise RuntimeError(process.stderr.strip()[-800:] or f"hyperfine exited {process.returncode}")
    with open(json_path) as f:
        times = json.load(f)["results"][0]["times"]
    return summary(times)
