import TestSupport
import SymDemangle
import Testing

/// Random names behind every prefix, through the public API: nothing may trap or hang (the time
/// limit is part of the assertion), and results obey the bounds `Demangler` promises.
@Suite struct HostileInputTests {
    let demangler = Demangler()

    /// Prefixes that steer input to each demangler.
    static let prefixes = ["_ZN", "_Z", "__Z", "_R", "_RN", "_RI", "_RM", "$s", "_$s", "$S", "_T0", "$e", ""]

    /// Thousands of seeded random names (mangling alphabet, occasionally any byte) per seed.
    @Test(.timeLimit(.minutes(5)), arguments: 1...10 as ClosedRange<UInt64>)
    func randomNames(seed: UInt64) {
        var generator = SplitMix64(seed: seed)
        let alphabet = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_$.".utf8)
        for _ in 0..<1_000 {
            var bytes = Array(Self.prefixes.randomElement(using: &generator)!.utf8)
            let length = Int.random(in: 0...200, using: &generator)
            for _ in 0..<length {
                if Int.random(in: 0..<50, using: &generator) == 0 {
                    bytes.append(UInt8.random(in: 1...255, using: &generator))
                } else {
                    bytes.append(alphabet.randomElement(using: &generator)!)
                }
            }
            let name = String(decoding: bytes, as: UTF8.self)
            let result = demangler.demangle(name)
            if let result {
                #expect(!result.isEmpty || name.hasPrefix("_R"), "seed \(seed): \(name)")
                #expect(result.utf8.count <= 1_000_000 + name.utf8.count, "seed \(seed): \(name)")
            }
            #expect(demangler.demangleOrSelf(name) == (result ?? name))
        }
    }

    /// The byte API (`withDemangled(utf8:)`, the lookup hot path) answers exactly as the String
    /// API on the same bytes, including invalid UTF-8 (which the String API repairs first), NULs
    /// and every prefix, for thousands of seeded random names.
    @Test(.timeLimit(.minutes(5)), arguments: 1...4 as ClosedRange<UInt64>)
    func bytesAnswerAsStrings(seed: UInt64) {
        var generator = SplitMix64(seed: seed)
        let alphabet = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_$.".utf8)
        let prefixes = Self.prefixes + ["_$S", "_$e", "@__swiftmacro_", "$", "_$", "_T"]
        var demangled = 0
        for _ in 0..<1_000 {
            var bytes = Array(prefixes.randomElement(using: &generator)!.utf8)
            for _ in 0..<Int.random(in: 0...60, using: &generator) {
                if Int.random(in: 0..<40, using: &generator) == 0 {
                    bytes.append(UInt8.random(in: 0...255, using: &generator))
                } else {
                    bytes.append(alphabet.randomElement(using: &generator)!)
                }
            }
            let expected = demangler.demangle(String(decoding: bytes, as: UTF8.self))
            var actual: [UInt8]?
            let answered = bytes.withUnsafeBytes { name in demangler.withDemangled(utf8: name) { actual = Array($0) } }
            #expect(answered == (expected != nil), "seed \(seed): \(bytes)")
            #expect(actual == expected.map { Array($0.utf8) }, "seed \(seed): \(bytes)")
            if expected != nil { demangled += 1 }
        }
        #expect(demangled > 50, "the seeds reach the demanglers")
    }

    /// Names with embedded NULs cannot reach the C demanglers truncated.
    @Test func embeddedNUL() {
        #expect(demangler.demangle("_Z3fooi\u{0}garbage") == nil)
        #expect(demangler.demangle("_Z3fooi") != nil)
    }
}
