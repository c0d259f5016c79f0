"""Runs crashsym and its peers on the same corpora in one run; see scripts/bench for the entry.

For each corpus: sample addresses once (seeded), then three phases, each repeated in rounds
with the tools interleaved (the order rotates every round) so that the machine's noise falls on
every tool alike:
  convert  crashsym dump, symbolic SymCache build, llvm-gsymutil --convert
  lookup   every address in one process per tool (slow peers get a subset)
  latency  one address in a fresh process (hyperfine -N)
Results go to WORK/results.json; report.py turns them into Markdown.
"""

import argparse
import datetime
import glob
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

import elfinfo
import measure
import outputs
import report

HERE = os.path.dirname(os.path.abspath(__file__))
SYMBOLIC_BENCH = os.path.join(HERE, "symbolic_bench.py")

# Display and run order.
CONVERTERS = ["crashsym", "symbolic", "llvm-gsymutil"]
LOOKUPS = ["crashsym", "symbolic", "llvm-gsymutil", "llvm-symbolizer", "addr2line", "eu-addr2line"]
SLOW = {"addr2line", "eu-addr2line"}  # looked up on the address subset


def log(message):
    print(f"bench: {message}", file=sys.stderr, flush=True)


def first_line(argv):
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        text = (out.stdout or out.stderr).strip()
        for line in text.splitlines():
            if "version" in line.lower() or line.strip():
                return line.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return "unknown"


def pairs(values):
    out = {}
    for v in values or []:
        name, _, rest = v.partition("=")
        out[name] = rest
    return out


class Bench:
    def __init__(self, args):
        self.args = args
        self.work = os.path.abspath(args.work)
        os.makedirs(self.work, exist_ok=True)
        self.available = {}   # tool -> True, or the reason it is skipped
        self.crashsym = args.crashsym
        self.python = args.python
        self.symbolizer = args.llvm_symbolizer
        self.gsymutil = args.gsymutil
        self.available["crashsym"] = True if args.crashsym else (args.crashsym_missing or "not given")
        self.available["symbolic"] = True if args.python else (args.symbolic_missing or "not given")
        for tool, path in [("llvm-gsymutil", self.gsymutil), ("llvm-symbolizer", self.symbolizer),
                           ("addr2line", "addr2line"), ("eu-addr2line", "eu-addr2line")]:
            self.available[tool] = True if path and shutil.which(path) else f"{path or tool} not found"

    # -- metadata --------------------------------------------------------------------------

    def meta(self):
        a = self.args
        versions = {
            "llvm-symbolizer": first_line([self.symbolizer, "--version"]) if self.symbolizer else None,
            "llvm-gsymutil": first_line([self.gsymutil, "--version"]) if self.gsymutil else None,
            "addr2line": first_line(["addr2line", "--version"]),
            "eu-addr2line": first_line(["eu-addr2line", "--version"]),
            "hyperfine": first_line(["hyperfine", "--version"]),
        }
        # LLVM tools print a banner first; keep the line with the version number.
        for tool in ("llvm-symbolizer", "llvm-gsymutil"):
            path = self.symbolizer if tool == "llvm-symbolizer" else self.gsymutil
            if path:
                out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
                versions[tool] = next((l.strip() for l in out.splitlines() if "version" in l), versions[tool])
        if self.symbolizer:
            versions["llvm-symbolizer"] += f" ({shutil.which(self.symbolizer) or self.symbolizer})"
        if self.crashsym:
            versions["crashsym"] = f"{first_line([self.crashsym, '--version'])} ({self.crashsym})"
        if self.python:
            versions["symbolic"] = subprocess.run(
                [self.python, "-c", "import importlib.metadata as m, sys; "
                 "print(m.version('symbolic'), 'on Python', sys.version.split()[0])"],
                capture_output=True, text=True).stdout.strip() or "unknown"
        cpu = "unknown"
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        mem = 0
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = int(line.split()[1]) * 1024
        debian = open("/etc/debian_version").read().strip() if os.path.exists("/etc/debian_version") else "?"
        return {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "mode": a.mode,
            "machine": {"cpu": cpu, "cores": os.cpu_count(), "memory": mem,
                        "kernel": platform.release(), "debian": debian,
                        "load_at_start": os.getloadavg()},
            "versions": versions,
            "settings": {"runs": a.runs, "latency_runs": a.latency_runs, "addresses": a.addresses,
                         "subset": a.subset, "seed": a.seed, "decoder": a.decoder,
                         "warmup": a.warmup},
            "available": {k: (True if v is True else v) for k, v in self.available.items()},
        }

    # -- phases ----------------------------------------------------------------------------

    def rounds(self, corpus, phase, commands):
        """Runs commands (tool -> spec) `runs` times each, interleaved; returns tool -> result.

        spec keys: argv; stdin and stdout (file paths); before (called before each run); inner
        (called after each run: seconds the tool measured itself); after (called once at the
        end: more facts, raising when the output is wrong); lenient (a non-zero exit is noted,
        not a failure: the output check in `after` decides).
        """
        results = {tool: {"walls": [], "rsss": [], "inners": [], "statuses": set()}
                   for tool in commands}
        active = list(commands)
        for r in range(self.args.runs):
            k = r % len(active) if active else 0
            for tool in active[k:] + active[:k]:
                spec = commands[tool]
                if "error" in results[tool]:
                    continue
                if spec.get("before"):
                    spec["before"]()
                run = measure.run(spec["argv"], spec.get("stdin"), spec.get("stdout"),
                                  timeout=self.args.timeout)
                if run.status != 0 and not (spec.get("lenient") and run.status > 0):
                    results[tool]["error"] = f"exit {run.status}: {run.stderr_tail[-600:]}"
                    log(f"[{corpus}] {phase}: {tool} failed ({results[tool]['error'][:300]})")
                    continue
                if run.status != 0:
                    results[tool]["statuses"].add(run.status)
                results[tool]["walls"].append(run.wall)
                results[tool]["rsss"].append(run.max_rss)
                if spec.get("inner"):
                    results[tool]["inners"].append(spec["inner"]())
                log(f"[{corpus}] {phase} {r + 1}/{self.args.runs}: {tool} {run.wall:.3f} s, "
                    f"{run.max_rss / 1e6:.1f} MB" + (f", exit {run.status}" if run.status else ""))
        out = {}
        for tool, res in results.items():
            entry = {}
            if res["walls"] and "error" not in res:
                entry["wall"] = measure.summary(res["walls"])
                entry["rss"] = measure.summary(res["rsss"])
                if res["inners"]:
                    entry["inner"] = measure.summary(res["inners"])
                if res["statuses"]:
                    entry["exit_statuses"] = sorted(res["statuses"])
                if commands[tool].get("after"):
                    try:
                        entry.update(commands[tool]["after"]())
                    except Exception as e:  # a missing or short output is the tool's failure
                        entry = {"error": f"{type(e).__name__}: {e}"}
                        log(f"[{corpus}] {phase}: {tool} failed ({entry['error']})")
            else:
                entry["error"] = res.get("error", "no successful run")
            out[tool] = entry
        return out

    def demangle_floor(self, corpus, answers):
        """The Swift runtime demangler's own CPU time for the distinct Swift names in crashsym's
        `--no-demangle` answers (`demangle_floor.c`, median of the rounds): the part of a Swift
        lookup no table format can save while names are demangled by the runtime, as the issue
        asks. None when the answers hold few Swift names or no C compiler is found."""
        if not answers or not os.path.exists(answers):
            return None
        names = set()
        with open(answers, errors="replace") as f:
            for line in f:
                if line.startswith("    $s") or line.startswith("    $S"):
                    names.add(line.split()[0])
        if len(names) < 1000:
            return None
        toolchain = os.path.dirname(os.path.realpath(self.symbolizer or ""))
        compiler = shutil.which(os.path.join(toolchain, "clang")) or shutil.which("cc")
        libraries = os.path.join(toolchain, "..", "lib", "swift", "linux")
        if not compiler or not os.path.isdir(libraries):
            log(f"[{corpus}] demangle floor skipped: no C compiler or Swift runtime found")
            return None
        source = os.path.join(HERE, "demangle_floor.c")
        binary = os.path.join(self.args.cache, "demangle-floor")
        if not os.path.exists(binary) or os.path.getmtime(binary) < os.path.getmtime(source):
            subprocess.run([compiler, "-O2", source, "-o", binary, "-L" + libraries, "-lswiftCore",
                            "-Wl,-rpath," + libraries], check=True)
        names_file = os.path.join(self.work, corpus, "swift-names.txt")
        with open(names_file, "w") as f:
            f.writelines(n + "\n" for n in sorted(names))
        seconds = []
        for _ in range(self.args.runs):
            run = json.loads(subprocess.run([binary, names_file], check=True, capture_output=True, text=True).stdout)
            seconds.append(run["seconds"])
        log(f"[{corpus}] demangle floor: {len(names)} Swift names, {statistics.median(seconds) * 1000:.1f} ms CPU")
        return {"names": len(names), "demangled": run["demangled"], "cpu": measure.summary(seconds)}

    def corpus(self, name, path):
        a = self.args
        log(f"[{name}] {path}")
        info = elfinfo.info(path)
        here = os.path.join(self.work, name)
        shutil.rmtree(here, ignore_errors=True)
        os.makedirs(here)
        with open(path, "rb") as f:  # into the page cache before anything is timed
            while f.read(1 << 24):
                pass

        # Addresses: sampled once per (file, count, seed), cached, used by every tool.
        cache_dir = os.path.join(a.cache, "addresses")
        os.makedirs(cache_dir, exist_ok=True)
        key = f"{info.build_id or os.path.basename(path)}-{a.addresses}-{a.seed}.txt"
        cached = os.path.join(cache_dir, key)
        if not os.path.exists(cached):
            addresses, _ = elfinfo.sample_addresses(path, a.addresses, a.seed)
            with open(cached + ".tmp", "w") as f:
                f.writelines(f"0x{x:x}\n" for x in addresses)
            os.replace(cached + ".tmp", cached)
        with open(cached) as f:
            lines = [line for line in f if line.strip()]
        functions = len(elfinfo.ELFFile(path).functions())
        all_file = os.path.join(here, "addresses.txt")
        subset_file = os.path.join(here, "addresses-subset.txt")
        shutil.copyfile(cached, all_file)
        subset = min(a.subset, len(lines))
        with open(subset_file, "w") as f:
            f.writelines(lines[:subset])
        single = lines[0].strip()

        result = {"name": name, "path": path, "info": info.as_json(), "functions": functions,
                  "addresses": len(lines), "subset": subset, "single_address": single}
        ok = lambda tool: self.available.get(tool) is True  # noqa: E731

        # -- convert
        csym_dir = os.path.join(here, "csym")
        symcache = os.path.join(here, "out.symcache")
        gsym = os.path.join(here, "out.gsym")

        def fresh_dir():
            shutil.rmtree(csym_dir, ignore_errors=True)
            os.makedirs(csym_dir)

        def csym_file():
            found = sorted(glob.glob(os.path.join(csym_dir, "*.csym")))
            if len(found) != 1:
                raise RuntimeError(f"expected one .csym in {csym_dir}, found {len(found)}")
            return found[0]

        def remove(p):
            return lambda: os.path.exists(p) and os.remove(p)

        def json_seconds(p):
            return lambda: json.loads(open(p).read().strip().splitlines()[-1])["seconds"]

        convert = {}
        if ok("crashsym"):
            argv = [self.crashsym, "dump", path, "-o", csym_dir]
            if a.decoder:
                argv += ["--decoder", a.decoder]
            convert["crashsym"] = {"argv": argv, "before": fresh_dir,
                                   "after": lambda: {"size": os.path.getsize(csym_file())}}
        if ok("symbolic"):
            out = os.path.join(here, "symbolic-build.json")
            convert["symbolic"] = {"argv": [self.python, SYMBOLIC_BENCH, "build", path, symcache],
                                   "stdout": out, "before": remove(symcache),
                                   "inner": json_seconds(out),
                                   "after": lambda: {"size": os.path.getsize(symcache)}}
        if ok("llvm-gsymutil"):
            convert["llvm-gsymutil"] = {
                "argv": [self.gsymutil, "--convert", path, "--out-file", gsym],
                "before": remove(gsym), "after": lambda: {"size": os.path.getsize(gsym)}}
        result["convert"] = self.rounds(name, "convert", convert)
        have = lambda tool: tool in result["convert"] and "error" not in result["convert"][tool]  # noqa: E731
        # The process floor: the same `dump` of a small binary with no DWARF (/bin/true), whose
        # peak RSS is nearly all the process's own (its code, the runtime): what no reader of the
        # DWARF can save, beside the DWARF size the memory target scales with.
        floor_file = "/bin/true"
        if ok("crashsym") and os.path.exists(floor_file):
            floor_dir = os.path.join(here, "floor")

            def fresh_floor():
                shutil.rmtree(floor_dir, ignore_errors=True)
                os.makedirs(floor_dir)
            floor = self.rounds(name, "dump floor", {"crashsym": {
                "argv": [self.crashsym, "dump", floor_file, "-o", floor_dir], "before": fresh_floor}})
            if "error" not in floor["crashsym"]:
                result["dump_floor"] = {"file": floor_file, "rss": floor["crashsym"]["rss"]}

        # -- lookup, all addresses in one process
        gsym_input = os.path.join(here, "addresses-gsym.txt")
        with open(gsym_input, "w") as f:
            f.writelines(f"{line.strip()} {gsym}\n" for line in lines)
        lookup = {}

        def parsed(tool, out_path, count):
            def after():
                with open(out_path, errors="replace") as f:
                    counts = outputs.PARSERS[tool](f.read())
                if counts.printed != count:
                    raise RuntimeError(f"answered {counts.printed} of {count} addresses")
                return {"addresses": count, **counts.as_dict()}
            return after

        def add(tool, argv, stdin, count):
            out = os.path.join(here, f"lookup-{tool}.out")
            lookup[tool] = {"argv": argv, "stdin": stdin, "stdout": out,
                            "after": parsed(tool, out, count), "lenient": tool != "crashsym"}

        if ok("crashsym") and have("crashsym"):
            add("crashsym", [self.crashsym, "lookup", csym_file()], all_file, len(lines))
        elif ok("crashsym"):
            result["crashsym_lookup_skipped"] = "dump failed"
        if ok("symbolic") and have("symbolic"):
            out = os.path.join(here, "lookup-symbolic.json")

            def symbolic_after(out=out):
                data = json.loads(open(out).read().strip().splitlines()[-1])
                return {"addresses": data["addresses"], "printed": data["addresses"],
                        "resolved": data["resolved"], "frames": data["frames"],
                        "with_line": data["with_line"]}
            lookup["symbolic"] = {
                "argv": [self.python, SYMBOLIC_BENCH, "lookup", symcache, all_file,
                         "--load-address", str(info.load_address)],
                "stdout": out, "inner": json_seconds(out), "after": symbolic_after}
        if ok("llvm-gsymutil") and have("llvm-gsymutil"):
            add("llvm-gsymutil", [self.gsymutil, "--addresses-from-stdin"], gsym_input, len(lines))
        if ok("llvm-symbolizer"):
            add("llvm-symbolizer", [self.symbolizer, f"--obj={path}"], all_file, len(lines))
        for tool in ("addr2line", "eu-addr2line"):
            if ok(tool):
                add(tool, [tool, "-f", "-i", "-C", "-a", "-e", path], subset_file, subset)
        result["lookup"] = self.rounds(name, "lookup", lookup)

        # -- the same with names printed as stored: equal work for crashsym and llvm-symbolizer
        # (llvm-symbolizer demangles C++ but not Swift names, so on Swift code the default run
        # has crashsym demangle names llvm-symbolizer leaves alone)
        plain = {}
        if "crashsym" in lookup:
            plain["crashsym"] = dict(lookup["crashsym"], argv=lookup["crashsym"]["argv"] + ["--no-demangle"],
                                     stdout=os.path.join(here, "lookup-plain-crashsym.out"))
            plain["crashsym"]["after"] = parsed("crashsym", plain["crashsym"]["stdout"], len(lines))
        if ok("llvm-symbolizer"):
            plain["llvm-symbolizer"] = dict(lookup["llvm-symbolizer"],
                                            argv=lookup["llvm-symbolizer"]["argv"] + ["--no-demangle"],
                                            stdout=os.path.join(here, "lookup-plain-llvm-symbolizer.out"))
            plain["llvm-symbolizer"]["after"] = parsed("llvm-symbolizer", plain["llvm-symbolizer"]["stdout"], len(lines))
        if plain:
            result["lookup_no_demangle"] = self.rounds(name, "lookup --no-demangle", plain)
        floor = self.demangle_floor(name, plain.get("crashsym", {}).get("stdout"))
        if floor:
            result["demangle_floor"] = floor
        for phase in ("lookup", "lookup_no_demangle"):
            for tool, entry in result.get(phase, {}).items():
                if "wall" in entry:
                    entry["rate"] = entry["addresses"] / entry["wall"]["median"]
                    if "inner" in entry:
                        entry["inner_rate"] = entry["addresses"] / entry["inner"]["median"]

        # -- one address in a fresh process
        latency_commands = {}
        looked_up = {t for t, e in result["lookup"].items() if "error" not in e}
        if "crashsym" in looked_up:
            latency_commands["crashsym"] = [self.crashsym, "lookup", csym_file(), single]
        if "symbolic" in looked_up:
            latency_commands["symbolic"] = [self.python, SYMBOLIC_BENCH, "lookup", symcache,
                                            "--address", single, "--load-address",
                                            str(info.load_address)]
        if "llvm-gsymutil" in looked_up:
            latency_commands["llvm-gsymutil"] = [self.gsymutil, "--address", single, gsym]
        if "llvm-symbolizer" in looked_up:
            latency_commands["llvm-symbolizer"] = [self.symbolizer, f"--obj={path}", single]
        for tool in ("addr2line", "eu-addr2line"):
            if tool in looked_up:
                latency_commands[tool] = [tool, "-f", "-i", "-C", "-e", path, single]
        result["latency"] = {}
        for tool, argv in latency_commands.items():
            try:
                lenient = "exit_statuses" in result["lookup"].get(tool, {})
                s = measure.hyperfine(argv, a.latency_runs, a.warmup,
                                      os.path.join(here, f"latency-{tool}.json"), lenient)
                result["latency"][tool] = {"wall": s}
                log(f"[{name}] latency: {tool} {s['median'] * 1000:.1f} ms median of {s['n']}")
            except RuntimeError as e:
                result["latency"][tool] = {"error": str(e)}
                log(f"[{name}] latency: {tool} failed: {e}")
        return result


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpus", action="append", default=[], help="NAME=PATH, in report order")
    p.add_argument("--missing", action="append", default=[], help="NAME=REASON: corpus skipped")
    p.add_argument("--crashsym", help="crashsym binary")
    p.add_argument("--crashsym-missing", help="why crashsym is skipped")
    p.add_argument("--decoder", help="crashsym dump --decoder value")
    p.add_argument("--python", help="a Python that imports symbolic")
    p.add_argument("--symbolic-missing", help="why symbolic is skipped")
    p.add_argument("--llvm-symbolizer", default="llvm-symbolizer")
    p.add_argument("--gsymutil", default="llvm-gsymutil-14")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--latency-runs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--addresses", type=int, default=100_000)
    p.add_argument("--subset", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout", type=int, default=900, help="seconds for one process")
    p.add_argument("--mode", default="full")
    p.add_argument("--work", required=True)
    p.add_argument("--cache", required=True)
    p.add_argument("--docs", help="write the Markdown document here too")
    args = p.parse_args()
    if args.runs < 2 or args.latency_runs < 2:
        p.error("at least 2 runs: a single run is no measurement on this machine")

    started = time.time()
    bench = Bench(args)
    for tool, state in bench.available.items():
        if state is not True:
            log(f"{tool} rows skipped: {state}")
    results = {"meta": bench.meta(), "corpora": []}
    skipped = pairs(args.missing)
    for name, path in pairs(args.corpus).items():
        try:
            c = bench.corpus(name, path)
        except Exception as e:  # one broken corpus must not cost the others
            log(f"[{name}] failed: {type(e).__name__}: {e}")
            c = {"name": name, "path": path, "skipped": f"{type(e).__name__}: {e}"}
        results["corpora"].append(c)
        print(report.corpus_markdown(c, results["meta"]), flush=True)
    for name, reason in skipped.items():
        results["corpora"].append({"name": name, "skipped": reason})
        print(f"### {name}\n\nSkipped: {reason}\n", flush=True)
    results["meta"]["seconds"] = time.time() - started
    results["meta"]["load_at_end"] = os.getloadavg()
    with open(os.path.join(bench.work, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    document = report.document(results)
    with open(os.path.join(bench.work, "BENCHMARKS.md"), "w") as f:
        f.write(document)
    if args.docs:
        with open(args.docs, "w") as f:
            f.write(document)
        log(f"wrote {args.docs}")
    log(f"results in {bench.work} (results.json, BENCHMARKS.md); took {results['meta']['seconds']:.0f} s")


if __name__ == "__main__":
    main()
