import Foundation
import SymAgent
import SymBytes
import Testing
import TestSupport

/// The agent's SHA-256 (its reports' `Idempotency-Key`), against FIPS 180-2's examples and
/// coreutils' `sha256sum` over seeded random bytes fed in random pieces.
@Suite struct SHA256HasherTests {
    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test("FIPS 180-2 examples", arguments: [
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func fipsExamples(message: String, digest: String) {
        #expect(Self.hex(SHA256Hasher.hash(Array(message.utf8))) == digest)
    }

    @Test func aMillionAsInPiecesOfEverySize() {
        var hasher = SHA256Hasher()
        var generator = SplitMix64(seed: 7)
        var left = 1_000_000
        while left > 0 {
            let piece = min(left, generator.int(0...200))
            hasher.update([UInt8](repeating: UInt8(ascii: "a"), count: piece))
            left -= piece
        }
        #expect(Self.hex(hasher.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// Lengths around the padding boundaries (55, 56, 63, 64 bytes…) and a large file, each the
    /// digest `sha256sum` prints, through `Forwarder.idempotencyKey(ofFile:)`.
    @Test func filesHashLikeSha256sum() throws {
        var generator = SplitMix64(seed: 42)
        let directory = NSTemporaryDirectory() + "sha256-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for length in [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 1000, 65_536, 65_537, 300_001] {
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            let path = directory + "/\(length)"
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let expected = try Tool.output("/usr/bin/sha256sum", [path]).split(separator: " ").first.map(String.init)
            #expect(try Forwarder.idempotencyKey(ofFile: path) == "sha256:" + (expected ?? "?"), "length \(length)")
            var pieces = SHA256Hasher()
            var offset = 0
            while offset < bytes.count {
                let end = min(bytes.count, offset + generator.int(1...100))
                pieces.update(Array(bytes[offset..<end]))
                offset = end
            }
            #expect("sha256:" + Self.hex(pieces.finalize()) == "sha256:" + (expected ?? "?"), "length \(length) in pieces")
        }
    }
}
