import Foundation

/// The symbol lists in `Fixtures/demangle` (see its README and `generate.sh`).
enum Fixtures {
    /// `Fixtures/demangle` in this package.
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // Support
        .deletingLastPathComponent()  // SymDemangleTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // package root
        .appendingPathComponent("Fixtures/demangle")

    /// The names in one list, one per line, in file order.
    static func names(_ list: String) throws -> [String] {
        let text = try String(contentsOf: directory.appendingPathComponent(list), encoding: .utf8)
        return text.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    }

    /// Every strict prefix of every name in `list` (each name cut at each byte), for truncation tests.
    static func truncations(of list: String) throws -> [String] {
        try names(list).flatMap { name in
            let bytes = Array(name.utf8)
            return (0..<bytes.count).map { String(decoding: bytes[..<$0], as: UTF8.self) }
        }
    }
}

/// SplitMix64: a tiny seeded generator, so every generated input can be reproduced from its seed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
