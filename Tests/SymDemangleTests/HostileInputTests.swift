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

    /// Names with embedded NULs cannot reach the C demanglers truncated.
    @Test func embeddedNUL() {
        #expect(demangler.demangle("_Z3fooi\u{0}garbage") == nil)
        #expect(demangler.demangle("_Z3fooi") != nil)
    }
}
