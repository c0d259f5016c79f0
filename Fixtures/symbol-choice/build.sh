#!/bin/sh
# Builds the symbol-choice and debug-directory fixtures in this directory (issue 21 items 1-3).
# Tools: i686-linux-gnu-gcc 12 (apt gcc-i686-linux-gnu), the toolchain's clang (/opt/swift/usr/bin),
# binutils objcopy/strip. Sources are compiled from this directory's relative paths with the
# directory mapped to /fixtures, so a rebuild with the same tools gives the same bytes.
#
#   aliases-i386          aliases.c, i386 gcc -g -O1: gcc2_compiled. (NOTYPE LOCAL), foo_alias
#                         (GLOBAL), foo_weak (WEAK), foo_local (LOCAL) all at foo's first byte; and
#                         baz (FUNC LOCAL, the DWARF subprogram's name), baz_global (GLOBAL), baz_weak
#                         (WEAK) and baz_label (NOTYPE GLOBAL) at baz's first byte
#   aliases-i386-nodwarf  the same with its DWARF removed (strip --strip-debug): the symbol table
#                         alone names the code
#   line-tables           line-tables.c, clang -gline-tables-only (DWARF 5): line rows, no functions
#   debugtree/            x/bindir/bin/app without its DWARF (symbols kept), with a .gnu_debuglink, and its debug file only under the
#                         trailing part of its directory (usr/lib/debug-style tree "dbg/bin/")
set -eu
here=$(cd "$(dirname "$0")" && pwd)
toolchain=${SWIFT_TOOLCHAIN:-/opt/swift/usr/bin}
cd "$here"
map="-fdebug-prefix-map=$here=/fixtures"

i686-linux-gnu-gcc -g -O1 -fno-inline -fno-toplevel-reorder $map -Wl,--build-id=sha1 aliases.c -o aliases-i386
i686-linux-gnu-strip --strip-debug aliases-i386 -o aliases-i386-nodwarf

"$toolchain/clang" -gline-tables-only -gdwarf-5 -O0 $map -fuse-ld=lld -Wl,--build-id=sha1 \
    line-tables.c -o line-tables

rm -rf debugtree
mkdir -p debugtree/x/bindir/bin debugtree/dbg/bin
"$toolchain/clang" -g -O0 $map -fuse-ld=lld -Wl,--build-id=sha1 line-tables.c -o debugtree/app.full
objcopy --only-keep-debug debugtree/app.full debugtree/dbg/bin/app.debug
objcopy --strip-debug --add-gnu-debuglink=debugtree/dbg/bin/app.debug \
    debugtree/app.full debugtree/x/bindir/bin/app
# A decoy with the right name but another build: found first under a deeper directory it must be refused.
mkdir -p debugtree/dbg/bindir/bin
"$toolchain/clang" -g -O0 -DDECOY $map -fuse-ld=lld -Wl,--build-id=sha1 line-tables.c -o debugtree/decoy.full
objcopy --only-keep-debug debugtree/decoy.full debugtree/dbg/bindir/bin/app.debug
rm debugtree/app.full debugtree/decoy.full
