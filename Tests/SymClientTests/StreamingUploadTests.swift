import Foundation
import Logging
import Testing
@testable import SymClient

/// A large upload is streamed from disk: the process's peak memory grows by far less than the body
/// (scripts/bench's upload suite measures the whole command's peak in a process of its own).
@Suite(.serialized) struct StreamingUploadTests {
    /// `VmHWM` / `VmRSS` of this process in bytes.
    static func memory(_ field: String) throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix(field + ":") })
        let kilobytes = try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
        return kilobytes * 1024
    }

    @Test func a256MiBBodyIsStreamedInConstantMemory() throws {
        let directory = NSTemporaryDirectory() + "crashsym-stream-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/big.zip"
        let size = 256 << 20
        // Mostly sparse (reads cost no disk), with distinct bytes at both ends so a wrong offset shows.
        #expect(FileManager.default.createFile(atPath: path, contents: Data("head".utf8)))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: UInt64(size - 4))
        try handle.seekToEnd()
        handle.write(Data("tail".utf8))
        try handle.close()

        let answer: [String: Any] = ["version": "1", "stored": [], "already_present": []]
        let server = try FakeSymbolServer(script: ["upload": [["status": 201, "body": answer]]])
        let client = try SymbolClient(configuration: ClientConfiguration(
            server: server.url, appID: "demo", appKey: "k", deadline: .now + .seconds(300)), logger: Logger(label: "test"))
        // Reset the peak-RSS counter (Linux `clear_refs` 5), then measure the upload alone.
        try "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
        let before = try Self.memory("VmRSS")
        var last: (UInt64, UInt64) = (0, 0)
        _ = try client.uploadBundle(at: path) { sent, total in last = (sent, total) }
        let growth = try Self.memory("VmHWM") - before
        // Half the body: a buffered upload grows by at least the whole body, while the bound leaves
        // room for the suites that run beside this one in the same process (the peak is per process).
        #expect(growth < size / 2, "peak RSS grew by \(growth >> 20) MiB for a \(size >> 20) MiB body")
        #expect(last == (UInt64(size), UInt64(size)))
        let received = try #require(server.requests().first)
        #expect(received.bodySize == size)
        #expect(received.bodySHA256 == (try sha256sum(path)))
    }
}
