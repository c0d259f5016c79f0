"""Sentry's symbolic (PyPI `symbolic`) as a benchmark peer: SymCache build and lookup.

  symbolic_bench.py build FILE OUT.symcache
      Archive.open(FILE).get_object(arch=...).make_symcache(), dumped into OUT.symcache.
  symbolic_bench.py lookup CACHE ADDRESS-FILE [--load-address N]
      Opens CACHE (mmap) and looks up every address of ADDRESS-FILE (hex, one a line) in this
      one process.
  symbolic_bench.py lookup CACHE --address HEX [--load-address N]
      One address; prints its frames like the other tools do.

build and batch lookup print one JSON line: the seconds spent inside Python on the work itself
(the interpreter's start and `import symbolic` excluded), and for lookups what resolved (the
counting is inside the timed loop: one `if` per address).
SymCache addresses are relative to the object's load address (the first PT_LOAD's p_vaddr for
ELF), so file virtual addresses are shifted by --load-address before the timed loop.
"""

import argparse
import json
import sys
import time

import symbolic


def build(path, out_path, arch):
    start = time.perf_counter()
    archive = symbolic.Archive.open(path)
    obj = archive.get_object(arch=arch)
    cache = obj.make_symcache()
    with open(out_path, "wb") as out:
        cache.dump_into(out)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "debug_id": obj.debug_id, "features": sorted(obj.features)}))


def lookup_batch(cache_path, address_path, load_address):
    with open(address_path) as f:
        addresses = [int(line, 16) - load_address for line in f if line.strip()]
    start = time.perf_counter()
    cache = symbolic.SymCache.open(cache_path)
    resolved = 0
    frames = 0
    with_line = 0
    for address in addresses:
        locations = cache.lookup(address)
        if locations:
            resolved += 1
            frames += len(locations)
            if locations[0].line > 0:
                with_line += 1
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "addresses": len(addresses), "resolved": resolved,
                      "frames": frames, "with_line": with_line}))


def lookup_one(cache_path, address, load_address):
    cache = symbolic.SymCache.open(cache_path)
    locations = cache.lookup(address - load_address)
    if not locations:
        print("??")
    for location in locations:
        print(f"{location.symbol} {location.full_path}:{location.line}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("file")
    b.add_argument("out")
    b.add_argument("--arch", default="x86_64")
    lk = sub.add_parser("lookup")
    lk.add_argument("cache")
    lk.add_argument("address_file", nargs="?")
    lk.add_argument("--address")
    lk.add_argument("--load-address", type=lambda s: int(s, 0), default=0)
    args = parser.parse_args()
    if args.command == "build":
        build(args.file, args.out, args.arch)
    elif args.address is not None:
        lookup_one(args.cache, int(args.address, 16), args.load_address)
    elif args.address_file:
        lookup_batch(args.cache, args.address_file, args.load_address)
    else:
        parser.error("lookup needs an address file or --address")


if __name__ == "__main__":
    sys.exit(main())
