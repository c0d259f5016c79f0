/// Turns a rendered function name into the text a signature uses, so that the same function
/// reads the same whichever compiler, optimiser, debug-info flavour or build produced it
/// (docs/grouping.md "Normalisation"). Pure text work, bounded by the name's length.
public enum FunctionNameNormalizer {
    /// Names longer than this (bytes) are cut before normalising: the rest of a 4 KiB template
    /// name says nothing a signature needs, and every step below stays bounded.
    public static let maximumLength = 4096

    /// The signature text of `function` (as crashsym renders it, demangled), given its stored
    /// (mangled) name when known.
    public static func normalize(_ function: String, mangled: String? = nil) -> String {
        var bytes = Array(function.utf8.prefix(maximumLength))
        trimSpaces(&bytes)
        stripCloneSuffixes(&bytes)
        stripSwiftSpecialisation(&bytes)
        stripRustHashes(&bytes)
        let isSwift = mangled.map(isSwiftMangled) ?? false
        if isSwift {
            // `closure #1 (Swift.Int) -> () in crash.run() -> ()`: each part separately.
            var pieces: [[UInt8]] = []
            var rest = bytes[...]
            while let cut = firstTopLevel(Array(" in ".utf8), in: Array(rest), from: 0) {
                pieces.append(Array(rest.prefix(cut)))
                rest = rest.dropFirst(cut + 4)
            }
            pieces.append(Array(rest))
            bytes = Array(pieces.map { piece -> [UInt8] in
                var piece = piece
                stripArrowReturnType(&piece)
                _ = stripParameterLists(&piece)
                stripArrowReturnType(&piece)
                trimSpaces(&piece)
                return piece
            }.joined(separator: Array(" in ".utf8)))
            normalizeSpaces(&bytes)
            return String(decoding: bytes, as: UTF8.self)
        }
        stripArrowReturnType(&bytes)
        let hadParameters = stripParameterLists(&bytes)
        stripTrailingQualifiers(&bytes)
        // A C++ return type (`int foo<int>(int)`): demanglers print one for template functions.
        // Swift closures (`closure #1 in f`) have words with spaces that are part of the name.
        if (hadParameters || mangled.map { $0.hasPrefix("_Z") } == true) { stripLeadingReturnType(&bytes) }
        normalizeSpaces(&bytes)
        stripIFuncVariant(&bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    static func isSwiftMangled(_ name: String) -> Bool {
        name.hasPrefix("$s") || name.hasPrefix("$S") || name.hasPrefix("_T0") || name.hasPrefix("$e") || name.hasPrefix("_$s")
    }

    private static let space = UInt8(ascii: " ")

    private static func trimSpaces(_ bytes: inout [UInt8]) {
        while let last = bytes.last, last == space || last == 0x09 { bytes.removeLast() }
        let lead = bytes.prefix { $0 == space || $0 == 0x09 }.count
        if lead > 0 { bytes.removeFirst(lead) }
    }

    /// The words compilers append to a function's symbol when they clone or split it.
    private static let cloneWords: Set<String> = [
        "constprop", "isra", "part", "cold", "lto_priv", "llvm", "localalias", "clone", "unlikely", "hot", "specialized", "str",
    ]

    /// `f.constprop.0`, `f.isra.0.cold`, `f.part.3`, `f.llvm.123`, and the demangled
    /// `f(int) [clone .constprop.0]`: the same function, cloned by an optimiser.
    static func stripCloneSuffixes(_ bytes: inout [UInt8]) {
        // ` [clone .x.y]` groups (any number of them), as __cxa_demangle prints them.
        let clone = Array(" [clone .".utf8)
        while bytes.last == UInt8(ascii: "]"), let start = lastRange(of: clone, in: bytes) {
            bytes.removeSubrange(start...)
            trimSpaces(&bytes)
        }
        // `.word` and `.digits` runs at the end of a symbol-table name.
        while let dot = bytes.lastIndex(of: UInt8(ascii: ".")), dot > 0 {
            let word = bytes[(dot + 1)...]
            let isDigits = !word.isEmpty && word.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
            let isHash = word.count >= 4 && word.allSatisfy { isHex($0) }
            let isCloneWord = cloneWords.contains(String(decoding: word, as: UTF8.self))
            // A digit run or hash only counts after a clone word or at the end of a C-like name
            // (`f.0`); `crash.main` (a Swift module prefix) is not a clone.
            guard isCloneWord || isDigits || (isHash && precededByCloneWord(bytes, dot)) else { break }
            if isDigits && !isCloneWord {
                // `.0` after `foo.constprop` or after an identifier character: a numbered clone.
                guard let previous = Optional(bytes[dot - 1]), isIdentifier(previous) else { break }
            }
            bytes.removeSubrange(dot...)
        }
    }

    private static func precededByCloneWord(_ bytes: [UInt8], _ dot: Int) -> Bool {
        guard let previousDot = bytes[..<dot].lastIndex(of: UInt8(ascii: ".")) else { return false }
        return cloneWords.contains(String(decoding: bytes[(previousDot + 1)..<dot], as: UTF8.self))
    }

    /// `generic specialization <Swift.Int> of crash.f<A>(A) -> ()`: the specialised function is
    /// the same source function as the generic one.
    static func stripSwiftSpecialisation(_ bytes: inout [UInt8]) {
        // Words that precede the function they were made from: removed with everything up to
        // the top-level " of " that follows them, or by themselves.
        let throughOf = ["generic specialization ", "function signature specialization "].map { Array($0.utf8) }
        let alone = ["merged ", "specialized ", "outlined copy of ", "partial apply for "].map { Array($0.utf8) }
        var changed = true
        while changed && !bytes.isEmpty {
            changed = false
            for prefix in throughOf where bytes.starts(with: prefix) {
                guard let of = firstTopLevel(Array(" of ".utf8), in: bytes, from: prefix.count) else { continue }
                bytes.removeFirst(of + 4)
                changed = true
            }
            for prefix in alone where bytes.starts(with: prefix) {
                bytes.removeFirst(prefix.count)
                changed = true
            }
        }
    }

    /// Rust: `::h0123456789abcdef` (legacy mangling's hash) and `[0123abcd]` (v0 crate
    /// disambiguators) differ from build to build of the same code.
    static func stripRustHashes(_ bytes: inout [UInt8]) {
        if bytes.count > 19, bytes[bytes.count - 19] == UInt8(ascii: ":"), bytes[bytes.count - 18] == UInt8(ascii: ":"),
           bytes[bytes.count - 17] == UInt8(ascii: "h"), bytes[(bytes.count - 16)...].allSatisfy(isHex) {
            bytes.removeLast(19)
        }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "["), index > 0, isIdentifier(bytes[index - 1]) {
                var end = index + 1
                while end < bytes.count, isHex(bytes[end]) { end += 1 }
                if end > index + 1, end < bytes.count, bytes[end] == UInt8(ascii: "]") {
                    index = end + 1
                    continue
                }
            }
            output.append(bytes[index])
            index += 1
        }
        bytes = output
    }

    /// Removes every parameter list: `ns::f(int, char const*)` and `f` are the same function (one
    /// compiler's debug info names inlined functions with their linkage name, the other without),
    /// and so are the enclosing functions in `f(int)::{lambda()#1}`. Keeps `(anonymous
    /// namespace)` and the `()` of `operator()`. Returns whether a list was removed.
    static func stripParameterLists(_ bytes: inout [UInt8]) -> Bool {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var removed = false
        var index = 0
        var braces = 0
        let anonymous = Array("(anonymous namespace)".utf8)
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "{") { braces += 1 }
            if byte == UInt8(ascii: "}") && braces > 0 { braces -= 1 }
            if let operatorEnd = operatorToken(bytes, at: index) {
                output.append(contentsOf: bytes[index..<operatorEnd])
                index = operatorEnd
                continue
            }
            if byte == UInt8(ascii: "("), braces == 0 {
                if bytes[index...].starts(with: anonymous) {
                    output.append(contentsOf: anonymous)
                    index += anonymous.count
                    continue
                }
                // Skip to the matching parenthesis (an unbalanced one: keep the rest as it is).
                var depth = 0, end = index
                while end < bytes.count {
                    if bytes[end] == UInt8(ascii: "(") { depth += 1 }
                    if bytes[end] == UInt8(ascii: ")") { depth -= 1; if depth == 0 { break } }
                    end += 1
                }
                guard end < bytes.count else {
                    output.append(contentsOf: bytes[index...])
                    break
                }
                removed = true
                index = end + 1
                continue
            }
            output.append(byte)
            index += 1
        }
        bytes = output
        return removed
    }

    /// The end of an `operator…` token starting at `index` (`operator()`, `operator<<`,
    /// `operator new[]`), whose characters are not structure.
    private static func operatorToken(_ bytes: [UInt8], at index: Int) -> Int? {
        let word = Array("operator".utf8)
        guard bytes[index] == UInt8(ascii: "o"), bytes[index...].starts(with: word),
              index == 0 || !isIdentifier(bytes[index - 1]) else { return nil }
        var end = index + word.count
        guard end < bytes.count else { return end }
        if isIdentifier(bytes[end]) { return nil }  // `operators`, `operator_x`
        let symbols = Set("()[]<>=!+-*/%^&|~,".utf8)
        if bytes[end...].starts(with: Array("()".utf8)) { return end + 2 }
        if bytes[end...].starts(with: Array("[]".utf8)) { return end + 2 }
        if bytes[end] == space {
            // `operator new`, `operator delete[]`, conversions `operator bool`.
            var wordEnd = end + 1
            while wordEnd < bytes.count, isIdentifier(bytes[wordEnd]) { wordEnd += 1 }
            if bytes[wordEnd...].starts(with: Array("[]".utf8)) { wordEnd += 2 }
            return wordEnd
        }
        while end < bytes.count, symbols.contains(bytes[end]), bytes[end] != UInt8(ascii: "("), end - index < word.count + 3 {
            end += 1
        }
        return end
    }

    /// ` const`, ` volatile`, ` &`, ` &&`, ` noexcept` after the (removed) parameter list.
    static func stripTrailingQualifiers(_ bytes: inout [UInt8]) {
        let qualifiers = [" const", " volatile", " &&", " &", " noexcept", " throw()"].map { Array($0.utf8) }
        var changed = true
        while changed {
            changed = false
            trimSpaces(&bytes)
            for qualifier in qualifiers where bytes.count > qualifier.count && bytes.suffix(qualifier.count).elementsEqual(qualifier) {
                bytes.removeLast(qualifier.count)
                changed = true
            }
            // `[abi:cxx11]` tags: an ABI detail, not a name.
            if let tag = lastRange(of: Array("[abi:".utf8), in: bytes), bytes.last == UInt8(ascii: "]") {
                bytes.removeSubrange(tag...)
                changed = true
            }
        }
    }

    /// Swift's ` -> Swift.Int` (and ` async`, ` throws`) after the parameter list.
    static func stripArrowReturnType(_ bytes: inout [UInt8]) {
        if let arrow = firstTopLevel(Array(" -> ".utf8), in: bytes, from: 0) { bytes.removeSubrange(arrow...) }
        trimSpaces(&bytes)
        for word in [" async throws", " throws", " async"].map({ Array($0.utf8) }) where bytes.count > word.count
            && bytes.suffix(word.count).elementsEqual(word) {
            bytes.removeLast(word.count)
        }
    }

    /// `int ns::f<int>` → `ns::f<int>`: the return type before the name, at nesting depth 0.
    static func stripLeadingReturnType(_ bytes: inout [UInt8]) {
        var depth = 0, cut: Int?
        var index = 0
        while index < bytes.count {
            if let end = operatorToken(bytes, at: index) { index = end; continue }
            switch bytes[index] {
            case UInt8(ascii: "<"), UInt8(ascii: "("), UInt8(ascii: "["), UInt8(ascii: "{"): depth += 1
            case UInt8(ascii: ">"), UInt8(ascii: ")"), UInt8(ascii: "]"), UInt8(ascii: "}"): depth = max(0, depth - 1)
            case space where depth == 0: cut = index
            default: break
            }
            index += 1
        }
        if let cut { bytes.removeSubrange(...cut) }
    }

    /// One space at most in a row, none before `>`, `,`, `*` or `&` or after `<` (compilers
    /// differ on `> >` and `char const *`).
    static func normalizeSpaces(_ bytes: inout [UInt8]) {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        for (index, byte) in bytes.enumerated() {
            if byte == space || byte == 0x09 {
                guard let last = output.last, last != space, last != UInt8(ascii: "<"), last != UInt8(ascii: "(") else { continue }
                if index + 1 < bytes.count, [UInt8(ascii: ">"), UInt8(ascii: ","), UInt8(ascii: "*"), UInt8(ascii: "&"),
                                             UInt8(ascii: ")")].contains(bytes[index + 1]) { continue }
                output.append(space)
            } else {
                output.append(byte)
            }
        }
        while output.last == space { output.removeLast() }
        bytes = output
    }

    /// glibc's CPU-specific variants of one function (`__memmove_avx_unaligned_erms`,
    /// `__strlen_evex`, `__strlen_sse2`) are the function the program called (`memmove`,
    /// `strlen`): which one runs depends on the machine, not on the bug.
    static func stripIFuncVariant(_ bytes: inout [UInt8]) {
        guard bytes.count > 3, bytes[0] == UInt8(ascii: "_"), bytes[1] == UInt8(ascii: "_"), isIdentifier(bytes[2]),
              bytes.allSatisfy(isIdentifier) else { return }
        let words = bytes[2...].split(separator: UInt8(ascii: "_"), omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        guard let first = words.firstIndex(where: { variantWords.contains($0) }), first > 0,
              words[first...].allSatisfy({ variantWords.contains($0) || $0 == "1" || $0 == "2" }),
              words[..<first].allSatisfy({ !$0.isEmpty }) else { return }
        bytes = Array(words[..<first].joined(separator: "_").utf8)
    }

    private static let variantWords: Set<String> = [
        "sse2", "sse3", "ssse3", "sse4", "avx", "avx2", "avx512", "avx512f", "avx512bw", "avx512vl", "evex", "evex512",
        "erms", "unaligned", "aligned", "rtm", "vzeroupper", "no", "back", "fsrm", "bmi2", "x86", "ifunc",
    ]

    // MARK: Helpers

    static func isIdentifier(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || byte == 0x5f
            || byte == UInt8(ascii: "$") || byte >= 0x80
    }

    static func isHex(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66) || (byte >= 0x41 && byte <= 0x46)
    }

    private static func lastRange(of needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard needle.count <= bytes.count else { return nil }
        var start = bytes.count - needle.count
        while start >= 0 {
            if bytes[start] == needle[0] && bytes[start..<(start + needle.count)].elementsEqual(needle) { return start }
            start -= 1
        }
        return nil
    }

    /// The first occurrence of `needle` at nesting depth 0 (outside `<>`, `()`, `[]`, `{}`).
    private static func firstTopLevel(_ needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        var depth = 0
        var index = start
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "<"), UInt8(ascii: "("), UInt8(ascii: "["), UInt8(ascii: "{"): depth += 1
            case UInt8(ascii: ">"):
                // `->` is not a closing angle bracket.
                if index == 0 || bytes[index - 1] != UInt8(ascii: "-") { depth = max(0, depth - 1) }
            case UInt8(ascii: ")"), UInt8(ascii: "]"), UInt8(ascii: "}"): depth = max(0, depth - 1)
            default:
                if depth == 0, bytes[index] == needle[0], index + needle.count <= bytes.count,
                   bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
            }
            index += 1
        }
        return nil
    }
}
