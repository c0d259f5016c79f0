import Foundation
import SymBytes
import Testing
import TestSupport

/// XXH64 (the conversion cache's file identity) against the reference implementation, the
/// `xxhash` package from PyPI (scripts/deps installs it).
@Suite struct ContentHashTests {
    @Test func xxh64MatchesTheReferenceImplementation() throws {
        // Every length up to 100 (all tail paths, one and several 32-byte stripes), then larger,
        // seeded pseudo-random bytes; two seeds.
        var generator = UInt64(0x2545_F491_4F6C_DD1D)
        var inputs: [[UInt8]] = []
        for count in Array(0...100) + [255, 256, 1_000, 4_099, 65_537] {
            inputs.append((0..<count).map { _ in
                generator ^= generator << 13; generator ^= generator >> 7; generator ^= generator << 17
                return UInt8(truncatingIfNeeded: generator)
            })
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("xxh64-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for (index, input) in inputs.enumerated() {
            try Data(input).write(to: directory.appendingPathComponent("\(index)"))
        }
        let script = """
            import sys, xxhash
            for i in range(int(sys.argv[2])):
                data = open(f"{sys.argv[1]}/{i}", "rb").read()
                print(xxhash.xxh64_intdigest(data, 0), xxhash.xxh64_intdigest(data, 2654435761))
            """
        let run = try Tool.run("/usr/bin/env", ["python3", "-c", script, directory.path, "\(inputs.count)"])
        #expect(run.status == 0, "xxhash is not installed (scripts/deps test installs it): \(run.stderr)")
        let lines = run.text.split(separator: "\n")
        try #require(lines.count == inputs.count)
        for (input, line) in zip(inputs, lines) {
            let expected = line.split(separator: " ").compactMap { UInt64($0) }
            #expect([ContentHash.xxh64(input), ContentHash.xxh64(input, seed: 2_654_435_761)] == expected, "length \(input.count)")
        }
    }
}
