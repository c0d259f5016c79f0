/// Finds mangled names in free text (a log, `perf report`, a linker map) and replaces each with its
/// demangled form, as `c++filt`, `swift-demangle` and `rustfilt` do with their input, for all three
/// languages at once.
///
/// A candidate is a maximal run of name bytes (ASCII letters, digits, `_`, `$` and `.`) that starts
/// like a C++, Swift or Rust mangled name (`_Z`, `__Z`, `___Z`, `_R`, `$s`, `_$s`, `_T0`, …). It is
/// replaced when the whole run, less any trailing `.`s (the end of a sentence), demangles.
/// Everything else is copied byte for byte, so text without names is unchanged.
public struct TextDemangler: Sendable {
    /// The demangler each name goes through.
    public let demangler: Demangler

    /// Creates a filter demangling with `demangler`.
    public init(demangler: Demangler = Demangler()) {
        self.demangler = demangler
    }

    /// Appends `text` to `output` with every mangled name in it demangled.
    public func demangleText(_ text: UnsafeRawBufferPointer, into output: inout [UInt8]) {
        var index = 0
        var copiedUpTo = 0
        let count = text.count
        while index < count {
            // Skip to the start of the next run of name bytes.
            guard Self.isNameByte(text[index]) else {
                index += 1
                continue
            }
            let start = index
            while index < count && Self.isNameByte(text[index]) { index += 1 }
            guard Self.mayStartMangledName(text, at: start, end: index) else { continue }
            // No mangled name ends in `.`: trailing dots end a sentence.
            var end = index
            while end > start && text[end - 1] == UInt8(ascii: ".") { end -= 1 }
            let token = UnsafeRawBufferPointer(rebasing: text[start..<end])
            let replaced = demangler.withDemangled(utf8: token) { name in
                output.append(contentsOf: text[copiedUpTo..<start])
                output.append(contentsOf: name)
            }
            if replaced { copiedUpTo = end }
        }
        output.append(contentsOf: text[copiedUpTo..<count])
    }

    /// `text` with every mangled name in it demangled.
    public func demangleText(_ text: String) -> String {
        var output: [UInt8] = []
        var copy = text
        copy.withUTF8 { demangleText(UnsafeRawBufferPointer($0), into: &output) }
        return String(decoding: output, as: UTF8.self)
    }

    /// The language of a mangled name, as `--format json` names it: `c++`, `swift`, `rust`, or
    /// nil for a name of no known scheme.
    public static func language(of name: String) -> String? {
        switch Demangler.scheme(of: name) {
        case .itanium: "c++"
        case .swift: "swift"
        case .rustLegacy, .rustV0: "rust"
        case .none: nil
        }
    }

    /// Whether `byte` can be part of a mangled name.
    @inline(__always)
    static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "$"), UInt8(ascii: "."):
            true
        default:
            false
        }
    }

    /// Whether the run `text[start..<end]` starts like a name of a scheme the demangler knows
    /// (the classifier's prefixes, checked without copying the run).
    @inline(__always)
    static func mayStartMangledName(_ text: UnsafeRawBufferPointer, at start: Int, end: Int) -> Bool {
        guard end - start >= 3 else { return false }
        let first = text[start], second = text[start + 1], third = text[start + 2]
        switch first {
        case UInt8(ascii: "_"):
            switch second {
            case UInt8(ascii: "Z"), UInt8(ascii: "R"): return true
            case UInt8(ascii: "_"):
                return third == UInt8(ascii: "Z") || third == UInt8(ascii: "R")
                    || (third == UInt8(ascii: "_") && ManglingScheme.isBlockInvocation(text[start..<end]))
            case UInt8(ascii: "$"): return ManglingScheme.isSwiftVersionLetter(third)
            case UInt8(ascii: "T"): return third == UInt8(ascii: "0")
            default: return false
            }
        case UInt8(ascii: "$"):
            return ManglingScheme.isSwiftVersionLetter(second)
        default:
            return false
        }
    }
}
