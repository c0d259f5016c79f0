import Foundation
import Testing
import TestSupport

/// `crashsym agent capture`, the kernel's `core_pattern` pipe helper, with real cores from
/// `scripts/build-core-fixtures` piped into the real binary as the kernel does (the container
/// cannot set core_pattern itself), then `crashsym agent --once` walking them and sending their
/// reports to a real server.
@Suite(.serialized) struct AgentCaptureTests {
    static var agentBinary: String {
        URL(fileURLWithPath: CLI.binary).deletingLastPathComponent().appendingPathComponent("crashsym-agent").path
    }

    /// Runs `crashsym-agent agent capture ARGUMENTS` with the file `core` as its standard input.
    static func capture(_ core: String, state: String, _ arguments: [String]) throws -> Tool.Run {
        let quoted = ([agentBinary, "agent", "capture", "--state-dir", state] + arguments).map { "'" + $0 + "'" }.joined(separator: " ")
        return try Tool.run("/bin/sh", ["-c", "exec \(quoted) < '\(core)'"])
    }

    static func coreFixtures() throws -> String {
        switch CoreFileCommandTests.cores {
        case .success(let directory): return directory
        case .failure(let error): throw error
        }
    }

    /// The crash reports the server shows for the app, once `count` crashes are processed (the
    /// server processes them in the background).
    static func reports(_ server: AgentTestServer, count: Int = 1) throws -> [[String: Any]] {
        var reports: [[String: Any]] = []
        _ = try AgentTest.eventually(within: 180) {
            reports = try server.crashes().compactMap { crash in
                let id = try #require(crash["id"] as? String)
                let object = try JSONSerialization.jsonObject(with: try server.get("/api/v1/apps/\(server.appID)/crashes/\(id)")) as? [String: Any]
                return object?["report"] as? [String: Any]
            }
            return reports.count >= count
        }
        return reports
    }

    /// A real core piped in is kept whole in STATE/cores; the agent walks it, sends its report
    /// (every thread, the crashed one's functions as `crashsym symbolicate` finds them, resolved
    /// here and marked as the sender's on a server without symbols) and removes the core.
    @Test func aRealCorePipedInArrivesAsItsWalkedReport() throws {
        let cores = try Self.coreFixtures()
        let server = try AgentTestServer()
        let (spool, state) = try AgentTests.directories(server)
        let core = cores + "/crash-O2.core"
        let run = try Self.capture(core, state: state, ["4242", "4243", "11", "1700000000", "crash-O2"])
        #expect(run.status == 0, "\(run.stderr)")
        let kept = state + "/cores/core-1700000000-4242-4243-11-f-crash-O2.core"
        #expect(FileManager.default.contentsEqual(atPath: kept, andPath: core))
        #expect(AgentTest.files(state + "/cores").filter { !$0.hasPrefix(".") } == ["core-1700000000-4242-4243-11-f-crash-O2.core"])

        let once = try AgentTests.agent(AgentTests.flags(server, spool: spool, state: state, ["--once"]), key: server.key)
        #expect(once.status == 0, "\(once.stderr)")
        #expect(once.stdout.contains("taken 1, delivered 1"), "\(once.stdout)")
        #expect(AgentTest.files(state + "/cores").filter { !$0.hasPrefix(".capture") }.isEmpty, "\(AgentTest.files(state + "/cores"))")

        let expected = try CoreFileCommandTests.ours(core)
        var report: [String: Any] = [:]
        #expect(try AgentTest.eventually { report = try Self.reports(server).first ?? [:]; return report["stacks"] != nil })
        #expect(report["signal"] as? String == expected.signal)
        let stacks = report["stacks"] as? [[String: Any]] ?? []
        let crashed = try #require(stacks.first { $0["crashed"] as? Bool == true })
        let frames = crashed["frames"] as? [[String: Any]] ?? []
        let functions = frames.map { ($0["symbolized"] as? [[String: Any]] ?? []).compactMap { $0["function"] as? String } }
        let thread = try #require(expected.crashed.first)
        #expect(functions == expected.threads[thread]?.map(\.functions), "\(functions)")
        #expect(functions.joined().contains("main"))
        #expect(frames.first?["symbolized_by"] as? String == "sender")
        let metadata = report["metadata"] as? [String: Any] ?? [:]
        #expect(metadata["time"] as? String == "1700000000")
        // Walked from the core by the agent: its frames say how they were found.
        #expect(frames.first?["found_by"] as? String == "context")
    }

    /// A capture killed in the middle (kill -9 while the kernel is still piping) leaves only its
    /// hidden partial file, which the agent never takes; the core captured before it arrives.
    @Test func aCaptureKilledMidwayLosesNothingKeptBefore() throws {
        let cores = try Self.coreFixtures()
        let server = try AgentTestServer()
        let (spool, state) = try AgentTests.directories(server)
        #expect(try Self.capture(cores + "/crash-O0.core", state: state, ["100", "100", "11", "1700000100", "crash-O0"]).status == 0)

        let fifo = server.scratch + "/core-pipe"
        #expect(mkfifo(fifo, 0o600) == 0)
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-c", "exec '\(Self.agentBinary)' agent capture --state-dir '\(state)' 200 200 11 1700000200 threads < '\(fifo)'"]
        try shell.run()
        // The helper dies with the pipe still open: its writer must not die of SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        let writer = open(fifo, O_WRONLY)
        #expect(writer >= 0)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: cores + "/threads.core")))
        let half = bytes.count / 2
        #expect(bytes.withUnsafeBytes { write(writer, $0.baseAddress, half) } == half)
        #expect(AgentTest.eventually(within: 10) { AgentTest.files(state + "/cores").contains { $0.hasSuffix(".partial") } })
        kill(shell.processIdentifier, SIGKILL)
        shell.waitUntilExit()
        close(writer)
        #expect(!AgentTest.files(state + "/cores").contains { $0.hasPrefix("core-1700000200") })

        let once = try AgentTests.agent(AgentTests.flags(server, spool: spool, state: state, ["--once"]), key: server.key)
        #expect(once.status == 0, "\(once.stderr)")
        #expect(once.stdout.contains("taken 1, delivered 1"), "\(once.stdout)")
        let reports = try Self.reports(server)
        #expect(reports.count == 1)
        #expect((reports.first?["metadata"] as? [String: Any])?["global_pid"] as? String == "100")
    }

    /// A core over --max-core-mb is cut there and still walked (its notes come first); over
    /// --max-captures-per-minute only a record of the crash is kept, and it arrives too.
    @Test func anOversizedCoreIsCutAndAStormOfCoresKeepsRecords() throws {
        let cores = try Self.coreFixtures()
        let server = try AgentTestServer()
        let (spool, state) = try AgentTests.directories(server)
        // The real core followed by 3 MiB: over a 1 MiB bound whatever the core's own size.
        let big = server.scratch + "/big.core"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: cores + "/crash-O0.core"))
        bytes.append(Data(count: 3 << 20))
        try bytes.write(to: URL(fileURLWithPath: big))
        let cut = try Self.capture(big, state: state, ["--max-core-mb", "1", "300", "300", "11", "1700000300", "crash-O0"])
        #expect(cut.status == 0, "\(cut.stderr)")
        #expect(cut.stderr.contains("cut at --max-core-mb"), "\(cut.stderr)")
        let kept = state + "/cores/core-1700000300-300-300-11-t-crash-O0.core"
        let size = (try FileManager.default.attributesOfItem(atPath: kept)[.size] as? Int) ?? 0
        #expect(size == 1 << 20)

        // Three more crashes within the minute against a limit of two, counted with the cut one
        // (all programs together): the first is kept, the next two are records.
        for pid in 301...302 {
            #expect(try Self.capture(cores + "/crash-O2.core", state: state,
                                     ["--max-captures-per-minute", "2", "\(pid)", "\(pid)", "11", "1700000310", "crash-O2"]).status == 0)
        }
        let third = try Self.capture(cores + "/crash-O2.core", state: state,
                                     ["--max-captures-per-minute", "2", "303", "303", "11", "1700000320", "crash O2"])
        #expect(third.status == 0)
        #expect(third.stderr.contains("not kept (over 2 cores in a minute"), "\(third.stderr)")
        #expect(AgentTest.files(state + "/cores").contains("dropped-1700000320-303-303-11-f-crash_O2.json"))

        let once = try AgentTests.agent(AgentTests.flags(server, spool: spool, state: state, ["--once"]), key: server.key)
        #expect(once.status == 0, "\(once.stderr)")
        #expect(once.stdout.contains("taken 4, delivered 4"), "\(once.stdout)")
        let reports = try Self.reports(server, count: 2)
        let byPid = Dictionary(reports.map { (($0["metadata"] as? [String: Any])?["global_pid"] as? String ?? "?", $0) }) { first, _ in first }
        let truncated = try #require(byPid["300"])
        #expect((truncated["metadata"] as? [String: Any])?["core_truncated"] as? String == "true")
        let stacks = truncated["stacks"] as? [[String: Any]] ?? []
        #expect(stacks.contains { $0["crashed"] as? Bool == true && !(($0["frames"] as? [Any]) ?? []).isEmpty })
        #expect(byPid["301"] != nil)
        // The record has no stacks: the server stores it as it came (its processing fails with
        // "no stack frames"), and its raw body says what happened.
        let raws = try server.crashes().map { String(decoding: try server.raw($0["id"] as! String), as: UTF8.self) }
        #expect(raws.count == 4)
        #expect(raws.contains { $0.contains("\"global_pid\":\"302\"") && $0.contains("core not kept") })
        let record = try #require(raws.first { $0.contains("\"global_pid\":\"303\"") })
        let object = try JSONSerialization.jsonObject(with: Data(record.utf8)) as? [String: Any] ?? [:]
        #expect(object["signal"] as? String == "SIGSEGV")
        #expect((object["reason"] as? String)?.contains("core not kept: over 2 cores in a minute") == true)
        #expect((object["metadata"] as? [String: Any])?["process"] as? String == "crash O2")
    }

    /// Hostile cores (a forged header, every truncation and byte flips of a real core, seeded)
    /// never stop the agent: each crash arrives, the unreadable ones with the reader's error.
    @Test func hostileCoresArriveAsRecordsAndNeverStopTheAgent() throws {
        let cores = try Self.coreFixtures()
        let server = try AgentTestServer()
        let (spool, state) = try AgentTests.directories(server)
        let real = [UInt8](try Data(contentsOf: URL(fileURLWithPath: cores + "/crash-O2.core")))
        var generator = SplitMix64(seed: 16)
        var variants: [[UInt8]] = []
        // An ELF core header claiming 65535 program headers far past the end.
        var forged = [UInt8](repeating: 0, count: 64)
        forged.replaceSubrange(0..<4, with: [0x7f, 0x45, 0x4c, 0x46])
        forged[4] = 2; forged[5] = 1; forged[6] = 1; forged[16] = 4; forged[18] = 62
        forged.replaceSubrange(32..<40, with: [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f])
        forged[54] = 56; forged[56] = 0xff; forged[57] = 0xff
        variants.append(forged)
        for _ in 0..<6 { variants.append(Array(real.prefix(generator.int(1...(real.count - 1))))) }
        for _ in 0..<6 {
            var flipped = real
            for _ in 0..<16 { flipped[generator.int(0...min(real.count - 1, 8191))] ^= UInt8(generator.int(1...255)) }
            variants.append(flipped)
        }
        for (index, variant) in variants.enumerated() {
            let path = server.scratch + "/hostile-\(index).core"
            try Data(variant).write(to: URL(fileURLWithPath: path))
            let run = try Self.capture(path, state: state, ["--max-captures-per-minute", "0", "\(500 + index)", "0", "11", "1700000400", "hostile"])
            #expect(run.status == 0, "\(run.stderr)")
        }
        let once = try AgentTests.agent(AgentTests.flags(server, spool: spool, state: state, ["--once"]), key: server.key)
        #expect(once.status == 0, "\(once.stderr)")
        #expect(once.stdout.contains("taken \(variants.count), delivered \(variants.count)"), "\(once.stdout)")
        // Each crash is stored: walked reports where the reader could, records with its error elsewhere.
        let raws = try server.crashes().map { String(decoding: try server.raw($0["id"] as! String), as: UTF8.self) }
        #expect(raws.count == variants.count)
        let forgedRecord = try #require(raws.first { $0.contains("\"global_pid\":\"500\"") })
        let object = try JSONSerialization.jsonObject(with: Data(forgedRecord.utf8)) as? [String: Any] ?? [:]
        #expect((object["reason"] as? String)?.hasPrefix("the core could not be read") == true, "\(object)")
        #expect(AgentTest.files(state + "/cores").filter { !$0.hasPrefix(".capture") }.isEmpty)
    }

    /// Specifiers that do not read are a usage error naming the one at fault.
    @Test func badSpecifiersAreAUsageError() throws {
        let state = try CLI.temporaryDirectory()
        let run = try Self.capture("/dev/null", state: state, ["12", "12", "SIGSEGV", "1700000000", "x"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("'SIGSEGV' is not a signal number (%s)"), "\(run.stderr)")
        let few = try Self.capture("/dev/null", state: state, ["12"])
        #expect(few.status == 2)
    }
}
