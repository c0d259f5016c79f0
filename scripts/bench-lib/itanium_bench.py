#!/usr/bin/env python3
"""crashsym's own Itanium demangler against GNU libiberty and c++filt on demangle_bench.py's C++ input.

Builds the million C++ names demangle_bench.py times (same seed, same sampling), then measures
in-process CPU seconds of the demangling loop alone for crashsym's own demangler
(itanium_timer.swift with SymDemangle/ItaniumParser*.swift, swiftc -O) and for libiberty's
cplus_demangle_v3 (libiberty_timer.c, gcc -O2), and c++filt's user CPU seconds as a filter over
the same file. Prints each with the ratio to crashsym's own (their time / ours).
"""
import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import demangle_bench  # noqa: E402

SOURCES = ["ItaniumNode.swift", "ItaniumOperator.swift", "ItaniumParser.swift", "ItaniumParser+Types.swift",
           "ItaniumParser+Printing.swift"]


def cxx_names(count, seed):
    """demangle_bench.py's C++-only input: the same random draws in the same order."""
    rng = random.Random(seed)
    pools = {language: demangle_bench.names(language) for language in demangle_bench.LISTS}
    third = count // 3
    mixed = demangle_bench.sample(pools["c++"], third, rng) + demangle_bench.sample(pools["swift"], third, rng) \
        + demangle_bench.sample(pools["rust"], count - 2 * third, rng)
    rng.shuffle(mixed)
    return demangle_bench.sample(pools["c++"], count, rng)


def cpu_of_child(argv, stdin_path):
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    with open(stdin_path, "rb") as source, open(os.devnull, "wb") as sink:
        subprocess.run(argv, stdin=source, stdout=sink, check=True)
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--swiftc", default=os.path.join(os.environ.get("SWIFT_TOOLCHAIN", "/opt/swift/usr/bin"), "swiftc"))
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="crashsym-itanium-bench-")
    names = os.path.join(work, "cxx.txt")
    with open(names, "w") as handle:
        handle.write("\n".join(cxx_names(args.names, args.seed)) + "\n")
    shutil.copy(os.path.join(HERE, "itanium_timer.swift"), os.path.join(work, "main.swift"))
    ours = os.path.join(work, "itanium_timer")
    subprocess.run([args.swiftc, "-O", "-o", ours, os.path.join(work, "main.swift")]
                   + [os.path.join(ROOT, "Sources", "SymDemangle", name) for name in SOURCES], check=True)
    gnu = os.path.join(work, "libiberty_timer")
    subprocess.run(["gcc", "-O2", "-o", gnu, os.path.join(HERE, "libiberty_timer.c"), "-liberty"], check=True)

    def median(values):
        return sorted(values)[len(values) // 2]

    def timer(binary):
        runs = [json.loads(subprocess.run([binary, names], check=True, capture_output=True, text=True).stdout)
                for _ in range(args.runs)]
        return median([run["seconds"] for run in runs]), runs[0]["demangled"]

    ours_seconds, ours_count = timer(ours)
    gnu_seconds, gnu_count = timer(gnu)
    cxxfilt_seconds = median([cpu_of_child(["c++filt"], names) for _ in range(args.runs)])
    print(f"{args.names:,} C++ names (demangle_bench.py's C++ input), median of {args.runs} runs, CPU seconds")
    print(f"crashsym's own demangler (demangling loop)  {ours_seconds:6.3f}  {ours_count:,} demangled")
    print(f"libiberty cplus_demangle_v3 (loop)          {gnu_seconds:6.3f}  {gnu_count:,} demangled  "
          f"{gnu_seconds / ours_seconds:.2f}x (libiberty time / ours)")
    print(f"c++filt (whole filter, user time)           {cxxfilt_seconds:6.3f}  "
          f"{cxxfilt_seconds / ours_seconds:.2f}x (c++filt time / ours)")
    shutil.rmtree(work)


if __name__ == "__main__":
    sys.exit(main())
