/// Turns mangled C++, Swift and Rust symbol names into the names a programmer wrote.
///
/// C++ goes through GNU libiberty's demangler (the installed `c++filt`'s; what it refuses, through
/// crashsym's own, which prints as LLVM 21 does) and Swift through the
/// Swift runtime's `swift_demangle`, with `swift-demangle`'s type sugar added (`SwiftTypeSugar`), so
/// both read exactly as the toolchains' own tools print them. Rust (legacy and v0) is decoded here
/// and printed the way `rustc-demangle` prints with `{:#}`: without hashes or crate disambiguators.
/// Every path is safe on hostile input: `nil`, never a trap.
public struct Demangler: Sendable, Hashable {
    /// Names longer than this are left alone: no toolchain emits them, and the C demanglers'
    /// stack use grows with nesting, which grows with length.
    public static let maximumNameLength = 1 << 20
    /// Swift names longer than this are left alone (and counted in `DemangleRefusals`): the longest of
    /// 534,544 names of the Swift 6.3 toolchain's libraries and swift-package is 1,323 bytes, and
    /// the runtime's demangler crashes on some long names (a 120 KB one).
    public static let maximumSwiftNameLength = 8 << 10

    /// How Swift names are spelled.
    public let swiftNames: SwiftNameStyle
    /// Whether function parameter lists are printed (C++ and Swift).
    public let parameters: Bool

    /// Creates a demangler printing Swift names in `swiftNames` style, and parameter lists unless
    /// `parameters` is false (as `c++filt -p`; for Swift, the simplified form, which names
    /// argument labels only).
    public init(swiftNames: SwiftNameStyle = .full, parameters: Bool = true) {
        self.swiftNames = parameters ? swiftNames : .simplified
        self.parameters = parameters
    }

    /// Whether this demangler prints what `Demangler()` prints (the form tables store).
    public var isDefault: Bool { swiftNames == .full && parameters }

    /// The scheme `name` appears to be mangled with, judged by its prefix (and, for legacy Rust,
    /// by its trailing hash element); `demangle(_:)` may still fail on a malformed name.
    public static func scheme(of name: String) -> ManglingScheme {
        ManglingScheme(classifying: Array(name.utf8))
    }

    /// The demangled form of `name`, or `nil` when it is not mangled or cannot be demangled.
    public func demangle(_ name: String) -> String? {
        let bytes = Array(name.utf8)
        guard bytes.count <= Self.maximumNameLength else { return nil }
        return demangle(bytes)
    }

    /// Demangles `bytes`, keeping an ELF symbol version (`@VER`, `@@VER`) as it is.
    private func demangle(_ bytes: [UInt8]) -> String? {
        let scheme = ManglingScheme(classifying: bytes)
        switch scheme {
        case .rustLegacy: return RustLegacyDemangler.demangle(bytes)
        case .rustV0: return RustV0Demangler.demangle(bytes)
        case .swift: return SwiftRuntimeDemangler.demangle(bytes, style: swiftNames)
        case .itanium, .none:
            // `nm -D`, `readelf` and linker maps write versioned dynamic symbols as `name@VER`;
            // the mangled name is the part before the `@`.
            if let split = Self.symbolVersionStart(bytes), let head = demangle(Array(bytes[..<split])) {
                return head + String(decoding: bytes[split...], as: UTF8.self)
            }
            return scheme == .itanium ? ItaniumDemangler.demangle(bytes, parameters: parameters) : nil
        }
    }

    /// Where a trailing ELF symbol version (`@` or `@@`, then letters, digits, `_` and `.`)
    /// starts, if `bytes` has one after a non-empty name.
    private static func symbolVersionStart(_ bytes: [UInt8]) -> Int? {
        guard let at = bytes.firstIndex(of: UInt8(ascii: "@")), at > 0 else { return nil }
        var version = bytes[(at + 1)...]
        if version.first == UInt8(ascii: "@") { version = version.dropFirst() }
        let isVersion = !version.isEmpty && version.allSatisfy { byte in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
                || byte == UInt8(ascii: ".")
        }
        return isVersion ? at : nil
    }

    /// Calls `body` with the demangled form of the UTF-8 name `name` (the bytes of `demangle(_:)`'s
    /// answer for `String(decoding: name, as: UTF8.self)`, valid only while `body` runs) and
    /// returns true; false, without calling `body`, when that answer is nil. ASCII Swift names,
    /// most of what a Swift binary holds, go to the runtime with no `String`, array or heap
    /// allocation in between.
    public func withDemangled(utf8 name: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) -> Bool {
        guard name.count <= Self.maximumNameLength else { return false }
        // A Swift prefix is no Rust or C++ one, so such a name is classified `.swift`; ASCII only,
        // so that the input needs no UTF-8 repair.
        if Self.hasSwiftPrefix(name) && Self.isASCII(name) {
            return SwiftRuntimeDemangler.withDemangled(name, style: swiftNames) { demangled in
                // `demangle` reads the result into a String, which repairs invalid UTF-8.
                guard !Self.isASCII(demangled) else { return body(demangled) }
                var repaired = String(decoding: demangled, as: UTF8.self)
                repaired.withUTF8 { body(UnsafeRawBufferPointer($0)) }
            }
        }
        // ASCII C++ names straight to libiberty (not legacy Rust, which is Itanium-shaped): the
        // answer is ASCII too, the bytes `demangle` would give.
        if name.count >= 3, name[0] == UInt8(ascii: "_"), name[1] == UInt8(ascii: "Z"), Self.isASCII(name),
           !(name[2] == UInt8(ascii: "N") && RustLegacyDemangler.recognizes(Array(name))),
           ItaniumDemangler.withDemangledWhole(name, parameters: parameters, { demangled in
               guard Self.isASCII(demangled) else {
                   var repaired = String(decoding: demangled, as: UTF8.self)
                   return repaired.withUTF8 { body(UnsafeRawBufferPointer($0)) }
               }
               body(demangled)
           }) {
            return true
        }
        guard var demangled = demangle(String(decoding: name, as: UTF8.self)) else { return false }
        demangled.withUTF8 { body(UnsafeRawBufferPointer($0)) }
        return true
    }

    /// Whether every byte of `bytes` is ASCII.
    @inline(__always)
    private static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var union: UInt8 = 0
        for byte in bytes { union |= byte }
        return union < 0x80
    }

    /// Whether `name` starts with one of `ManglingScheme.swiftPrefixes` (for such a name
    /// `scheme(of:)` is `.swift`), checked on its bytes without a `String`.
    @inline(__always)
    public static func hasSwiftPrefix(_ name: UnsafeRawBufferPointer) -> Bool {
        guard name.count >= 3 else {
            return name.count == 2 && name[0] == UInt8(ascii: "$") && ManglingScheme.isSwiftVersionLetter(name[1])
        }
        switch name[0] {
        case UInt8(ascii: "$"): return ManglingScheme.isSwiftVersionLetter(name[1])
        case UInt8(ascii: "_"):
            return (name[1] == UInt8(ascii: "$") && ManglingScheme.isSwiftVersionLetter(name[2]))
                || (name[1] == UInt8(ascii: "T") && name[2] == UInt8(ascii: "0"))
        case UInt8(ascii: "@"): return name.starts(with: "@__swiftmacro_".utf8)
        default: return false
        }
    }

    /// An Itanium C++ name (`_Z…`) through the C++ demangler alone, as `c++filt` prints it; for
    /// front ends that bring its spelling to another tool's (the llvm-symbolizer drop-in).
    public static func demangleItanium(_ name: [UInt8]) -> String? {
        guard name.count <= maximumNameLength else { return nil }
        return ItaniumDemangler.demangle(name)
    }

    /// An Itanium C++ name through crashsym's own demangler alone, spelled exactly as LLVM 21's
    /// `ItaniumDemangle` (`llvm-nm -C`, `llvm-cxxfilt`) spells it; `nil` where LLVM fails too.
    /// `demangle(_:)` uses it for the names libiberty refuses.
    /// Like `llvm::demangle`, it takes one to four underscores before the `Z` (Mach-O's and
    /// blocks' spellings), tries once more without the first underscore, and keeps a leading `.`.
    public static func demangleItaniumAsLLVM(_ name: String, parameters: Bool = true) -> String? {
        var bytes = Array(name.utf8)
        guard bytes.count <= maximumNameLength else { return nil }
        func isItaniumEncoding(_ bytes: ArraySlice<UInt8>) -> Bool {
            let underscores = bytes.prefix { $0 == UInt8(ascii: "_") }.count
            return underscores > 0 && underscores <= 4 && bytes.dropFirst(underscores).first == UInt8(ascii: "Z")
        }
        if bytes.first == UInt8(ascii: ".") {
            bytes.removeFirst()
            guard isItaniumEncoding(bytes[...]) else { return nil }
            return ItaniumDemangler.demangleAsLLVM(bytes, parameters: parameters).map { "." + $0 }
        }
        if isItaniumEncoding(bytes[...]), let answer = ItaniumDemangler.demangleAsLLVM(bytes, parameters: parameters) {
            return answer
        }
        guard bytes.first == UInt8(ascii: "_"), isItaniumEncoding(bytes.dropFirst()) else { return nil }
        return ItaniumDemangler.demangleAsLLVM(Array(bytes.dropFirst()), parameters: parameters)
    }

    /// The demangled form of `name`, or `name` itself when it cannot be demangled.
    public func demangleOrSelf(_ name: String) -> String {
        demangle(name) ?? name
    }
}
