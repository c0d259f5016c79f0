"""Turns bench.py's results.json into Markdown: a table per corpus, targets and ratios.

Usage as a tool:  python3 report.py WORK/results.json > BENCHMARKS.md
Every ratio is computed from medians of the same run, never across runs.
"""

import json
import os
import sys

CORPUS_ORDER = ["python3.11d", "libc", "large-cpp", "swift-format"]
TOOLS = ["crashsym", "symbolic", "llvm-gsymutil", "llvm-symbolizer", "addr2line", "eu-addr2line"]
HEADERS = {
    "crashsym": "crashsym",
    "symbolic": "symbolic SymCache",
    "llvm-gsymutil": "llvm-gsymutil-14",
    "llvm-symbolizer": "llvm-symbolizer",
    "addr2line": "addr2line -f -i -C",
    "eu-addr2line": "eu-addr2line -f -i -C",
}
DASH = "—"


def seconds(s):
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.3g} ms" if s < 0.1 else f"{s * 1e3:.0f} ms"
    return f"{s:.3g} s" if s < 100 else f"{s:.0f} s"


def megabytes(b):
    return f"{b / 1e6:.3g} MB" if b < 1e8 else f"{b / 1e6:.0f} MB"


def rate(r):
    return f"{r:,.0f}/s"


def spread(summary, fmt):
    """`median (min–max)`."""
    return f"{fmt(summary['median'])} ({fmt(summary['min'])}–{fmt(summary['max'])})"


def factor(x):
    return f"{x:.3g}×" if x < 100 else f"{x:,.0f}×"


def _cell(entry, available, fmt_entry):
    if available is not True:
        return "skipped"
    if entry is None:
        return DASH
    if "error" in entry:
        return "failed ¹"
    return fmt_entry(entry)


def corpus_markdown(c, meta):
    """The section of one corpus: facts, the table, targets, ratios."""
    name = c["name"]
    if c.get("skipped"):
        return f"### {name}\n\nSkipped: {c['skipped']}\n"
    info = c["info"]
    avail = meta["available"]
    runs = meta["settings"]["runs"]
    latency_runs = meta["settings"]["latency_runs"]
    conv, look, lat = c.get("convert", {}), c.get("lookup", {}), c.get("latency", {})
    dwarf = info["dwarf_uncompressed"]
    lines = [f"### {name}", ""]
    compressed = "" if info["dwarf_stored"] == dwarf else f", {megabytes(info['dwarf_stored'])} compressed in the file"
    lines.append(
        f"`{c['path']}`: {megabytes(info['file_size'])}, {info['elf_type']}, build-id "
        f"`{info['build_id']}`; DWARF {megabytes(dwarf)}{compressed}; {c['functions']:,} function "
        f"symbols; {c['addresses']:,} addresses sampled (seed {meta['settings']['seed']}), the first "
        f"{c['subset']:,} for addr2line and eu-addr2line; fresh-process address `{c['single_address']}`.")
    lines.append("")

    def row(label, phase, fmt_entry, only=None):
        cells = []
        for tool in TOOLS:
            if only is not None and tool not in only:
                cells.append(DASH)
                continue
            cells.append(_cell(phase.get(tool), avail.get(tool), fmt_entry))
        return f"| {label} | " + " | ".join(cells) + " |"

    lines.append("| | " + " | ".join(HEADERS[t] for t in TOOLS) + " |")
    lines.append("|---|" + "---|" * len(TOOLS))
    converters = {"crashsym", "symbolic", "llvm-gsymutil"}
    lines.append(row(f"convert: wall, median of {runs} (min–max)", conv,
                     lambda e: spread(e["wall"], seconds), converters))
    lines.append(row("convert: wall inside Python (build + write only)", conv,
                     lambda e: spread(e["inner"], seconds) if "inner" in e else DASH, {"symbolic"}))
    lines.append(row("convert: peak RSS, median", conv,
                     lambda e: megabytes(e["rss"]["median"]), converters))
    lines.append(row("convert: peak RSS / DWARF size", conv,
                     lambda e: factor(e["rss"]["median"] / dwarf) if dwarf else DASH, converters))
    lines.append(row("output size (.csym, SymCache, GSYM)", conv,
                     lambda e: megabytes(e["size"]), converters))
    lines.append(row("output size / DWARF size", conv,
                     lambda e: factor(e["size"] / dwarf) if dwarf else DASH, converters))
    lines.append(row("lookup: addresses in one process", look, lambda e: f"{e['addresses']:,}"))
    lines.append(row(f"lookup: wall, median of {runs} (min–max)", look,
                     lambda e: spread(e["wall"], seconds)))
    lines.append(row("lookup: addresses/s (whole process)", look, lambda e: rate(e["rate"])))
    lines.append(row("lookup: addresses/s inside Python (open + lookups)", look,
                     lambda e: rate(e["inner_rate"]) if "inner_rate" in e else DASH, {"symbolic"}))
    lines.append(row("lookup: peak RSS, median", look, lambda e: megabytes(e["rss"]["median"])))
    lines.append(row("lookup: resolved to a function", look,
                     lambda e: f"{100 * e['resolved'] / max(e['addresses'], 1):.1f} %"))
    lines.append(row("lookup: innermost frame has a line number", look,
                     lambda e: f"{100 * e['with_line'] / max(e['addresses'], 1):.1f} %"))
    lines.append(row("lookup: frames per resolved address (inlines)", look,
                     lambda e: f"{e['frames'] / e['resolved']:.2f}" if e["resolved"] else DASH))
    plain = c.get("lookup_no_demangle", {})
    if plain:
        equal = {"crashsym", "llvm-symbolizer"}
        lines.append(row(f"lookup, names not demangled (`--no-demangle`, equal work): wall, median of {runs} (min–max)",
                         plain, lambda e: spread(e["wall"], seconds), equal))
        lines.append(row("lookup, names not demangled: addresses/s (whole process)", plain,
                         lambda e: rate(e["rate"]), equal))
    lines.append(row(f"one address, fresh process: median of {latency_runs} (min–max)", lat,
                     lambda e: spread(e["wall"], seconds)))
    lines.append("")
    failures = []
    for phase_name, phase in (("convert", conv), ("lookup", look), ("lookup --no-demangle", plain),
                              ("one address", lat)):
        for tool in TOOLS:
            if tool in phase and "error" in phase[tool]:
                message = " ".join(phase[tool]["error"].split())[:400]
                failures.append(f"{HEADERS[tool]} {phase_name}: {message}")
    if failures:
        lines.append("¹ Failures: " + "; ".join(failures))
        lines.append("")
    for tool in TOOLS:
        statuses = look.get(tool, {}).get("exit_statuses")
        if statuses:
            lines.append(f"Note: {HEADERS[tool]} exited with status {', '.join(map(str, statuses))} "
                         "after printing an answer for every address, so its times count (its rows on line numbers "
                         "and frames show what it left out).")
            lines.append("")
    lines.extend(targets(c, meta))
    return "\n".join(lines) + "\n"


def _ok(phase, tool):
    e = phase.get(tool)
    return e is not None and "error" not in e


def targets(c, meta):
    """The issue's targets with the bar this run's peers set, crashsym's figure and the verdict."""
    avail = meta["available"]
    conv, look, lat = c.get("convert", {}), c.get("lookup", {}), c.get("latency", {})
    dwarf = c["info"]["dwarf_uncompressed"]
    if avail.get("crashsym") is not True:
        missing = f"not measured: {avail.get('crashsym')}"
    else:
        missing = "not measured: crashsym failed here (see ¹)"
    out = ["#### Targets (medians of this run)", ""]
    if c["addresses"] < 100_000:
        out += [f"The lookup targets are set at 100,000 addresses; with {c['addresses']:,} here, "
                "the verdicts below are only indicative.", ""]
    out += ["| target | bar set by this run | crashsym | ratio | met |", "|---|---|---|---|---|"]

    def line(target, bar, have, value, ratio, met):
        if not have:
            out.append(f"| {target} | {bar} | {missing} | {DASH} | {DASH} |")
        else:
            out.append(f"| {target} | {bar} | {value} | {ratio} | {'**met**' if met else '**not met**'} |")

    # lookup vs llvm-symbolizer
    if _ok(look, "llvm-symbolizer"):
        peer = look["llvm-symbolizer"]["rate"]
        have = _ok(look, "crashsym")
        mine = look["crashsym"]["rate"] if have else 0
        line(f"lookup ≥ 20× llvm-symbolizer's addresses/s ({c['addresses']:,} in one process)",
             f"≥ {rate(20 * peer)} (llvm-symbolizer {rate(peer)})", have, rate(mine),
             f"crashsym/llvm-symbolizer = {factor(mine / peer)}" if have else "", mine >= 20 * peer)
    else:
        out.append(f"| lookup ≥ 20× llvm-symbolizer | llvm-symbolizer not measured | {DASH} | {DASH} | {DASH} |")
    # the same with names as stored (equal work: llvm-symbolizer does not demangle Swift names)
    plain = c.get("lookup_no_demangle", {})
    if _ok(plain, "llvm-symbolizer"):
        peer = plain["llvm-symbolizer"]["rate"]
        have = _ok(plain, "crashsym")
        mine = plain["crashsym"]["rate"] if have else 0
        line("lookup ≥ 20× llvm-symbolizer's addresses/s, both `--no-demangle` (equal work)",
             f"≥ {rate(20 * peer)} (llvm-symbolizer {rate(peer)})", have, rate(mine),
             f"crashsym/llvm-symbolizer = {factor(mine / peer)}" if have else "", mine >= 20 * peer)
    # lookup vs symbolic
    if _ok(look, "symbolic"):
        inner = look["symbolic"].get("inner_rate", look["symbolic"]["rate"])
        whole = look["symbolic"]["rate"]
        have = _ok(look, "crashsym")
        mine = look["crashsym"]["rate"] if have else 0
        line("lookup faster than symbolic's SymCache lookup (its in-Python rate, the stricter one)",
             f"> {rate(inner)} (whole process {rate(whole)})", have, rate(mine),
             f"crashsym/symbolic = {factor(mine / inner)} (whole process {factor(mine / whole)})" if have else "",
             mine > inner)
    else:
        out.append(f"| lookup faster than symbolic | symbolic not measured | {DASH} | {DASH} | {DASH} |")
    # one address
    have = _ok(lat, "crashsym")
    mine = lat["crashsym"]["wall"]["median"] if have else 0
    line("one address in a fresh process ≤ 10 ms", "≤ 10 ms", have, seconds(mine) if have else "",
         DASH, mine <= 0.010)
    # dump time vs SymCache build
    if _ok(conv, "symbolic"):
        inner = conv["symbolic"].get("inner", conv["symbolic"]["wall"])["median"]
        whole = conv["symbolic"]["wall"]["median"]
        have = _ok(conv, "crashsym")
        mine = conv["crashsym"]["wall"]["median"] if have else 0
        line("dump wall time ≤ symbolic's SymCache build (its in-Python time, the stricter one)",
             f"≤ {seconds(inner)} (whole process {seconds(whole)})", have, seconds(mine) if have else "",
             f"crashsym/symbolic = {factor(mine / inner)}" if have else "", mine <= inner)
    else:
        out.append(f"| dump wall ≤ SymCache build | symbolic not measured | {DASH} | {DASH} | {DASH} |")
    # dump memory
    have = _ok(conv, "crashsym")
    mine = conv["crashsym"]["rss"]["median"] if have else 0
    line("dump peak RSS ≤ 1.5× the DWARF size (uncompressed)", f"≤ {megabytes(1.5 * dwarf)}", have,
         megabytes(mine) if have else "", f"RSS/DWARF = {factor(mine / dwarf)}" if have and dwarf else "",
         mine <= 1.5 * dwarf)
    dump_floor = c.get("dump_floor")
    if have and dwarf and dump_floor:
        base = dump_floor["rss"]["median"]
        out.append(f"| (for the record) dump peak RSS above the process floor: `dump` of {dump_floor['file']}, "
                   f"no DWARF, peaks at {megabytes(base)} | — | {megabytes(mine - base)} | "
                   f"(RSS − floor)/DWARF = {factor((mine - base) / dwarf)} | — |")
    # size
    if _ok(conv, "symbolic"):
        peer = conv["symbolic"]["size"]
        have = _ok(conv, "crashsym")
        mine = conv["crashsym"]["size"] if have else 0
        line(".csym size ≤ SymCache size", f"≤ {megabytes(peer)}", have, megabytes(mine) if have else "",
             f".csym/SymCache = {factor(mine / peer)}" if have else "", mine <= peer)
    else:
        out.append(f"| .csym ≤ SymCache | symbolic not measured | {DASH} | {DASH} | {DASH} |")
    out.append("")

    # What the Swift runtime's demangler alone costs, next to the whole budget the 20x bar leaves.
    floor = c.get("demangle_floor")
    if floor and _ok(look, "llvm-symbolizer"):
        budget = c["addresses"] / (20 * look["llvm-symbolizer"]["rate"])
        cpu = floor["cpu"]["median"]
        cores = meta.get("machine", {}).get("cores") or os.cpu_count() or 1
        out.append(f"Demangling floor: the Swift runtime's demangler alone (`swift_demangle`; "
                   f"`scripts/bench-lib/demangle_floor.c`) takes {seconds(cpu)} of CPU for the "
                   f"{floor['names']:,} distinct Swift names in these answers (median of {floor['cpu']['n']}). "
                   f"The 20× bar leaves {seconds(budget)} of wall time for the whole run, so on {cores} cores "
                   f"demangling at lookup would fill {100 * cpu / cores / budget:.0f}% of it "
                   f"(llvm-symbolizer leaves these names mangled). crashsym makes this call in `dump` and "
                   f"stores the results in the table (`.csym` v2), so its lookups only decompress them.")
        out.append("")

    # Every other ratio against crashsym, for the record.
    if _ok(look, "crashsym") or _ok(conv, "crashsym") or _ok(lat, "crashsym"):
        ratios = []
        for tool in TOOLS[1:]:
            parts = []
            if _ok(look, "crashsym") and _ok(look, tool):
                parts.append(f"lookup rate crashsym/{tool} = {factor(look['crashsym']['rate'] / look[tool]['rate'])}")
            if _ok(plain, "crashsym") and _ok(plain, tool):
                parts.append(f"lookup rate with --no-demangle crashsym/{tool} = "
                             f"{factor(plain['crashsym']['rate'] / plain[tool]['rate'])}")
            if _ok(lat, "crashsym") and _ok(lat, tool):
                parts.append(f"one-address time {tool}/crashsym = "
                             f"{factor(lat[tool]['wall']['median'] / lat['crashsym']['wall']['median'])}")
            if _ok(conv, "crashsym") and _ok(conv, tool):
                parts.append(f"convert time crashsym/{tool} = "
                             f"{factor(conv['crashsym']['wall']['median'] / conv[tool]['wall']['median'])}")
                parts.append(f"output size crashsym/{tool} = {factor(conv['crashsym']['size'] / conv[tool]['size'])}")
            if parts:
                ratios.append(f"- vs {HEADERS[tool]}: " + "; ".join(parts))
        if ratios:
            out.append("#### All ratios vs crashsym (this run)")
            out.append("")
            out.extend(ratios)
            out.append("")
    return out


METHOD = """\
## Method

- **One command, one run.** `scripts/bench` installs what is missing, builds crashsym
  (`swift build -c release --static-swift-stdlib`), then runs every tool on every corpus in the same invocation;
  every ratio is computed from medians of that invocation.
- **Rounds, interleaved.** Each phase runs every tool once per round, for {runs} rounds, and the
  order of the tools rotates every round, so the machine's noise (2 shared cores) falls on all
  tools alike. Tables quote the median and (min–max). Inputs are read into the page cache first.
- **Wall time and peak RSS** of each process come from the same run: wall from spawn to reap
  (about 1 ms of `/usr/bin/time` included), peak RSS from `/usr/bin/time -f %M` (the tool's
  `ru_maxrss`; for symbolic it includes the Python interpreter). MB = 10⁶ bytes.
- **Convert**: `crashsym dump FILE -o DIR`{decoder}; symbolic
  `Archive.open(FILE).get_object(arch="x86_64").make_symcache()` dumped into a file
  (`scripts/bench-lib/symbolic_bench.py`; timed as a whole process and, inside Python, the build
  and write alone); `llvm-gsymutil-14 --convert FILE --out-file OUT.gsym` (it uses both cores).
- **Addresses**: {addresses:,} per corpus, sampled with seed {seed} from the ELF symbol tables
  (`.symtab` and `.dynsym` function symbols with a size, in executable sections, one per start
  address): a function drawn uniformly, then an offset drawn uniformly inside it. Written once,
  read by every tool. addr2line and eu-addr2line (slow) get the first {subset:,}; their
  addresses/second are comparable all the same.
- **Lookup, all addresses in one process** (whole-process wall, table open included):
  `crashsym lookup TABLE.csym` (addresses on stdin); symbolic `SymCache.open(path)` then
  `lookup(addr)` for each address (addresses shifted by the ELF load address, as SymCache
  wants; timed as a whole process and inside Python for open + lookups); `llvm-gsymutil-14
  --addresses-from-stdin` (lines `ADDR FILE.gsym`); `llvm-symbolizer --obj=FILE` (default
  options: function names, inlining, demangling); `addr2line -f -i -C -a -e FILE` and
  `eu-addr2line -f -i -C -a -e FILE` (`-a` prints the address so the output can be counted).
  llvm-gsymutil-14 and symbolic's SymCache answer mangled names (Sentry demangles in a later
  step), so they do less work per address than the tools that demangle C++.
  `crashsym lookup` answers large inputs on up to 4 threads (`--jobs`; the machine's cores),
  so its wall time counts both cores; llvm-symbolizer uses one.
  Every tool's output goes to a file and is read back: "resolved" and "frames per resolved
  address" show that no tool is fast because it fails.
- **Lookup with names not demangled (equal work)**: the rows "lookup, names not demangled" run
  `crashsym lookup TABLE.csym --no-demangle` and `llvm-symbolizer --obj=FILE --no-demangle` on the
  same addresses, in rounds of their own: both print names as stored. The default rows are not
  equal work on Swift code: llvm-symbolizer demangles C++ names but leaves Swift names
  (`$s…`) mangled, while crashsym prints them demangled (by the Swift runtime's demangler at
  `dump`, read from the table at lookup), which makes its output on swift-format about 1.6 times
  as long. The equal-work target line compares these rows.
- **Demangling floor** (corpora whose answers hold 1,000 or more Swift names): the distinct
  Swift names of crashsym's `--no-demangle` answers are demangled once each by
  `scripts/bench-lib/demangle_floor.c`, which calls `swift_demangle` (the call crashsym's `dump`
  makes for every Swift name, storing the results in the table) in a loop and reports its CPU
  time, once per round. It shows how much of the 20× budget the runtime's demangler would take
  if lookups called it.
- **One address in a fresh process**: `hyperfine -N --warmup {warmup} --runs {latency_runs}` for
  each tool with the same single address (symbolic's figure includes starting Python and
  importing the module).
- **Targets** compare crashsym with the stricter of symbolic's two figures (inside Python), and
  memory with the uncompressed DWARF size (sum of the `.debug_*` sections).
- **Process floor** (a row for the record under the memory target): the median peak RSS of the
  same `crashsym dump` of `/bin/true` (no DWARF) in as many rounds. It is what the process holds
  whatever the input (its code pages, which the kernel maps a large folio or 64 KB at a time around
  each page touched, and the runtime), so the row beside it shows how the rest of the peak compares
  with the DWARF size. The release link (Package.swift, `scripts/link`) orders the functions that
  common jobs run so that they share pages, packs the relative relocations and links libstdc++
  statically: the floor fell from about 11.7 to about 8.4 MB.
"""


def document(results):
    meta = results["meta"]
    m = meta["machine"]
    s = meta["settings"]
    corpora = sorted(results["corpora"],
                     key=lambda c: CORPUS_ORDER.index(c["name"]) if c["name"] in CORPUS_ORDER else 99)
    out = ["# Benchmarks", "",
           f"Generated by `scripts/bench` ({meta['mode']} mode) on {meta['date']}; rerun it to "
           "refresh this page (do not edit by hand). The method is at the end.", "",
           "Run `scripts/bench` for the full run (every corpus, 5 rounds, 100,000 addresses; it "
           "writes this page), `scripts/bench --quick` for a short one, `--corpus NAME` for one "
           "corpus, `--crashsym PATH` to measure a given binary; `scripts/bench --help` lists the "
           "rest.", ""]
    out.append("## Machine")
    out.append("")
    out.append(f"{m['cpu']}, {m['cores']} cores, {m['memory'] / 2**30:.0f} GiB, Linux {m['kernel']}, "
               f"Debian {m['debian']}; load average {m['load_at_start'][0]:.2f} at the start"
               + (f", {meta['load_at_end'][0]:.2f} at the end" if "load_at_end" in meta else "")
               + f"; the whole run took {meta.get('seconds', 0) / 60:.1f} min. The machine is shared "
               "and noisy: compare the ratios, which come from one run, rather than absolute times "
               "across runs.")
    out.append("")
    out.append("## Tools")
    out.append("")
    for tool, version in meta["versions"].items():
        if version:
            out.append(f"- {tool}: {version}")
    for tool, state in meta["available"].items():
        if state is not True:
            out.append(f"- {tool}: **skipped** ({state})")
    out.append("")
    out.append(f"## Results ({s['runs']} rounds, {s['addresses']:,} addresses)")
    out.append("")
    for c in corpora:
        out.append(corpus_markdown(c, meta))
    out.append(METHOD.format(runs=s["runs"], addresses=s["addresses"], seed=s["seed"],
                             subset=s["subset"], warmup=s.get("warmup", 2), latency_runs=s["latency_runs"],
                             decoder=f" --decoder {s['decoder']}" if s.get("decoder") else ""))
    return "\n".join(out)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    with open(sys.argv[1]) as f:
        sys.stdout.write(document(json.load(f)))
