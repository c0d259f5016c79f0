/// The tails that tools append after a Rust symbol proper, handled as `rustc-demangle` does.
enum RustSymbolSuffix {
    /// `bytes` without a ThinLTO `.llvm.<hex>` suffix: LLVM renames promoted local symbols that
    /// way after mangling, so the suffix is stripped before anything else is looked at.
    static func droppingLLVMSuffix(_ bytes: [UInt8]) -> ArraySlice<UInt8> {
        let marker: [UInt8] = Array(".llvm.".utf8)
        guard bytes.count >= marker.count else { return bytes[...] }
        // Compare only where a `.` is: C++ names are long and mostly without one.
        for start in 0...(bytes.count - marker.count) where bytes[start] == UInt8(ascii: ".")
            && bytes[start..<(start + marker.count)].elementsEqual(marker) {
            // Only the first occurrence counts, and only when all that follows is LLVM's hash.
            let tail = bytes[(start + marker.count)...]
            let isHash = tail.allSatisfy { byte in
                (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "@")
            }
            return isHash ? bytes[..<start] : bytes[...]
        }
        return bytes[...]
    }

    /// Whether `suffix` may follow a Rust symbol: empty, or `.` and printable ASCII only, as in the
    /// period-separated words LLVM and GCC append (`.cold`, `.0`, `.exit.i.i`).
    static func isAcceptable(_ suffix: ArraySlice<UInt8>) -> Bool {
        guard let first = suffix.first else { return true }
        return first == UInt8(ascii: ".") && suffix.allSatisfy { (0x21...0x7E).contains($0) }
    }
}
