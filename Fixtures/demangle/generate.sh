#!/bin/sh
# Regenerates the symbol lists in this directory from the sample programs next to it.
# Each list is every distinct symbol name (defined and undefined) llvm-nm finds in the linked
# program, one per line, sorted; the tests demangle each name and compare with an independent tool.
#
#   rust-legacy.txt  sample.rs with -C symbol-mangling-version=legacy (our crate; std ships v0)
#   rust-v0.txt      sample.rs, consts.rs and dyn-const.rs with -C symbol-mangling-version=v0 (with std)
#   cxx.txt          sample.cpp with g++ -O2 (clone suffixes) and clang++ -O1
#   cxx-current.txt  current.cpp with the toolchain's clang++ -std=c++23 (bfloat16, _Float16, C++20/23),
#                    the names c++filt reads (those only LLVM 21 reads are in cxx-llvm21.tsv, made by
#                    scripts/build-demangle-vectors with LLVM's answers)
#   swift.txt        sample.swift with swiftc -Onone and -O (generic specialisations)
#   swift-sugar.txt  sugar.swift with swiftc -Onone (arrays, dictionaries, optionals in signatures)
#
# Tools: rustc 1.95 (legacy mangling and const-generic features need RUSTC_BOOTSTRAP=1),
# g++ 12, and clang++/swiftc/llvm-nm from /opt/swift/usr/bin.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
toolchain=${SWIFT_TOOLCHAIN:-/opt/swift/usr/bin}
nm="$toolchain/llvm-nm"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

names() { # names FILE... : every symbol name in the files
    "$nm" --no-sort "$@" | awk 'NF >= 2 { print $NF }'
}

RUSTC_BOOTSTRAP=1 rustc --edition 2021 -C opt-level=0 -Z unstable-options \
    -C symbol-mangling-version=legacy "$here/sample.rs" -o "$work/sample-legacy"
rustc --edition 2021 -C opt-level=0 -C symbol-mangling-version=v0 "$here/sample.rs" -o "$work/sample-v0"
RUSTC_BOOTSTRAP=1 rustc --edition 2021 -C opt-level=0 -C symbol-mangling-version=v0 \
    "$here/consts.rs" -o "$work/consts-v0"
RUSTC_BOOTSTRAP=1 rustc --edition 2021 -C opt-level=0 -C symbol-mangling-version=v0 \
    "$here/dyn-const.rs" -o "$work/dyn-const-v0"
names "$work/sample-legacy" | grep -E '^_ZN.*17h[0-9a-f]{16}E' | LC_ALL=C sort -u > "$here/rust-legacy.txt"
names "$work/sample-v0" "$work/consts-v0" "$work/dyn-const-v0" | grep '^_R' | LC_ALL=C sort -u > "$here/rust-v0.txt"

g++ -std=c++17 -O2 -c "$here/sample.cpp" -o "$work/sample-gcc.o"
g++ "$work/sample-gcc.o" -o "$work/sample-gcc"
"$toolchain/clang++" -std=c++17 -O1 -c "$here/sample.cpp" -o "$work/sample-clang.o"
names "$work/sample-gcc" "$work/sample-gcc.o" "$work/sample-clang.o" | grep -E '^_Z' |
    LC_ALL=C sort -u > "$here/cxx.txt"

"$toolchain/clang++" -std=c++23 -O1 -c "$here/current.cpp" -o "$work/current.o"
names "$work/current.o" | grep -E '^_Z' | LC_ALL=C sort -u > "$work/current.txt"
c++filt < "$work/current.txt" | paste "$work/current.txt" - | awk -F'\t' '$1 != $2 { print $1 }' > "$here/cxx-current.txt"

"$toolchain/swiftc" -Onone -parse-as-library -c "$here/sample.swift" -o "$work/sample-onone.o"
"$toolchain/swiftc" -O -parse-as-library -c "$here/sample.swift" -o "$work/sample-o.o"
names "$work/sample-onone.o" "$work/sample-o.o" | grep -E '^_?\$s' | LC_ALL=C sort -u > "$here/swift.txt"

"$toolchain/swiftc" -Onone -parse-as-library -module-name sugar -c "$here/sugar.swift" -o "$work/sugar.o"
names "$work/sugar.o" | grep -E '^_?\$s' | LC_ALL=C sort -u > "$here/swift-sugar.txt"

wc -l "$here"/*.txt
