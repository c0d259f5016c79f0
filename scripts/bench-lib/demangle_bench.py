#!/usr/bin/env python3
"""`crashsym demangle` against c++filt and swift-demangle on the same input (issue 21).

Builds a million names (seeded sample of the compiler-generated lists in Fixtures/demangle: C++ from
g++ and clang++, Swift from swiftc, Rust legacy and v0 from rustc), writes them one per line, and
times each filter reading the file on standard input (wall clock, median of --runs, output to
/dev/null): crashsym on everything, and each peer on its own language, where crashsym is timed on
that language's names too, so every ratio compares equal work. Prints a small table.
"""
import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "Fixtures", "demangle")
LISTS = {
    "c++": ["cxx.txt", "cxx-current.txt"],
    "swift": ["swift.txt", "swift-sugar.txt"],
    "rust": ["rust-legacy.txt", "rust-v0.txt"],
}


def names(language):
    result = []
    for name in LISTS[language]:
        with open(os.path.join(FIXTURES, name)) as handle:
            result += [line.strip() for line in handle if line.strip()]
    return result


def sample(pool, count, rng):
    return [pool[rng.randrange(len(pool))] for _ in range(count)]


def timed(argv, path, runs):
    seconds = []
    for _ in range(runs):
        with open(path, "rb") as source, open(os.devnull, "wb") as sink:
            start = time.perf_counter()
            subprocess.run(argv, stdin=source, stdout=sink, check=True)
            seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), min(seconds), max(seconds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crashsym", required=True)
    parser.add_argument("--names", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cxxfilt", default="c++filt")
    parser.add_argument("--swift-demangle", default="/opt/swift/usr/bin/swift-demangle")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    pools = {language: names(language) for language in LISTS}
    work = tempfile.mkdtemp(prefix="crashsym-demangle-bench-")
    files = {}
    # The mix: C++, Swift and Rust in equal shares, shuffled.
    third = args.names // 3
    mixed = sample(pools["c++"], third, rng) + sample(pools["swift"], third, rng) \
        + sample(pools["rust"], args.names - 2 * third, rng)
    rng.shuffle(mixed)
    for label, lines in [("mixed", mixed), ("c++", sample(pools["c++"], args.names, rng)),
                         ("swift", sample(pools["swift"], args.names, rng))]:
        files[label] = os.path.join(work, label + ".txt")
        with open(files[label], "w") as handle:
            handle.write("\n".join(lines) + "\n")
    crashsym = [args.crashsym, "demangle"]
    rows = []
    mixed_time = timed(crashsym, files["mixed"], args.runs)
    rows.append(("mixed (1/3 each C++, Swift, Rust)", "crashsym demangle", mixed_time, None))
    ours = timed(crashsym, files["c++"], args.runs)
    theirs = timed([args.cxxfilt], files["c++"], args.runs)
    rows.append(("C++ only", "crashsym demangle", ours, None))
    rows.append(("C++ only", "c++filt", theirs, theirs[0] / ours[0]))
    ours = timed(crashsym, files["swift"], args.runs)
    theirs = timed([args.swift_demangle], files["swift"], args.runs)
    rows.append(("Swift only", "crashsym demangle", ours, None))
    rows.append(("Swift only", "swift-demangle", theirs, theirs[0] / ours[0]))
    print(f"{args.names:,} names per input, median of {args.runs} runs (min-max), wall seconds")
    for corpus, tool, (median, low, high), ratio in rows:
        speed = f"  {ratio:.2f}x (peer time / crashsym time)" if ratio else ""
        print(f"{corpus:36} {tool:18} {median:7.3f} ({low:.3f}-{high:.3f})  {args.names / median / 1e6:5.2f} M names/s{speed}")
    for path in files.values():
        os.unlink(path)
    os.rmdir(work)


if __name__ == "__main__":
    sys.exit(main())
