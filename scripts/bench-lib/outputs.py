"""Reads each lookup tool's output back: what it resolved, how many frames, with line numbers.

A tool that fails quietly (prints `??` for everything, or no line numbers) must not pass for a
fast one, so every batch lookup's output is counted. Each parser returns a Counts; "with a line"
means the innermost frame has a line number other than 0.
"""

import re
from dataclasses import dataclass, asdict


@dataclass
class Counts:
    printed: int = 0     # addresses found in the output
    resolved: int = 0    # of which the innermost frame has a function name
    frames: int = 0      # frames printed for the resolved ones (inline chains)
    with_line: int = 0   # of which the innermost frame has a line number

    def as_dict(self):
        return asdict(self)


def _line_number(location, pattern):
    m = re.search(pattern, location)
    return int(m.group(1)) if m else 0


def _blocks(text):
    """Blank-line separated blocks of non-empty lines."""
    block = []
    for line in text.splitlines():
        if line.strip():
            block.append(line)
        elif block:
            yield block
            block = []
    if block:
        yield block


def crashsym_text(text):
    """`0x…` then one indented line per frame: `function  file:line[:column]  (inlined)`.

    An unresolved address prints `    ??`; fields are separated by two spaces.
    """
    counts = Counts()
    first = False
    for line in text.splitlines():
        if line.startswith("0x"):
            counts.printed += 1
            first = True
        elif line.startswith(" ") and line.strip():
            fields = line.strip().split("  ")
            if fields[0] == "??":
                first = False
                continue
            if first:
                counts.resolved += 1
                if len(fields) > 1 and _line_number(fields[1], r":(\d+)(?::\d+)?$") > 0:
                    counts.with_line += 1
            counts.frames += 1
            first = False
    return counts


def llvm_symbolizer(text):
    """Per address a blank-line terminated block of (function, file:line:column) line pairs."""
    counts = Counts()
    for block in _blocks(text):
        counts.printed += 1
        names = block[0::2]
        if names and names[0] != "??":
            counts.resolved += 1
            counts.frames += len(names)
            if len(block) > 1 and _line_number(block[1], r":(\d+):\d+$") > 0:
                counts.with_line += 1
    return counts


def addr2line(text):
    """With -a: the address line, then (function, file:line) pairs; `??` when unresolved.

    binutils writes `file:line (discriminator N)`, elfutils `file:line:column`, both `??:0`.
    """
    counts = Counts()
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("0x"):
            i += 1
            continue
        counts.printed += 1
        i += 1
        pairs = []
        while i < len(lines) and not lines[i].startswith("0x"):
            pairs.append((lines[i], lines[i + 1] if i + 1 < len(lines) else ""))
            i += 2
        if pairs and pairs[0][0] != "??":
            counts.resolved += 1
            counts.frames += len(pairs)
            if _line_number(pairs[0][1], r":(\d+)(?::\d+)?(?: \(discriminator \d+\))?$") > 0:
                counts.with_line += 1
    return counts


def gsymutil(text):
    """Blank-line terminated blocks of `function + offset @ file:line [inlined]` lines.

    The first line starts with `0x…: `, and reads `0x…: error: …` when unresolved.
    """
    counts = Counts()
    for block in _blocks(text):
        counts.printed += 1
        if ": error:" in block[0]:
            continue
        counts.resolved += 1
        counts.frames += len(block)
        if _line_number(block[0], r" @ .*:(\d+)(?: \[inlined\])?$") > 0:
            counts.with_line += 1
    return counts


PARSERS = {
    "crashsym": crashsym_text,
    "llvm-symbolizer": llvm_symbolizer,
    "addr2line": addr2line,
    "eu-addr2line": addr2line,
    "llvm-gsymutil": gsymutil,
}
