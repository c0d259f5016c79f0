// The reference Rust demangler for SymDemangleTests: reads one symbol per line and prints what
// rustc-demangle prints for it in its alternate form (`{:#}`, no hashes), or `<not demangled>`.
//
// rustc-demangle is the crate the Rust standard library itself uses for backtraces; it ships in
// every toolchain's sysroot as a dependency of std, so it is reachable without network access via
// `rustc_private` (which needs RUSTC_BOOTSTRAP=1 on a stable toolchain). The tests build this file
// at test time:
//
//     RUSTC_BOOTSTRAP=1 rustc -O rustc_demangle_filter.rs -o rustc_demangle_filter
#![feature(rustc_private)]
extern crate rustc_demangle;

use std::io::{BufRead, BufWriter, Write};

fn main() {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    for line in stdin.lock().lines() {
        let line = line.expect("input is UTF-8 text");
        match rustc_demangle::try_demangle(&line) {
            Ok(demangled) => writeln!(out, "{:#}", demangled),
            Err(_) => writeln!(out, "<not demangled>"),
        }
        .expect("stdout is writable");
    }
}
