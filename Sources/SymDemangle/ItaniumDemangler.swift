import CDemangle

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// C++ names through GNU libiberty's demangler (`cplus_demangle_v3`, linked statically from
/// libiberty-dev): the same code as the installed `c++filt` (binutils 2.40), so output matches it
/// byte for byte, and newer than the C++ runtime's `__cxa_demangle` (GCC 12), which reads `DF16b`
/// as `bool _Accum` and leaves `_FloatN` names mangled. What libiberty refuses (C++20/23 names:
/// `Tk`, `Q`, `NH`…) goes to crashsym's own demangler (`ItaniumParser`), which prints as LLVM 21
/// does. See "How each language is demangled" in README.md for why this order.
enum ItaniumDemangler {
    /// Demangles an Itanium name (`_Z…`, or `__Z…` as Mach-O spells it); `nil` when invalid.
    static func demangle(_ bytes: [UInt8], parameters: Bool = true) -> String? {
        if let answer = demangleWithLibiberty(bytes, parameters: parameters) { return answer }
        // Names libiberty refuses: LLVM 21's reading of them, or nil where LLVM refuses too.
        guard !bytes.contains(0) else { return nil }
        let name = bytes.starts(with: "__Z".utf8) ? Array(bytes.dropFirst()) : bytes
        let answer = name.withUnsafeBufferPointer { ItaniumParser.demangleWithSuffix($0, parameters: parameters) }
        guard let answer else { return nil }
        // A name libiberty reads but for a clone suffix it refuses (`.llvm.1A.cold`, a bare
        // `.`) stays as it was before: not demangled, rather than in LLVM's ` (.suffix)` spelling
        // beside libiberty's `[clone .suffix]` for every other clone.
        if let suffix = answer.cloneSuffixStart,
           demangleWithLibiberty(Array(name[..<suffix]), parameters: parameters) != nil {
            return nil
        }
        return String(decoding: answer.output, as: UTF8.self)
    }

    /// `name` through crashsym's own demangler, spelled as LLVM 21's `itaniumDemangle` spells it;
    /// nil where LLVM returns null (or a hostile name exhausts a budget).
    static func demangleAsLLVM(_ name: [UInt8], parameters: Bool = true) -> String? {
        guard let output = ItaniumParser.demangle(name, parameters: parameters) else { return nil }
        return String(decoding: output, as: UTF8.self)
    }

    /// libiberty's answer, with the `.llvm.<HEX>` rule; nil when it refuses the name.
    static func demangleWithLibiberty(_ bytes: [UInt8], parameters: Bool = true) -> String? {
        // The demangler reads a C string: an embedded NUL would silently truncate the name.
        guard !bytes.contains(0) else { return nil }
        // Mach-O adds one underscore to every C-level name; the ABI name starts at `_Z`.
        let name = bytes.starts(with: "__Z".utf8) ? bytes.dropFirst() : bytes[...]
        if let result = demangleWhole(name, parameters: parameters) { return result }
        // libiberty takes a clone suffix (`.llvm.123`) only when its words are lower-case letters
        // or digits; ThinLTO and rustc write the `.llvm.` hash in upper-case hex, which makes it
        // refuse the whole name. Spell such a suffix as it spells the decimal one.
        guard let suffix = llvmSuffixStart(name), let head = demangleWhole(name[..<suffix], parameters: parameters) else { return nil }
        return head + " [clone " + String(decoding: name[suffix...], as: UTF8.self) + "]"
    }

    /// Demangles the ASCII Itanium name `name` (starting `_Z`), calls `body` with the result
    /// (valid only while it runs) and returns true; false, without calling `body`, when libiberty
    /// refuses the name whole (the caller then takes `demangle(_:)`'s path, which also tries the
    /// `.llvm.` rule). No array or string per name: `crashsym demangle`'s C++ path.
    static func withDemangledWhole(_ name: UnsafeRawBufferPointer, parameters: Bool,
                                   _ body: (UnsafeRawBufferPointer) -> Void) -> Bool {
        guard let source = name.baseAddress, !name.isEmpty, memchr(source, 0, name.count) == nil else { return false }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: name.count + 1) { scratch -> Bool in
            let mangled = scratch.baseAddress!
            UnsafeMutableRawPointer(mangled).copyMemory(from: source, byteCount: name.count)
            mangled[name.count] = 0
            guard let pointer = cplus_demangle_v3(mangled, (parameters ? CRASHSYM_DMGL_PARAMS : 0) | CRASHSYM_DMGL_TYPES) else {
                return false
            }
            defer { free(pointer) }
            body(UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)))
            return true
        }
    }

    /// `cplus_demangle_v3` with `__cxa_demangle`'s options (parameters, and type encodings too);
    /// without parameter lists when `parameters` is false, as `c++filt -p`.
    private static func demangleWhole(_ name: ArraySlice<UInt8>, parameters: Bool) -> String? {
        var cString = Array(name)
        cString.append(0)
        return cString.withUnsafeBufferPointer { buffer -> String? in
            // The result is malloc'ed, ours to free; NULL means not a valid name.
            let pointer = buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                cplus_demangle_v3($0, (parameters ? CRASHSYM_DMGL_PARAMS : 0) | CRASHSYM_DMGL_TYPES)
            }
            guard let pointer else { return nil }
            defer { free(pointer) }
            return String(cString: pointer)
        }
    }

    /// Where a trailing `.llvm.<hex>` suffix starts, when its hash has an upper-case hex digit (the
    /// form libiberty refuses) and nothing follows it.
    static func llvmSuffixStart(_ name: ArraySlice<UInt8>) -> Int? {
        let marker = Array(".llvm.".utf8)
        guard name.count > marker.count + 1 else { return nil }
        var start = name.endIndex
        var hasLetter = false
        while start > name.startIndex {
            let byte = name[start - 1]
            if (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte) {
                hasLetter = true
            } else if !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                break
            }
            start -= 1
        }
        guard hasLetter, start - name.startIndex > marker.count,
              name[(start - marker.count)..<start].elementsEqual(marker) else { return nil }
        return start - marker.count
    }
}
