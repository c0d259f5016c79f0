import Foundation
@testable import SymAgent
import Testing
import TestSupport

/// The core_pattern helper's pieces in process: the specifiers, the report's file name, garbage
/// on the input, the process's command line and environment, systemd-coredump's names, and the
/// per-minute count.
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

    /// A hostile or garbage stream on standard input gives the crash's record with the reader's
    /// error, written into the spool (the helper never traps).
    @Test(arguments: [0, 1, 63, 64, 4096, 1 << 20])
    func garbageOnTheInputGivesARecord(size: Int) throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var generator = SplitMix64(seed: UInt64(size))
        let input = directory + "/input"
        try Data((0..<size).map { _ in UInt8(truncatingIfNeeded: generator.next()) }).write(to: URL(fileURLWithPath: input))
        let descriptor = open(input, O_RDONLY)
        defer { close(descriptor) }
        let crash = CoreCapture.Crash(pid: 9, tid: nil, signal: 11, time: 5, executable: "p")
        let outcome = try CoreCapture.capture(crash, from: descriptor, into: directory + "/cores", limits: CoreCapture.Limits(perMinute: 0),
                                              process: CrashedProcess(arguments: ["p", "--flag"], environment: [("LANG", "C")]),
                                              symbolication: LocalSymbolication(searchPaths: [], cacheDirectory: directory + "/cache"))
        guard case .reported(let path, _) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(path.hasSuffix("/cores/core-5-9-0-11-f-p.json"))
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any] ?? [:]
        #expect((object["reason"] as? String)?.hasPrefix("the core could not be read") == true, "\(object)")
        let metadata = object["metadata"] as? [String: String] ?? [:]
        #expect(metadata["command_line"] == "p --flag" && metadata["env.LANG"] == "C")
        #expect(object["signal"] as? String == "SIGSEGV")
    }

    @Test func theEnvironmentIsFilteredByTheAllowList() {
        let environ = Array("LANG=C.UTF-8\0TZ=UTC\0LC_TIME=de_DE\0API_KEY=s3cret\0MY_TOKEN=t\0MY_VAR=x\0PATH=/bin\0NOEQUALS\0=empty\0".utf8)
        let cmdline = Array("/usr/bin/prog\0--name\0two words\0it's\0\0".utf8)
        let base = CrashedProcess(cmdline: cmdline, environ: environ, allow: CrashedProcess.defaultAllowList)
        #expect(base.arguments == ["/usr/bin/prog", "--name", "two words", "it's", ""])
        #expect(base.commandLine == "/usr/bin/prog --name 'two words' 'it'\\''s' ''")
        #expect(base.environment.map(\.name) == ["LANG", "TZ", "LC_TIME"])
        // A glob never admits a name that looks like a secret; its exact name does.
        let wide = CrashedProcess(cmdline: cmdline, environ: environ, allow: ["*"])
        #expect(wide.environment.map(\.name) == ["LANG", "TZ", "LC_TIME", "MY_VAR", "PATH"])
        let exact = CrashedProcess(cmdline: cmdline, environ: environ, allow: ["API_KEY", "MY_*"])
        #expect(exact.environment.map(\.name) == ["API_KEY", "MY_VAR"])
        #expect(exact.metadata.map(\.0) == ["command_line", "env.API_KEY", "env.MY_VAR"])
        for (pattern, name, expected) in [("A*B*C", "AxxBxxC", true), ("A*B*C", "AxxBxx", false), ("*", "", true), ("LC_*", "LC_", true),
                                          ("a**b", "ab", true), ("*a*a*a*a*b", String(repeating: "a", count: 3000), false)] {
            #expect(CrashedProcess.glob(pattern, matches: name) == expected, "\(pattern) \(name)")
        }
    }

    @Test func aProcessGoneReadsAsNil() {
        #expect(CrashedProcess.read(pid: Int32.max, allow: ["*"]) == nil)
        // This process: its command line is read.
        let mine = CrashedProcess.read(pid: getpid(), allow: ["*"])
        #expect(mine?.arguments.first?.isEmpty == false)
    }

    @Test func systemdCoredumpNamesRead() {
        let boot = "0123456789abcdef0123456789abcdef"
        let name = CoredumpStore.Name(fileName: "core.my\\x2eprog.1000.\(boot).4242.1700000000123456.zst")
        #expect(name?.command == "my.prog" && name?.uid == 1000 && name?.pid == 4242 && name?.microseconds == 1_700_000_000_123_456)
        #expect(name?.compression == .zstd)
        #expect(CoredumpStore.Name(fileName: "core.prog.0.\(boot).1.2")?.compression == nil)
        #expect(CoredumpStore.Name(fileName: "core.prog.0.\(boot).1.2.xz")?.compression == .xz)
        for bad in ["core.prog.0.\(boot).1.2.lz4", "core.prog.0.\(boot).1.2.gz", ".#core.prog.0.\(boot).1.2.zst", "core.prog.0.short.1.2.zst",
                    "core..0.\(boot).1.2.zst", "core.prog.x.\(boot).1.2.zst", "core.prog.0.\(boot).0.2.zst", "report.json"] {
            #expect(CoredumpStore.Name(fileName: bad) == nil, "\(bad)")
        }
    }

    /// At most `perMinute` in any minute that starts with a capture; a later minute starts again.
    @Test func theRateCountsEveryCaptureOfTheMinute() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let answers = [100, 110, 120, 159, 160, 161, 162].map { CoreCapture.overRate(directory: directory, limit: 3, now: Int64($0)) == nil }
        #expect(answers == [true, true, true, false, true, true, true])
        #expect(CoreCapture.overRate(directory: directory, limit: 3, now: 163) != nil)
        #expect(CoreCapture.overRate(directory: directory, limit: 0, now: 163) == nil)
        // The count is whole in the file: the minute that began at 160, three captures in it.
        #expect(try String(contentsOfFile: directory + "/.capture-rate", encoding: .utf8) == "160 3\n")
    }
}
