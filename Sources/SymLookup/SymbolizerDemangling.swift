import SymDemangle
#if canImport(Glibc)
import Glibc
import Symbolication
#endif

/// The Itanium demangler (`Demangler.demangleItanium`, libiberty's) called directly, with its
/// output brought to LLVM's spelling where the two differ only in form (lambdas and unnamed types still read differently).
enum SymbolizerDemangling {
    /// `raw` demangled as LLVM's demangler prints it: a `.suffix` (`.cold`, `.llvm.123`) as
    /// ` (.suffix)`, nested template lists closed as `>>`, `operator<<T>` without a space.
    static func demangleLLVMStyle(_ raw: [UInt8]) -> [UInt8]? {
        var head = raw[...], suffix: ArraySlice<UInt8> = []
        if let dot = raw.firstIndex(of: UInt8(ascii: ".")), dot > 0 {
            head = raw[..<dot]
            suffix = raw[dot...]
        }
        guard let demangled = demangle(Array(head)) else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(demangled.utf8.count + suffix.count + 3)
        for byte in demangled.utf8 {
            if byte == UInt8(ascii: ">") || byte == UInt8(ascii: "<"), out.count >= 2,
               out[out.count - 1] == UInt8(ascii: " "), out[out.count - 2] == byte {
                out[out.count - 1] = byte
            } else {
                out.append(byte)
            }
        }
        if !suffix.isEmpty {
            out.append(contentsOf: " (".utf8)
            out.append(contentsOf: suffix)
            out.append(UInt8(ascii: ")"))
        }
        return out
    }

    /// A legacy Rust name (`_ZN` length-prefixed identifiers `E`, then an optional `.suffix`)
    /// as LLVM's Itanium demangler prints it: identifiers joined by `::`, escapes and hash kept.
    static func rustLegacyAsItanium(_ raw: [UInt8]) -> [UInt8]? {
        var index = raw.starts(with: "__ZN".utf8) ? 4 : 3
        guard raw.starts(with: "_ZN".utf8) || index == 4 else { return nil }
        var out: [UInt8] = []
        while index < raw.count, raw[index] != UInt8(ascii: "E") {
            var length = 0
            while index < raw.count, raw[index] >= UInt8(ascii: "0"), raw[index] <= UInt8(ascii: "9") {
                length = length * 10 + Int(raw[index] - UInt8(ascii: "0"))
                guard length <= raw.count else { return nil }
                index += 1
            }
            guard length > 0, index + length <= raw.count else { return nil }
            if !out.isEmpty { out.append(contentsOf: "::".utf8) }
            out.append(contentsOf: raw[index..<(index + length)])
            index += length
        }
        guard index < raw.count else { return nil }
        index += 1
        if index < raw.count {
            guard raw[index] == UInt8(ascii: ".") else { return nil }
            out.append(contentsOf: " (".utf8)
            out.append(contentsOf: raw[index...])
            out.append(UInt8(ascii: ")"))
        }
        return out
    }

    static func demangle(_ raw: [UInt8]) -> String? {
        // The runtime's `__cxa_demangle` that this used before refused Mach-O's `__Z`: kept so.
        guard !raw.starts(with: "__Z".utf8) else { return nil }
        return Demangler.demangleItanium(raw)
    }
}
