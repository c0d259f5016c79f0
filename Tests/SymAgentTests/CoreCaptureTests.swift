import Foundation
@testable import SymAgent
import Testing
import TestSupport

/// The core_pattern helper's pieces in process: the specifiers, the core's file name, the
/// streaming copy with its size bound, and the per-minute count.
@Suite struct CoreCaptureTests {
    static func directory() throws -> String {
        let path = NSTemporaryDirectory() + "core-capture-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func specifiersReadAsTheKernelExpandsThem() throws {
        let crash = try CoreCapture.Crash.parse(["4242", "4243", "11", "1700000000", "my", "prog"]).get()
        #expect(crash == CoreCapture.Crash(pid: 4242, tid: 4243, signal: 11, time: 1_700_000_000, executable: "my prog"))
        #expect(try CoreCapture.Crash.parse(["1", "", "6", "0"]).get().tid == nil)
        for bad in [["0", "1", "11", "5", "x"], ["1", "1", "0", "5", "x"], ["1", "1", "11", "-5", "x"], ["1", "1", "11"],
                    ["99999999999", "1", "11", "5", "x"], ["1", "1", "200", "5", "x"]] {
            guard case .failure = CoreCapture.Crash.parse(bad) else {
                Issue.record("\(bad) was accepted")
                continue
            }
        }
    }

    /// A name round-trips, whatever the executable's name holds (dashes, spaces, slashes, UTF-8).
    @Test(arguments: ["crash-O2", "my prog", "../../etc/passwd", "naïve-ß", "", String(repeating: "x", count: 100)])
    func coreNamesRoundTrip(executable: String) {
        let crash = CoreCapture.Crash(pid: 7, tid: 8, signal: 6, time: 1_700_000_000, executable: executable)
        for truncated in [false, true] {
            let name = CoreSpool.Name(crash: crash, truncated: truncated)
            #expect(!name.fileName.contains("/"))
            #expect(name.fileName.utf8.count < 100)
            let parsed = CoreSpool.Name(fileName: name.fileName)
            #expect(parsed?.crash.pid == 7 && parsed?.crash.tid == 8 && parsed?.crash.signal == 6 && parsed?.truncated == truncated)
            #expect(parsed?.crash.time == 1_700_000_000)
        }
        #expect(CoreSpool.Name(fileName: "core-1-2-3.core") == nil)
        #expect(CoreSpool.Name(fileName: "core-x-1-2-3-f-y.core") == nil)
        #expect(CoreSpool.Name(fileName: "report.txt") == nil)
    }

    /// The copy is exact below the bound and cut exactly at it above, in 256 KiB reads.
    @Test(arguments: [0, 1, 262_143, 262_144, 262_145, 1 << 20, (1 << 20) + 1, 3 << 20])
    func theCoreIsCopiedWholeOrCutAtTheBound(size: Int) throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var generator = SplitMix64(seed: UInt64(size))
        let bytes = Data((0..<size).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
        let input = directory + "/input"
        try bytes.write(to: URL(fileURLWithPath: input))
        let descriptor = open(input, O_RDONLY)
        defer { close(descriptor) }
        let crash = CoreCapture.Crash(pid: 9, tid: nil, signal: 11, time: 5, executable: "p")
        let outcome = try CoreCapture.capture(crash, from: descriptor, into: directory + "/cores",
                                              limits: CoreCapture.Limits(maximumBytes: 1 << 20, perMinute: 0))
        guard case .kept(let path, let written, let truncated) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(truncated == (size > 1 << 20))
        #expect(written == UInt64(min(size, 1 << 20)))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes.prefix(1 << 20))
        #expect(path.hasSuffix(truncated ? "-t-p.core" : "-f-p.core"))
        #expect(!((try? FileManager.default.contentsOfDirectory(atPath: directory + "/cores")) ?? []).contains { $0.hasSuffix(".partial") })
    }

    /// At most `perMinute` in any minute that starts with a capture; a later minute starts again.
    @Test func theRateCountsEveryCaptureOfTheMinute() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let answers = [100, 110, 120, 159, 160, 161, 162].map { CoreCapture.overRate(directory: directory, limit: 3, now: Int64($0)) == nil }
        #expect(answers == [true, true, true, false, true, true, true])
        #expect(CoreCapture.overRate(directory: directory, limit: 3, now: 163) != nil)
        #expect(CoreCapture.overRate(directory: directory, limit: 0, now: 163) == nil)
    }
}
