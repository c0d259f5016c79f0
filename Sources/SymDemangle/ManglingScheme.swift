/// The mangling scheme a symbol name appears to use, judged from its shape alone.
public enum ManglingScheme: Sendable, Hashable {
    /// The Itanium C++ ABI (`_Z…`, `__Z…` on Mach-O), also used by Clang and GCC for C++ on Linux;
    /// and Clang's names of blocks' invocation functions (`___Z…_block_invoke[_N]`, `____Z…` on
    /// Mach-O), which the C++ demangler reads as `invocation function for block in …`.
    case itanium
    /// Swift (`$s…`, `$S…`, `$e…`, `_T0…`, with or without a leading `_`).
    case swift
    /// Rust's legacy mangling: an Itanium-shaped path whose last element is `h` and a 16-digit hash.
    case rustLegacy
    /// Rust's v0 mangling (RFC 2603, `_R…`).
    case rustV0
    /// Not a name any supported scheme produces.
    case none
}

extension ManglingScheme {
    /// Classifies `bytes` by prefix; legacy Rust is checked before Itanium because it is a subset of it.
    init(classifying bytes: [UInt8]) {
        if RustLegacyDemangler.recognizes(bytes) {
            self = .rustLegacy
        } else if RustV0Demangler.prefixLength(of: bytes) != nil {
            self = .rustV0
        } else if bytes.starts(with: "_Z".utf8) || bytes.starts(with: "__Z".utf8) || Self.isBlockInvocation(bytes) {
            self = .itanium
        } else if Self.swiftPrefixes.contains(where: { bytes.starts(with: $0.utf8) }) {
            self = .swift
        } else {
            self = .none
        }
    }

    /// Whether `bytes` starts as a block's invocation function does: three underscores and `Z`
    /// (four on Mach-O), as LLVM's `isItaniumEncoding` and `ItaniumPartialDemangler` take them.
    static func isBlockInvocation(_ bytes: some Collection<UInt8>) -> Bool {
        let underscores = bytes.prefix { $0 == UInt8(ascii: "_") }.count
        return (underscores == 3 || underscores == 4) && bytes.dropFirst(underscores).first == UInt8(ascii: "Z")
    }

    /// Prefixes the Swift runtime's demangler accepts (`swift/Demangling/Demangler.h`,
    /// `getManglingPrefixLength`): Swift 4 (`_T0`), 4.2 (`$S`), 5+ (`$s`), Embedded (`$e`), each with
    /// an optional Mach-O underscore, and macro expansion buffers.
    static let swiftPrefixes = ["$s", "$S", "$e", "_$s", "_$S", "_$e", "_T0", "@__swiftmacro_"]

    /// The letters after `$` in `swiftPrefixes`.
    @inline(__always)
    static func isSwiftVersionLetter(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "s") || byte == UInt8(ascii: "S") || byte == UInt8(ascii: "e")
    }
}
