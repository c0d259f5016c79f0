import Foundation
import Testing
import TestSupport

/// `crashsym agent capture`, the kernel's `core_pattern` pipe helper, with real cores from
/// `scripts/build-core-fixtures` piped into the real binary as the kernel does (the container
/// cannot set core_pattern itself): each becomes a compact report in the core spool, whose frames
/// are those of the whole core (eu-stack, and crashsym's walk of the core file), which
/// `crashsym agent --once` sends to a real server. systemd-coredump's store is a temporary
/// directory of zstd-compressed real cores named as systemd names them.
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

    /// The waiting process's shell command: it waits in the shell itself (a `read` of a pipe the
    /// test holds), with no child that its end could leave running. (It was `sleep 30; exit 0`,
    /// stopped by `terminate()`: the shell inherits the test thread's signal mask, which blocks
    /// SIGTERM, so the shell ran its `sleep` to the end, and the test waited the 30 s.)
    static let waitingCommand = "read line; exit 0"

    /// A process that waits (`/bin/sh -c 'read line; exit 0'`, run by `env ENVIRONMENT`, reading
    /// a pipe nobody writes), once its command line is readable in /proc: a crashed process as
    /// the kernel keeps it while it pipes the core. `stop(_:)` ends it (and it ends when the
    /// test's process does: the pipe then closes).
    static func waitingProcess(environment: [String] = []) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = environment + ["/bin/sh", "-c", waitingCommand]
        process.standardInput = Pipe()
        try process.run()
        let pid = process.processIdentifier
        #expect(AgentTest.eventually(within: 60) {
            (try? Tool.run("/bin/cat", ["/proc/\(pid)/cmdline"]))?.text.hasPrefix("/bin/sh") == true
        })
        // Nothing that its termination would leave behind.
        let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
        #expect(children.allSatisfy { $0.isWhitespace }, "the waiting shell has children: \(children)")
        return process
    }

    /// Ends a `waitingProcess`: SIGKILL, which no inherited signal mask blocks (SIGTERM is blocked
    /// in a child spawned from a test's thread, as `FakeSymbolServer.stop()` says).
    static func stop(_ process: Process) {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == SIGKILL,
                "the waiting process ended by itself, not by the signal")
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

    /// The reports the capture left in the core spool, by file name.
    static func spooled(_ state: String) throws -> [String: [String: Any]] {
        var reports: [String: [String: Any]] = [:]
        for name in AgentTest.files(state + "/cores") where name.hasSuffix(".json") && !name.hasPrefix(".") {
            let data = try Data(contentsOf: URL(fileURLWithPath: state + "/cores/" + name))
            reports[name] = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        }
        return reports
    }

    /// A report's frames by thread, as `CoreFileCommandTests.ours` reads `crashsym symbolicate`'s.
    static func frames(_ report: [String: Any]) -> [String: [CoreFileCommandTests.Frame]] {
        var threads: [String: [CoreFileCommandTests.Frame]] = [:]
        for stack in report["stacks"] as? [[String: Any]] ?? [] {
            threads[stack["thread"] as? String ?? "?"] = (stack["frames"] as? [[String: Any]] ?? []).map { frame in
                let address = (frame["address"] as? String).flatMap { UInt64($0.dropFirst(2), radix: 16) } ?? 0
                let names = (frame["symbolized"] as? [[String: Any]] ?? []).compactMap { $0["function"] as? String }
                let offset = (frame["module_offset"] as? String).flatMap { UInt64($0.dropFirst(2), radix: 16) }
                return CoreFileCommandTests.Frame(pc: address, functions: names, module: frame["module"] as? String, offset: offset)
            }
        }
        return threads
    }

    /// Every fixture core piped in becomes a report whose threads, pcs and functions are those of
    /// the whole core: the same as `crashsym symbolicate CORE` and eu-stack's pcs, though the
    /// capture kept a small part of the core and stopped reading once it had what it needed.
    @Test(arguments: CoreFileCommandTests.fixtures + ["null-call"])
    func aRealCorePipedInBecomesTheReportOfTheWholeCore(_ name: String) throws {
        let cores = try Self.coreFixtures()
        let state = try CLI.temporaryDirectory()
        let core = "\(cores)/\(name).core"
        let run = try Self.capture(core, state: state, ["--max-captures-per-minute", "0", "4242", "4243", "11", "1700000000", name])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("walked"), "\(run.stderr)")
        let reports = try Self.spooled(state)
        let report = try #require(reports["core-1700000000-4242-4243-11-f-\(name).json"], "\(reports.keys)")
        // No core is kept: only the report.
        #expect(AgentTest.files(state + "/cores").filter { !$0.hasPrefix(".capture") } == ["core-1700000000-4242-4243-11-f-\(name).json"])
        let expected = try CoreFileCommandTests.ours(core)
        let frames = Self.frames(report)
        #expect(frames == expected.threads)
        #expect(report["signal"] as? String == expected.signal)
        let stacks = report["stacks"] as? [[String: Any]] ?? []
        #expect(stacks.filter { $0["crashed"] as? Bool == true }.compactMap { $0["thread"] as? String } == expected.crashed)
        if name != "null-call" {
            // eu-stack stops at a null pc; elsewhere its pcs are the report's, thread by thread.
            let theirs = try CoreFileCommandTests.euStack(core, executable: "\(cores)/\(name)")
            #expect(frames.mapValues { $0.map(\.pc) } == theirs.mapValues { $0.map(\.pc) })
        }
        let metadata = report["metadata"] as? [String: String] ?? [:]
        #expect(metadata["global_pid"] == "4242" && metadata["time"] == "1700000000" && metadata["input"] == "core_pattern")
        let kept = Int(metadata["core_memory_kept"] ?? "") ?? .max
        let size = (try FileManager.default.attributesOfItem(atPath: core)[.size] as? Int) ?? 0
        #expect(kept < size / 4, "\(kept) of \(size)")
        // The crashed thread's registers: its pc is the first frame's.
        let registers = metadata["registers"] ?? ""
        let crashedFrames = frames[expected.crashed.first ?? ""] ?? []
        #expect(registers.hasPrefix("rip=0x" + String(crashedFrames.first?.pc ?? 1, radix: 16) + " rsp=0x"), "\(registers)")
        #expect(registers.split(separator: " ").count == 17)
    }

    /// A core larger than the memory bound (256 MiB of heap against --max-memory-mb 4): the
    /// report is the whole core's, the capture kept at most 4 MiB and its peak resident set
    /// stays far below the core's size.
    @Test func aCoreLargerThanTheMemoryBound() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = CLI.root.appendingPathComponent("scripts/build-core-fixtures").path
        let build = try Tool.run("/usr/bin/env", ["BIG_HEAP_MB=256", "/bin/bash", script, directory, "big-heap"])
        #expect(build.status == 0, "\(build.stderr)")
        let core = directory + "/big-heap.core"
        let size = (try FileManager.default.attributesOfItem(atPath: core)[.size] as? Int) ?? 0
        #expect(size > 256 << 20)
        let state = directory + "/state"
        let quoted = [Self.agentBinary, "agent", "capture", "--state-dir", state, "--max-memory-mb", "4", "--max-captures-per-minute", "0",
                      "77", "77", "11", "1700000500", "big-heap"].map { "'" + $0 + "'" }.joined(separator: " ")
        // A pipe, as the kernel gives it: not seekable. /usr/bin/time reports the largest child's peak.
        let run = try Tool.run("/bin/sh", ["-c", "cat '\(core)' | /usr/bin/time -f 'peak %M' \(quoted)"])
        #expect(run.status == 0, "\(run.stderr)")
        let peakKB = run.stderr.split(separator: "\n").first { $0.hasPrefix("peak ") }.flatMap { Int($0.dropFirst(5)) } ?? .max
        #expect(peakKB < 120 << 10, "peak \(peakKB) KiB for a core of \(size) bytes")
        let report = try #require(try Self.spooled(state)["core-1700000500-77-77-11-f-big-heap.json"])
        let metadata = report["metadata"] as? [String: String] ?? [:]
        #expect((Int(metadata["core_memory_kept"] ?? "") ?? .max) <= 4 << 20)
        let expected = try CoreFileCommandTests.ours(core)
        #expect(Self.frames(report) == expected.threads)
        let theirs = try CoreFileCommandTests.euStack(core, executable: directory + "/big-heap")
        #expect(Self.frames(report).mapValues { $0.map(\.pc) } == theirs.mapValues { $0.map(\.pc) })
        #expect(expected.threads.count == 3)
        #expect(expected.threads.values.allSatisfy { $0.count >= 4 })
    }

    /// The crashed process's command line and the variables the allow-list admits, read from
    /// /proc/PID as root; then the helper becomes the spool's owner: the report and the tables
    /// the walk converted are that user's (the walk ran without root's rights).
    @Test func theCommandLineAndAllowedEnvironmentAndTheDroppedPrivileges() throws {
        let cores = try Self.coreFixtures()
        let state = try CLI.temporaryDirectory()
        // The agent's user: nobody owns the state directory.
        #expect(chown(state, 65534, 65534) == 0)
        let process = try Self.waitingProcess(environment: ["-i", "LANG=C.UTF-8", "TZ=UTC", "API_KEY=s3cret", "MY_VAR=x"])
        defer { Self.stop(process) }
        let pid = "\(process.processIdentifier)"
        let run = try Self.capture(cores + "/crash-O2.core", state: state,
                                   ["--env-allow", "LANG", "--env-allow", "MY_*", "--env-allow", "*KEY*", "--max-captures-per-minute", "0",
                                    pid, pid, "11", "1700000600", "sleep"])
        #expect(run.status == 0, "\(run.stderr)")
        let name = "core-1700000600-\(pid)-\(pid)-11-f-sleep.json"
        let report = try #require(try Self.spooled(state)[name])
        let metadata = report["metadata"] as? [String: String] ?? [:]
        #expect(metadata["command_line"] == "/bin/sh -c '\(Self.waitingCommand)'")
        #expect(metadata["env.LANG"] == "C.UTF-8" && metadata["env.MY_VAR"] == "x")
        #expect(metadata["env.API_KEY"] == nil && metadata["env.TZ"] == nil)
        #expect(!Self.frames(report).isEmpty)
        var info = stat()
        #expect(stat(state + "/cores/" + name, &info) == 0 && info.st_uid == 65534)
        let tables = AgentTest.files(state + "/symbol-cache").filter { $0.hasSuffix(".csym") }
        #expect(!tables.isEmpty)
        for table in tables {
            #expect(stat(state + "/symbol-cache/" + table, &info) == 0 && info.st_uid == 65534, "\(table)")
        }
        // Without --env-allow: the default list (LANG, LANGUAGE, LC_*, TZ).
        let plain = try Self.capture(cores + "/crash-O2.core", state: state, ["--max-captures-per-minute", "0", pid, pid, "11", "1700000601", "sleep"])
        #expect(plain.status == 0, "\(plain.stderr)")
        let second = (try Self.spooled(state)["core-1700000601-\(pid)-\(pid)-11-f-sleep.json"]?["metadata"] as? [String: String]) ?? [:]
        #expect(second["env.LANG"] == "C.UTF-8" && second["env.TZ"] == "UTC" && second["env.MY_VAR"] == nil && second["env.API_KEY"] == nil)
    }

    /// A captured core's report reaches the server through the agent (every thread, the crashed
    /// one's functions resolved here and marked as the sender's on a server without symbols).
    @Test func aCapturedReportArrivesOnTheServer() throws {
        let cores = try Self.coreFixtures()
        let server = try AgentTestServer()
        let (spool, state) = try AgentTests.directories(server)
        let core = cores + "/crash-O2.core"
        let run = try Self.capture(core, state: state, ["4242", "4243", "11", "1700000000", "crash-O2"])
        #expect(run.status == 0, "\(run.stderr)")

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
        #expect((metadata["registers"] as? String)?.hasPrefix("rip=0x") == true)
        // Walked from the core by the capture: its frames say how they were found.
        #expect(frames.first?["found_by"] as? String == "context")
    }

    /// A capture killed in the middle (kill -9 while the kernel is still piping) leaves no report
    /// (and no core) in the spool; the report captured before it arrives.
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
        kill(shell.processIdentifier, SIGKILL)
        shell.waitUntilExit()
        close(writer)
        #expect(!AgentTest.files(state + "/cores").contains { $0.contains("1700000200") && !$0.hasPrefix(".") })

        let once = try AgentTests.agent(AgentTests.flags(server, spool: spool, state: state, ["--once"]), key: server.key)
        #expect(once.status == 0, "\(once.stderr)")
        #expect(once.stdout.contains("taken 1, delivered 1"), "\(once.stdout)")
        let reports = try Self.reports(server)
        #expect(reports.count == 1)
        #expect((reports.first?["metadata"] as? [String: Any])?["global_pid"] as? String == "100")
    }

    /// A core cut short (the writer stopped half-way) is still walked from its notes and says it
    /// was cut; over --max-captures-per-minute only a record of the crash is kept, and it arrives.
    @Test func aCutCoreIsWalkedAndAStormOfCoresKeepsRecords() throws {
        let cores = try Self.coreFixtures()
        let server = try AgentTestServer()
        let (spool, state) = try AgentTests.directories(server)
        let cutPath = server.scratch + "/cut.core"
        let whole = try Data(contentsOf: URL(fileURLWithPath: cores + "/threads.core"))
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: cutPath))
        let cut = try Self.capture(cutPath, state: state, ["300", "300", "11", "1700000300", "threads"])
        #expect(cut.status == 0, "\(cut.stderr)")

        // Three more crashes within the minute against a limit of two, counted with the cut one
        // (all programs together): the first is walked, the next two are records.
        for pid in 301...302 {
            #expect(try Self.capture(cores + "/crash-O2.core", state: state,
                                     ["--max-captures-per-minute", "2", "\(pid)", "\(pid)", "11", "1700000310", "crash-O2"]).status == 0)
        }
        // The third crash's process is still there (as while the kernel pipes its core): its
        // record carries the command line.
        let process = try Self.waitingProcess()
        defer { Self.stop(process) }
        let pid = "\(process.processIdentifier)"
        let third = try Self.capture(cores + "/crash-O2.core", state: state,
                                     ["--max-captures-per-minute", "2", pid, pid, "11", "1700000320", "crash O2"])
        #expect(third.status == 0)
        #expect(third.stderr.contains("not read (over 2 cores in a minute"), "\(third.stderr)")
        #expect(AgentTest.files(state + "/cores").contains("dropped-1700000320-\(pid)-\(pid)-11-f-crash_O2.json"))

        let once = try AgentTests.agent(AgentTests.flags(server, spool: spool, state: state, ["--once"]), key: server.key)
        #expect(once.status == 0, "\(once.stderr)")
        #expect(once.stdout.contains("taken 4, delivered 4"), "\(once.stdout)")
        let reports = try Self.reports(server, count: 4)
        let byPid = Dictionary(reports.map { (($0["metadata"] as? [String: Any])?["global_pid"] as? String ?? "?", $0) }) { first, _ in first }
        let truncated = try #require(byPid["300"])
        #expect((truncated["metadata"] as? [String: Any])?["core_truncated"] as? String == "true")
        let stacks = truncated["stacks"] as? [[String: Any]] ?? []
        #expect(stacks.count == 4)
        #expect(stacks.contains { $0["crashed"] as? Bool == true && !(($0["frames"] as? [Any]) ?? []).isEmpty })
        #expect(byPid["301"] != nil)
        // A record is a crashsym report without frames that says why: the server reads it as any
        // report and shows what it says, and counts it in the group of crashes without frames.
        let record = try #require(byPid[pid])
        #expect(record["signal"] as? String == "SIGSEGV")
        #expect((record["reason"] as? String)?.contains("core not kept: over 2 cores in a minute") == true)
        let recordMetadata = record["metadata"] as? [String: Any] ?? [:]
        #expect(recordMetadata["process"] as? String == "crash O2")
        #expect(recordMetadata["time"] as? String == "1700000320")
        #expect(recordMetadata["command_line"] as? String == "/bin/sh -c '\(Self.waitingCommand)'")
        #expect((record["modules"] as? [Any])?.isEmpty == true && (record["stacks"] as? [Any])?.isEmpty == true)
        #expect((byPid["302"]?["reason"] as? String)?.hasPrefix("core not kept") == true)
        let listed = try server.crashes()
        #expect(listed.count == 4 && listed.allSatisfy { $0["state"] as? String == "done" }, "\(listed)")
        #expect(listed.filter { $0["signature"] as? String == "<no frames>" && $0["title"] as? String == "SIGSEGV" }.count == 2, "\(listed)")
        // Its raw body is the record as the agent wrote it.
        let raws = try server.crashes().map { String(decoding: try server.raw($0["id"] as! String), as: UTF8.self) }
        #expect(raws.contains { $0.contains("\"global_pid\":\"302\"") && $0.contains("core not kept") })
    }

    /// systemd-coredump's store (a temporary directory: installing systemd-coredump would change
    /// this machine's core_pattern): zstd- and xz-compressed real cores named as systemd names them are
    /// each sent once as the compact report of the whole core; the store is left as it was; a
    /// compressed core that does not decompress (garbage, an xz stream cut short) arrives as a record; other names are left alone.
    @Test func systemdCoredumpsStoredCoresArriveOnce() throws {
        let cores = try Self.coreFixtures()
        let server = try AgentTestServer()
        let (spool, state) = try AgentTests.directories(server)
        let store = server.scratch + "/coredump"
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
        let boot = "8d1f5e0c6f9a4b1c9e2d3f4a5b6c7d8e"
        var names: [String: String] = [:]
        for (index, fixture) in ["crash-O2", "threads", "cpp-O2"].enumerated() {
            let name = "core.\(fixture).0.\(boot).\(900 + index).170000070\(index)000000.zst"
            let zstd = try Tool.run("/usr/bin/zstd", ["-q", "-19", cores + "/\(fixture).core", "-o", store + "/" + name])
            #expect(zstd.status == 0, "\(zstd.stderr)")
            names[name] = fixture
        }
        // xz (another Compress= build), from a core of its own.
        let xzName = "core.signal-abort.1000.\(boot).910.1700000750000000.xz"
        let xz = try Tool.run("/bin/sh", ["-c", "xz -c -T1 '\(cores)/signal-abort.core' > '\(store)/\(xzName)'"])
        #expect(xz.status == 0, "\(xz.stderr)")
        names[xzName] = "signal-abort"
        // An xz core cut in the middle of its stream.
        let cutXZ = "core.cut.0.\(boot).911.1700000760000000.xz"
        let packed = try Data(contentsOf: URL(fileURLWithPath: store + "/" + xzName))
        try packed.prefix(packed.count / 2).write(to: URL(fileURLWithPath: store + "/" + cutXZ))
        let broken = "core.broken.0.\(boot).999.1700000800000000.zst"
        try Data("not zstd at all".utf8).write(to: URL(fileURLWithPath: store + "/" + broken))
        for ignored in [".#core.partial.0.\(boot).5.1700000800000000.zst", "core.other.0.\(boot).6.1700000800000000.lz4", "notes.txt"] {
            try Data("x".utf8).write(to: URL(fileURLWithPath: store + "/" + ignored))
        }
        let before = AgentTest.files(store)

        let once = try AgentTests.agent(AgentTests.flags(server, spool: spool, state: state, ["--once", "--systemd-coredump-dir", store]),
                                        key: server.key)
        #expect(once.status == 0, "\(once.stderr)")
        #expect(once.stdout.contains("taken 6, delivered 6"), "\(once.stdout)")
        #expect(AgentTest.files(store) == before)
        let raws = try server.crashes().map { String(decoding: try server.raw($0["id"] as! String), as: UTF8.self) }
        #expect(raws.count == 6)
        for raw in raws {
            let report = try JSONSerialization.jsonObject(with: Data(raw.utf8)) as? [String: Any] ?? [:]
            let metadata = report["metadata"] as? [String: String] ?? [:]
            let file = try #require(metadata["core_file"], "\(metadata)")
            #expect(metadata["input"] == "systemd-coredump" && metadata["boot_id"] == boot && metadata["uid"] == (file == xzName ? "1000" : "0"))
            if file == broken || file == cutXZ {
                #expect((report["reason"] as? String)?.contains(file == broken ? "zstd" : "xz") == true, "\(report)")
                continue
            }
            let fixture = try #require(names[file])
            #expect(metadata["process"] == fixture, "\(metadata)")
            #expect(metadata["time"]?.hasPrefix("17000007") == true)
            let expected = try CoreFileCommandTests.ours(cores + "/\(fixture).core")
            #expect(Self.frames(report) == expected.threads, "\(fixture)")
        }
        // Sent once: a second pass takes nothing, and a new core is taken alone.
        let again = try AgentTests.agent(AgentTests.flags(server, spool: spool, state: state, ["--once", "--systemd-coredump-dir", store]),
                                         key: server.key)
        #expect(again.stdout.contains("taken 0, delivered 0"), "\(again.stdout)")
        let late = "core.crash-O0.1000.\(boot).950.1700000900000000.zst"
        #expect(try Tool.run("/usr/bin/zstd", ["-q", cores + "/crash-O0.core", "-o", store + "/" + late]).status == 0)
        let third = try AgentTests.agent(AgentTests.flags(server, spool: spool, state: state, ["--once", "--systemd-coredump-dir", store]),
                                         key: server.key)
        #expect(third.stdout.contains("taken 1, delivered 1"), "\(third.stdout)")
        #expect(try server.crashes().count == 7)
    }

    /// Hostile cores (a forged header, truncations and byte flips of a real core, seeded) never
    /// stop the capture or the agent: each crash arrives, the unreadable ones with the reader's error.
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
