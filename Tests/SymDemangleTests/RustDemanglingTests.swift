import TestSupport
import Foundation
import SymDemangle
import Testing

/// Rust legacy and v0 names against `rustc-demangle` (the reference, run at test time) and two
/// independent demanglers (GNU libiberty's and LLVM 14's).
@Suite struct RustDemanglingTests {
    let demangler = Demangler()

    /// Real symbols from rustc 1.95 and hand-written corner cases, compared with what
    /// `rustc-demangle` prints with `{:#}`: identical text where it succeeds, `nil` where it fails
    /// (including its in-text `{invalid syntax}`-style failures).
    @Test(arguments: ["rust-legacy.txt", "rust-v0.txt", "rust-edge-cases.txt"])
    func matchesRustcDemangle(list: String) throws {
        let names = try Fixtures.names(list)
        let reference = try ReferenceTool.rustcDemangle().demangle(names)
        var compared = 0
        for (name, expected) in zip(names, reference) {
            let ours = demangler.demangle(name)
            let isRust = [.rustLegacy, .rustV0].contains(Demangler.scheme(of: name))
            if ReferenceTool.isRustcFailure(expected) {
                // Real symbols must all demangle; only the corner cases include broken ones.
                #expect(list == "rust-edge-cases.txt", "rustc-demangle failed on \(name)")
                if isRust { #expect(ours == nil, "\(name) should not demangle") }
            } else if isRust {
                #expect(ours == expected, "\(name)")
                compared += 1
            } else {
                // rustc-demangle also takes hashless `_ZN…E` (ours: C++) and `R…` without the
                // underscore (Windows dbghelp); the real symbols never look like that.
                #expect(list == "rust-edge-cases.txt", "\(name) not recognised as Rust")
            }
        }
        #expect(compared >= names.count / 2)
    }

    /// GNU c++filt's Rust demangler (libiberty `rust-demangle.c`) on legacy names. It prints the
    /// hash (`::h0123…`) that the alternate form drops, so that is removed from its output; and it
    /// decodes only ASCII `$u..$` escapes, so names with non-ASCII ones (identifiers like `Ñandú`)
    /// are left to `matchesRustcDemangle`.
    @Test func legacyAgreesWithGNUCxxfilt() throws {
        let names = try Fixtures.names("rust-legacy.txt")
        let gnu = try ReferenceTool.gnuCxxfilt.demangle(names)
        let hash = /::h[0-9a-f]{16}$/
        var compared = 0
        for (name, theirs) in zip(names, gnu) where !Self.hasNonASCIIEscape(name) {
            #expect(demangler.demangle(name) == theirs.replacing(hash, with: ""), "\(name)")
            compared += 1
        }
        #expect(compared >= names.count * 9 / 10)
    }

    /// LLVM 14's Rust v0 demangler on v0 names. Normalised for three documented differences: it
    /// writes a `.suffix` as ` (.suffix)`; it escapes every non-ASCII character in a char constant
    /// (`'\u{df}'`) where rustc-demangle writes printable letters as such (`'ß'`); and it predates
    /// str, reference, array, tuple and ADT const generics, leaving those names undemangled.
    @Test func v0AgreesWithLLVMCxxfilt() throws {
        let names = try Fixtures.names("rust-v0.txt")
        let llvm = try ReferenceTool.llvmCxxfilt.demangle(names)
        var compared = 0
        for (name, theirs) in zip(names, llvm) {
            if theirs == name {
                #expect(Self.hasNewConstGeneric(name), "llvm-cxxfilt-14 left \(name) alone")
                continue
            }
            #expect(demangler.demangle(name) == Self.normaliseLLVM(theirs), "\(name)")
            compared += 1
        }
        #expect(compared >= names.count * 9 / 10)
    }

    /// Thousands of seeded mutations of real names (truncations, deletions, insertions,
    /// replacements, duplications), compared with `rustc-demangle` under the rules of
    /// `matchesRustcDemangle`: they must never trap and, whenever we take a name as Rust, agree.
    @Test(.timeLimit(.minutes(5)), arguments: 1...8 as ClosedRange<UInt64>)
    func mutatedNamesMatchRustcDemangle(seed: UInt64) throws {
        let originals = try Fixtures.names("rust-legacy.txt") + Fixtures.names("rust-v0.txt")
        var generator = SplitMix64(seed: seed)
        let mutants = (0..<600).map { _ in
            Self.mutate(originals.randomElement(using: &generator)!, using: &generator)
        }
        let reference = try ReferenceTool.rustcDemangle().demangle(mutants)
        for (name, expected) in zip(mutants, reference) {
            let scheme = Demangler.scheme(of: name)
            guard scheme == .rustLegacy || scheme == .rustV0 else { continue }
            let ours = demangler.demangle(name)
            if ReferenceTool.isRustcFailure(expected) {
                #expect(ours == nil, "seed \(seed): \(name)")
            } else {
                #expect(ours == expected, "seed \(seed): \(name)")
            }
        }
    }

    /// Every truncation of every real name, compared with `rustc-demangle` the same way.
    @Test(.timeLimit(.minutes(5)), arguments: ["rust-legacy.txt", "rust-v0.txt"])
    func truncatedNamesMatchRustcDemangle(list: String) throws {
        let truncations = try Fixtures.truncations(of: list)
        let reference = try ReferenceTool.rustcDemangle().demangle(truncations)
        for (name, expected) in zip(truncations, reference) {
            let scheme = Demangler.scheme(of: name)
            guard scheme == .rustLegacy || scheme == .rustV0 else { continue }
            let ours = demangler.demangle(name)
            if ReferenceTool.isRustcFailure(expected) {
                #expect(ours == nil, "\(name)")
            } else {
                #expect(ours == expected, "\(name)")
            }
        }
    }

    /// Names whose nesting, back-references or binder counts explode: each must give `nil`
    /// quickly (the time limit is the assertion that it does not hang).
    @Test(.timeLimit(.minutes(5)), arguments: RustDemanglingTests.explosiveNames())
    func explosiveNamesAreRejected(name: ExplosiveName) {
        #expect(demangler.demangle(name.text) == nil)
    }

    /// A generated hostile name, shown in test results by what it does rather than its bytes.
    struct ExplosiveName: CustomTestStringConvertible, Sendable {
        var testDescription: String
        var text: String
    }

    /// `_R…` names built to exceed the depth, output and work limits in different ways.
    static func explosiveNames() -> [ExplosiveName] {
        // Each level is a tuple of two back-references to the previous level: output doubles.
        var doubling = "_RINvC1a1fTuuE"
        var previous = "INvC1a1f".utf8.count  // position of the first tuple (after `_R`)
        for _ in 0..<48 {
            let start = doubling.utf8.count - 2
            doubling += "TB\(base62(previous))B\(base62(previous))E"
            previous = start
        }
        doubling += "E"
        // Paths nested far deeper than any real name.
        let deep = "_R" + String(repeating: "Nv", count: 5_000) + "C1a" + String(repeating: "1b", count: 5_000)
        // Generic arguments nested deeply.
        let deepGenerics = "_R" + String(repeating: "INvC1a1f", count: 2_000) + String(repeating: "uE", count: 2_000)
        // A back-reference to its own enclosing path, and a binder with 62^9 lifetimes.
        return [
            ExplosiveName(testDescription: "output doubling 48 times through back-references", text: doubling),
            ExplosiveName(testDescription: "paths nested 5000 deep", text: deep),
            ExplosiveName(testDescription: "generic arguments nested 2000 deep", text: deepGenerics),
            ExplosiveName(testDescription: "path referring back to itself", text: "_RNvB_1a"),
            ExplosiveName(testDescription: "impl type referring back to itself", text: "_RMC0RB2_"),
            ExplosiveName(testDescription: "binder of 62^9 lifetimes", text: "_RMC0FGZZZZZZZZZ_Eu"),
        ]
    }

    /// A v0 `<base-62-number>` for `value` (the digits of `value - 1`, then `_`; `_` alone for 0).
    static func base62(_ value: Int) -> String {
        guard value > 0 else { return "_" }
        let digits = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        var rest = value - 1
        var text = ""
        repeat {
            text.insert(digits[rest % 62], at: text.startIndex)
            rest /= 62
        } while rest > 0
        return text + "_"
    }

    /// One random edit of `name`, using only characters that can appear in mangled names.
    static func mutate(_ name: String, using generator: inout SplitMix64) -> String {
        let alphabet = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_$.".utf8)
        var bytes = Array(name.utf8)
        let edits = Int.random(in: 1...3, using: &generator)
        for _ in 0..<edits where !bytes.isEmpty {
            let index = Int.random(in: 0..<bytes.count, using: &generator)
            switch Int.random(in: 0..<6, using: &generator) {
            case 0: bytes.removeSubrange(index...)
            case 1: bytes.remove(at: index)
            case 2: bytes.insert(alphabet.randomElement(using: &generator)!, at: index)
            case 3: bytes[index] = alphabet.randomElement(using: &generator)!
            case 4:
                let end = min(bytes.count, index + Int.random(in: 1...12, using: &generator))
                bytes.insert(contentsOf: bytes[index..<end], at: index)
            default:
                // Digits steer lengths and back-references: nudge one.
                if let digit = bytes[index...].firstIndex(where: { (48...57).contains($0) }) {
                    bytes[digit] = UInt8.random(in: 48...57, using: &generator)
                }
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether a legacy name has a `$u..$` escape of a non-ASCII character.
    static func hasNonASCIIEscape(_ name: String) -> Bool {
        name.matches(of: /\$u([0-9a-f]+)\$/).contains { match in
            (UInt32(match.output.1, radix: 16) ?? 0) >= 0x80
        }
    }

    /// Whether a v0 name has a const generic argument of a kind LLVM 14 does not know (str,
    /// reference, array, tuple, ADT), or a const bound in a `dyn Trait` (`p1NKj0_`).
    static func hasNewConstGeneric(_ name: String) -> Bool {
        name.contains(/K[ReQAVT]/) || name.contains(/p[0-9]+[A-Za-z_][A-Za-z0-9_]*K/)
    }

    /// LLVM 14's v0 output written as rustc-demangle's alternate form would write it.
    static func normaliseLLVM(_ text: String) -> String {
        var result = text.replacing(/\ \((\.[!-~]+)\)$/) { String($0.output.1) }
        result = result.replacing(/\\u\{([0-9a-f]+)\}/) { match in
            guard let value = UInt32(match.output.1, radix: 16), value >= 0xA0,
                  let scalar = Unicode.Scalar(value), scalar.properties.isAlphabetic
            else { return String(match.output.0) }
            return String(Character(scalar))
        }
        return result
    }
}
