"""ELF facts the benchmark needs, read with the standard library only.

Build-id, load address, DWARF size (as stored and uncompressed) and the function symbols that
addresses are sampled from. Only 64-bit little-endian ELF is read: every corpus is x86-64.
Usage as a tool:  python3 elfinfo.py FILE   (prints the facts as JSON)
"""

import json
import random
import struct
import sys
from dataclasses import dataclass, field

SHT_NOBITS = 8
SHT_SYMTAB = 2
SHT_DYNSYM = 11
SHT_NOTE = 7
SHF_EXECINSTR = 0x4
SHF_COMPRESSED = 0x800
PT_LOAD = 1
STT_FUNC = 2
STT_GNU_IFUNC = 10
NT_GNU_BUILD_ID = 3


@dataclass
class Section:
    name: str
    type: int
    flags: int
    offset: int
    size: int
    link: int
    entsize: int


@dataclass
class ELFInfo:
    path: str
    file_size: int
    build_id: str | None
    elf_type: int
    load_address: int
    dwarf_stored: int
    dwarf_uncompressed: int
    dwarf_sections: dict = field(default_factory=dict)

    def as_json(self):
        return {
            "path": self.path,
            "file_size": self.file_size,
            "build_id": self.build_id,
            "elf_type": {2: "EXEC", 3: "DYN"}.get(self.elf_type, str(self.elf_type)),
            "load_address": self.load_address,
            "dwarf_stored": self.dwarf_stored,
            "dwarf_uncompressed": self.dwarf_uncompressed,
        }


class ELFFile:
    """An ELF file read whole into memory (the corpora are at most a few hundred MB)."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            self.data = f.read()
        d = self.data
        if d[:4] != b"\x7fELF" or d[4] != 2 or d[5] != 1:
            raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
        (self.type, _machine, _version, _entry, self.phoff, self.shoff, _flags, _ehsize,
         self.phentsize, self.phnum, self.shentsize, self.shnum, self.shstrndx) = \
            struct.unpack_from("<HHIQQQIHHHHHH", d, 16)
        self.sections = self._read_sections()

    def _read_sections(self):
        raw = []
        for i in range(self.shnum):
            name, typ, flags, _addr, offset, size, link, _info, _align, entsize = \
                struct.unpack_from("<IIQQQQIIQQ", self.data, self.shoff + i * self.shentsize)
            raw.append((name, typ, flags, offset, size, link, entsize))
        strtab = raw[self.shstrndx]
        sections = []
        for name, typ, flags, offset, size, link, entsize in raw:
            sections.append(Section(self._cstring(strtab[3] + name), typ, flags, offset, size,
                                    link, entsize))
        return sections

    def _cstring(self, offset):
        end = self.data.index(b"\0", offset)
        return self.data[offset:end].decode("utf-8", "replace")

    def load_address(self):
        """The first PT_LOAD's p_vaddr: what symbolic subtracts from addresses (0 for PIE/DSOs)."""
        for i in range(self.phnum):
            p_type, _flags, _offset, vaddr = struct.unpack_from(
                "<IIQQ", self.data, self.phoff + i * self.phentsize)
            if p_type == PT_LOAD:
                return vaddr
        return 0

    def build_id(self):
        for s in self.sections:
            if s.type != SHT_NOTE:
                continue
            pos, end = s.offset, s.offset + s.size
            while pos + 12 <= end:
                namesz, descsz, ntype = struct.unpack_from("<III", self.data, pos)
                name_at = pos + 12
                desc_at = name_at + ((namesz + 3) & ~3)
                if ntype == NT_GNU_BUILD_ID and self.data[name_at:name_at + namesz] == b"GNU\0":
                    return self.data[desc_at:desc_at + descsz].hex()
                pos = desc_at + ((descsz + 3) & ~3)
        return None

    def dwarf_sizes(self):
        """Per .debug_* section: (bytes stored in the file, bytes once decompressed)."""
        sizes = {}
        for s in self.sections:
            if not (s.name.startswith(".debug_") or s.name.startswith(".zdebug_")):
                continue
            if s.type == SHT_NOBITS:
                continue
            stored = s.size
            full = stored
            if s.flags & SHF_COMPRESSED:
                # ELF gABI Elf64_Chdr: ch_type, ch_reserved, ch_size, ch_addralign.
                full = struct.unpack_from("<IIQ", self.data, s.offset)[2]
            elif s.name.startswith(".zdebug_") and self.data[s.offset:s.offset + 4] == b"ZLIB":
                full = struct.unpack_from(">Q", self.data, s.offset + 4)[0]
            sizes[s.name] = (stored, full)
        return sizes

    def functions(self):
        """Function symbols with a size, in executable sections, one per start address (largest)."""
        by_start = {}
        for s in self.sections:
            if s.type not in (SHT_SYMTAB, SHT_DYNSYM) or s.entsize == 0:
                continue
            for i in range(s.size // s.entsize):
                _name, info, _other, shndx, value, size = struct.unpack_from(
                    "<IBBHQQ", self.data, s.offset + i * s.entsize)
                if (info & 0xF) not in (STT_FUNC, STT_GNU_IFUNC) or size == 0:
                    continue
                if shndx == 0 or shndx >= len(self.sections):
                    continue
                if not self.sections[shndx].flags & SHF_EXECINSTR:
                    continue
                if by_start.get(value, 0) < size:
                    by_start[value] = size
        return sorted(by_start.items())


def info(path):
    import os
    elf = ELFFile(path)
    sizes = elf.dwarf_sizes()
    return ELFInfo(
        path=path,
        file_size=os.path.getsize(path),
        build_id=elf.build_id(),
        elf_type=elf.type,
        load_address=elf.load_address(),
        dwarf_stored=sum(s for s, _ in sizes.values()),
        dwarf_uncompressed=sum(f for _, f in sizes.values()),
        dwarf_sections={k: list(v) for k, v in sizes.items()},
    )


def sample_addresses(path, count, seed):
    """`count` addresses inside functions: a function drawn uniformly, then an offset in it.

    Seeded, so every tool and every rerun gets the same list. Returns (addresses, functions).
    """
    functions = ELFFile(path).functions()
    if not functions:
        raise ValueError(f"{path}: no function symbols with sizes to sample from")
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        start, size = functions[rng.randrange(len(functions))]
        out.append(start + rng.randrange(size))
    return out, len(functions)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    print(json.dumps(info(sys.argv[1]).as_json(), indent=2))
