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
