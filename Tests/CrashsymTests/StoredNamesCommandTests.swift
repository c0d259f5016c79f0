import Foundation
import TestSupport
import Testing

/// `crashsym dump` stores Swift names demangled (`.csym` v2); `crashsym lookup` prints from them
/// exactly what it prints when it demangles every name itself.
@Suite struct StoredNamesCommandTests {
    static func u64(_ bytes: [UInt8], _ offset: Int) -> UInt64 {
        (0..<8).reduce(0) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
    }

    /// `table` with its demangled-names section (directory entry 8, at byte 88 + 16 * 8) pointed at
    /// four zero bytes appended at its end: a valid v2 table that stores no demangled name, so
    /// `lookup` demangles every name itself.
    static func withoutStoredNames(_ table: [UInt8]) -> [UInt8] {
        var bytes = table
        let entry = 88 + 16 * 8
        for index in 0..<8 {
            bytes[entry + index] = UInt8(truncatingIfNeeded: UInt64(table.count) >> (8 * UInt64(index)))
            bytes[entry + 8 + index] = UInt8(truncatingIfNeeded: UInt64(4) >> (8 * UInt64(index)))
        }
        return bytes + [0, 0, 0, 0]
    }

    @Test(arguments: ["swift-O", "swift-Onone"])
    func lookupPrintsTheSameWithAndWithoutStoredNames(_ fixture: String) throws {
        let elf = CLI.fixture(fixture)
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let stored = try CLI.dumpTable(elf, into: directory).table
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: stored)))
        // The dumped table is v5 and stores names: its section is more than the one zero offset.
        #expect(bytes[4] == 5 && bytes[11] == 11 && bytes[19] == 6)
        #expect(Self.u64(bytes, 88 + 16 * 8 + 8) > 4)
        let plain = "\(directory)/plain.csym"
        try Data(Self.withoutStoredNames(bytes)).write(to: URL(fileURLWithPath: plain))

        let inputPath = "\(directory)/addresses.txt"
        try LookupCommandTests.input(for: elf, seed: 3).write(toFile: inputPath, atomically: true, encoding: .utf8)
        var swiftFrames = 0
        for options in [["--format", "text"], ["--format", "json"], ["--no-demangle"], ["--jobs", "1"], ["--jobs", "3"]] {
            let expected = try LookupCommandTests.run([plain] + options, input: inputPath)
            let actual = try LookupCommandTests.run([stored] + options, input: inputPath)
            #expect(actual.status == expected.status)
            #expect(actual.output == expected.output, "\(fixture) \(options)")
            if options == ["--format", "text"] {
                // The answers do name Swift functions, demangled ("Swift." types, "main.").
                swiftFrames = String(decoding: actual.output, as: UTF8.self).split(separator: "\n")
                    .filter { $0.hasPrefix("    ") && $0.contains("Swift.") }.count
            }
        }
        #expect(swiftFrames > 100, "\(fixture): \(swiftFrames) demangled Swift frames")
    }
}
