import Foundation
import Testing
import TestSupport

/// `crashsym agent` end to end: the real binary against a real `crashsym serve` on 127.0.0.1.
@Suite(.serialized) struct AgentTests {
    /// The flags naming `server`, a spool and a state directory (the key goes in the environment).
    static func flags(_ server: AgentTestServer, spool: String, state: String, _ extra: [String] = []) -> [String] {
        ["--server", server.base, "--app-id", server.appID, "--spool", spool, "--state-dir", state, "--settle", "0.3"] + extra
    }

    static func directories(_ server: AgentTestServer) throws -> (spool: String, state: String) {
        let spool = server.scratch + "/spool", state = server.scratch + "/state"
        try FileManager.default.createDirectory(atPath: spool, withIntermediateDirectories: true)
        return (spool, state)
    }

    /// Runs `crashsym agent ARGUMENTS` to completion with the app key in the environment.
    static func agent(_ arguments: [String], key: String) throws -> CLI.Result {
        try CLI.run(["agent"] + arguments, environment: ["CRASHSYM_APP_KEY": key])
    }

    /// Files written in place, renamed in, and found at start all arrive, each exactly once, with
    /// the agent's metadata; the spool and the queue end empty. With inotify and with --poll.
    @Test(arguments: [false, true]) func filesDroppedIntoASpoolArriveExactlyOnce(poll: Bool) throws {
        let server = try AgentTestServer()
        let (spool, state) = try Self.directories(server)
        try AgentTest.write(AgentTest.glibcReport(0), to: spool + "/before-start.txt", age: 5)
        let agent = try AgentProcess(Self.flags(server, spool: spool, state: state, ["--environment", "staging", "--version", "2.0.1"]
                                                    + (poll ? ["--poll"] : [])),
                                     key: server.key, scratch: server.scratch)
        for index in 1...10 {
            try AgentTest.write(AgentTest.glibcReport(index), to: spool + "/crash-\(index).txt")
        }
        for index in 11...20 {
            let scratch = server.scratch + "/outside-\(index)"
            try AgentTest.write(AgentTest.glibcReport(index), to: scratch)
            try FileManager.default.moveItem(atPath: scratch, toPath: spool + "/moved-\(index).txt")
        }
        let arrived = try AgentTest.eventually { try server.crashes().count >= 21 }
        #expect(arrived, "\(agent.log)")
        usleep(700_000)  // anything sent twice would show now
        let crashes = try server.crashes()
        #expect(crashes.count == 21)
        // The OS, kernel and CPU as uname(1) names them.
        let system = try Tool.output("/usr/bin/uname", ["-s", "-r", "-m"]).trimmingCharacters(in: .newlines)
        var markers: [String] = []
        for crash in crashes {
            #expect(crash["environment"] as? String == "staging")
            #expect(crash["version"] as? String == "2.0.1")
            #expect((crash["host"] as? String)?.isEmpty == false)
            #expect(crash["system"] as? String == system)
            let raw = String(decoding: try server.raw(try #require(crash["id"] as? String)), as: UTF8.self)
            markers.append(String(raw.prefix { $0 != ":" }))
        }
        #expect(markers.sorted() == (0...20).map { "crash \($0)" }.sorted())
        #expect(AgentTest.files(spool).isEmpty)
        #expect(agent.terminate() == 0, "\(agent.log)")
        #expect(AgentTest.files(state + "/queue").isEmpty)
        let status = try Self.agent(["status", "--state-dir", state, "--format", "json"], key: server.key)
        let object = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any] ?? [:]
        #expect(object["delivered"] as? Int == 21)
        #expect(object["queue_length"] as? Int == 0)
        #expect(object["running"] as? Bool == false)
        #expect(object["last_success"] is String)
    }

    /// A file still open for writing is left alone, however long it stays quiet; it is taken
    /// whole once its writer closes it.
    @Test func aHalfWrittenFileIsTakenOnlyWhenComplete() throws {
        let server = try AgentTestServer()
        let (spool, state) = try Self.directories(server)
        let agent = try AgentProcess(Self.flags(server, spool: spool, state: state), key: server.key, scratch: server.scratch)
        let report = AgentTest.glibcReport(7)
        let path = spool + "/partial.txt"
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        try #require(descriptor >= 0)
        let half = Array(report.utf8.prefix(report.utf8.count / 2)), rest = Array(report.utf8.dropFirst(half.count))
        #expect(half.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) } == half.count)
        usleep(1_500_000)  // five times the settle time
        #expect(try server.crashes().isEmpty)
        #expect(AgentTest.files(spool) == ["partial.txt"])
        #expect(rest.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) } == rest.count)
        close(descriptor)
        #expect(try AgentTest.eventually { try server.crashes().count == 1 }, "\(agent.log)")
        let id = try #require(try server.crashes().first?["id"] as? String)
        #expect(String(decoding: try server.raw(id), as: UTF8.self) == report)
        #expect(agent.terminate() == 0)
    }

    /// A sanitizer log whose process still runs and that has no `==PID==ABORTING` line yet is not
    /// taken by --once, even settled; with the line it is.
    @Test func aSanitizerLogIsTakenAfterItsAbortingLine() throws {
        let server = try AgentTestServer()
        let (spool, state) = try Self.directories(server)
        let asan = try String(contentsOf: CLI.root.appendingPathComponent("Fixtures/reports/asan-use-after-free.txt"), encoding: .utf8)
        let lines = asan.split(separator: "\n", omittingEmptySubsequences: false)
        let aborting = try #require(lines.firstIndex { $0.hasSuffix("==ABORTING") })
        let pid = getpid()  // alive: this test process stands for the sanitized program
        let path = spool + "/asan.\(pid)"
        try AgentTest.write(lines[..<aborting].joined(separator: "\n") + "\n", to: path, age: 5)
        let first = try Self.agent(Self.flags(server, spool: spool, state: state, ["--once"]), key: server.key)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("taken 0"))
        #expect(AgentTest.files(spool) == ["asan.\(pid)"])
        try AgentTest.write(asan, to: path, age: 5)
        let second = try Self.agent(Self.flags(server, spool: spool, state: state, ["--once"]), key: server.key)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout.contains("taken 1, delivered 1"))
        let crashes = try server.crashes()
        #expect(crashes.count == 1)
        #expect(crashes.first?["format"] as? String == "sanitizer")
    }

    /// A real AddressSanitizer program writing its report with log_path into the spool.
    @Test func aRealAddressSanitizerReportIsCollected() throws {
        let server = try AgentTestServer()
        let (spool, state) = try Self.directories(server)
        let program = server.scratch + "/use-after-free"
        let build = try DropIn.run(DropIn.clang, ["-fsanitize=address", "-fuse-ld=lld", "-g", "-O1", "-Wl,--build-id=sha1",
                                                  "-o", program, CLI.root.appendingPathComponent("Fixtures/dropin/use-after-free.c").path])
        try #require(build.status == 0, "\(build.stderr)")
        let agent = try AgentProcess(Self.flags(server, spool: spool, state: state), key: server.key, scratch: server.scratch)
        let run = try DropIn.run(program, [], environment: ["ASAN_OPTIONS": "log_path=\(spool)/asan:detect_leaks=0"])
        #expect(run.status != 0)
        #expect(try AgentTest.eventually { try server.crashes().count == 1 }, "\(agent.log)")
        let crash = try #require(try server.crashes().first)
        #expect(crash["format"] as? String == "sanitizer")
        #expect(crash["signal"] as? String == "heap-use-after-free")
        #expect(AgentTest.files(spool).isEmpty)
        #expect(agent.terminate() == 0)
    }

    /// A real Swift program crashing with the runtime's backtracer writing its JSON crash log
    /// into the spool.
    @Test func aRealSwiftCrashLogIsCollected() throws {
        let server = try AgentTestServer()
        let (spool, state) = try Self.directories(server)
        let source = server.scratch + "/main.swift", program = server.scratch + "/crasher"
        try "func element(_ values: [Int], _ index: Int) -> Int { values[index] }\nprint(element([1, 2, 3], CommandLine.arguments.count + 7))\n"
            .write(toFile: source, atomically: true, encoding: .utf8)
        let build = try DropIn.run("/opt/swift/usr/bin/swiftc", ["-g", "-Onone", "-module-cache-path", server.scratch + "/modules",
                                                                 "-o", program, source])
        try #require(build.status == 0, "\(build.stderr)")
        let agent = try AgentProcess(Self.flags(server, spool: spool, state: state), key: server.key, scratch: server.scratch)
        let run = try DropIn.run(program, [], environment: ["SWIFT_BACKTRACE": "enable=yes,symbolicate=off,format=json,output-to=\(spool)"])
        #expect(run.status != 0)
        #expect(try AgentTest.eventually { try server.crashes().count == 1 }, "\(agent.log)")
        let crash = try #require(try server.crashes().first)
        #expect(crash["format"] as? String == "swift-json")
        #expect(crash["state"] as? String != "failed", "\(crash)")
        #expect(AgentTest.files(spool).isEmpty)
        #expect(agent.terminate() == 0)
    }

    /// The server down: reports stay queued (status says why), the bound drops the oldest;
    /// the server back on the same port: the queue is delivered.
    @Test func reportsWaitInTheQueueWhileTheServerIsDown() throws {
        let server = try AgentTestServer()
        let (spool, state) = try Self.directories(server)
        let port = server.port
        server.stop()
        // Three reports of 400 KiB each against a 1 MiB bound: the oldest is dropped.
        for index in 0..<3 {
            let padding = String(repeating: "#", count: 400 << 10)
            try AgentTest.write(AgentTest.glibcReport(index) + padding + "\n", to: spool + "/big-\(index).txt", age: Double(10 - index))
        }
        try AgentTest.write(AgentTest.glibcReport(3), to: spool + "/small.txt", age: 1)
        let down = try Self.agent(Self.flags(server, spool: spool, state: state, ["--once", "--max-queue-mb", "1", "--format", "json"]),
                                  key: server.key)
        #expect(down.status == 1)
        let summary = try JSONSerialization.jsonObject(with: Data(down.stdout.utf8)) as? [String: Any] ?? [:]
        #expect(summary["taken"] as? Int == 4)
        #expect(summary["dropped"] as? Int == 1)
        #expect(summary["remaining"] as? Int == 3)
        #expect(AgentTest.files(state + "/queue").filter { $0.hasSuffix(".report") }.count == 3)
        let status = try Self.agent(["status", "--state-dir", state], key: server.key)
        #expect(status.stdout.contains("queue:        3 reports"))
        #expect(status.stdout.contains("dropped:      1"))
        #expect(status.stdout.contains("Connection refused") || status.stdout.contains("connect"), "\(status.stdout)")

        try server.start(port: port)
        let up = try Self.agent(Self.flags(server, spool: spool, state: state, ["--once"]), key: server.key)
        #expect(up.status == 0, "\(up.stderr)")
        #expect(up.stdout.contains("delivered 3"))
        let markers = try server.crashes().map { String(decoding: try server.raw($0["id"] as! String).prefix(8), as: UTF8.self) }
        #expect(markers.sorted() == ["crash 1:", "crash 2:", "crash 3:"])
        // The server learnt of the report dropped while it was down, once it was back.
        let agents = try Self.agents(server)
        #expect(agents.first?["dropped"] as? Int == 1, "\(agents)")
        #expect(agents.first?["suppressed"] as? Int == 0)
        #expect(agents.first?["host"] as? String != nil)
    }

    /// kill -9 of the agent while it sends 500 reports, then a restart: each report is on the
    /// server exactly once.
    @Test func killedWhileSendingEveryReportArrivesExactlyOnce() throws {
        let server = try AgentTestServer()
        let (spool, state) = try Self.directories(server)
        let count = 500
        for index in 0..<count {
            try AgentTest.write(AgentTest.glibcReport(index), to: spool + "/r-\(index).txt", age: 5)
        }
        let first = try AgentProcess(Self.flags(server, spool: spool, state: state), key: server.key, scratch: server.scratch)
        let started = try AgentTest.eventually { try server.crashes().count >= 60 }
        first.crash()
        #expect(started, "\(first.log)")
        let before = try server.crashes().count
        #expect(before < count, "the agent was killed after it had finished: kill it sooner")
        let second = try AgentProcess(Self.flags(server, spool: spool, state: state), key: server.key, scratch: server.scratch)
        #expect(try AgentTest.eventually(within: 120) { try server.crashes().count >= count }, "\(second.log)")
        usleep(500_000)
        #expect(second.terminate() == 0)
        let crashes = try server.crashes()
        #expect(crashes.count == count)
        let markers = try server.rawOfAll().split(separator: "\n").filter { $0.hasPrefix("crash ") }.map { String($0.prefix { $0 != ":" }) }
        let twice = Dictionary(grouping: markers) { $0 }.filter { $0.value.count > 1 }.keys.sorted()
        let missing = Set((0..<count).map { "crash \($0)" }).subtracting(markers).sorted()
        #expect(twice.isEmpty, "stored twice: \(twice)")
        #expect(missing.isEmpty, "missing: \(missing)")
        #expect(AgentTest.files(state + "/queue").isEmpty)
        #expect(AgentTest.files(spool).isEmpty)
    }

    /// SIGTERM while sending: the agent exits 0 once the upload under way is answered, what it
    /// had not sent stays queued, and the next run sends it; nothing is stored twice.
    @Test func sigtermLeavesTheRestQueuedForTheNextRun() throws {
        let server = try AgentTestServer()
        let (spool, state) = try Self.directories(server)
        let count = 300
        for index in 0..<count {
            try AgentTest.write(AgentTest.glibcReport(index), to: spool + "/r-\(index).txt", age: 5)
        }
        let agent = try AgentProcess(Self.flags(server, spool: spool, state: state), key: server.key, scratch: server.scratch)
        #expect(try AgentTest.eventually { try server.crashes().count >= 30 }, "\(agent.log)")
        #expect(agent.terminate() == 0, "\(agent.log)")
        #expect(agent.log.contains("agent stopped"))
        let delivered = try server.crashes().count
        let queued = AgentTest.files(state + "/queue").filter { $0.hasSuffix(".report") }.count
        #expect(delivered < count)
        #expect(delivered + queued == count, "delivered \(delivered), queued \(queued)")
        let rest = try Self.agent(Self.flags(server, spool: spool, state: state, ["--once"]), key: server.key)
        #expect(rest.status == 0, "\(rest.stderr)")
        #expect(rest.stdout.contains("taken 0, delivered \(queued),"), "\(rest.stdout)")
        #expect(try server.crashes().count == count)
    }

    /// A report the server refuses for good (400: a NUL byte) goes to rejected/ with the answer;
    /// the next report is delivered.
    @Test func aRefusedReportGoesToRejectedWithTheAnswer() throws {
        let server = try AgentTestServer()
        let (spool, state) = try Self.directories(server)
        try AgentTest.write("not text\u{0}at all\n", to: spool + "/binary.txt", age: 5)
        try AgentTest.write(AgentTest.glibcReport(1), to: spool + "/good.txt", age: 4)
        let run = try Self.agent(Self.flags(server, spool: spool, state: state, ["--once"]), key: server.key)
        #expect(run.status == 1)
        #expect(run.stdout.contains("taken 2, delivered 1, rejected 1"))
        let rejected = AgentTest.files(state + "/rejected")
        #expect(rejected.count == 2)
        let answer = try #require(rejected.first { $0.hasSuffix(".answer.json") })
        let body = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: state + "/rejected/" + answer)))
        #expect(((body as? [String: Any])?["error"] as? [String: Any])?["code"] as? String == "bad-request")
        let report = try #require(rejected.first { $0.hasSuffix(".report") })
        #expect(try String(contentsOfFile: state + "/rejected/" + report, encoding: .utf8) == "not text\u{0}at all\n")
        #expect(try server.crashes().count == 1)
    }

    /// A crash storm: ten reports of one bug (only the pid differs) and one of another; with
    /// --max-reports-per-minute 3, three of the storm and the other one are sent, seven are
    /// deleted and counted under their signature.
    @Test func aCrashStormKeepsASampleWithCounts() throws {
        let server = try AgentTestServer()
        let (spool, state) = try Self.directories(server)
        let asan = try String(contentsOf: CLI.root.appendingPathComponent("Fixtures/reports/asan-use-after-free.txt"), encoding: .utf8)
        for index in 0..<10 {
            let variant = asan.replacingOccurrences(of: #"==[0-9]+=="#, with: "==\(4000 + index)==", options: .regularExpression)
            try AgentTest.write(variant, to: spool + "/storm-\(index).log", age: Double(20 - index))
        }
        try AgentTest.write(AgentTest.glibcReport(1), to: spool + "/other.txt", age: 5)
        let run = try Self.agent(Self.flags(server, spool: spool, state: state, ["--once", "--max-reports-per-minute", "3"]),
                                 key: server.key)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("taken 4, delivered 4, rejected 0, dropped 0, suppressed 7"), "\(run.stdout)")
        let crashes = try server.crashes()
        #expect(crashes.filter { $0["format"] as? String == "sanitizer" }.count == 3)
        #expect(crashes.filter { $0["format"] as? String == "glibc" }.count == 1)
        #expect(AgentTest.files(spool).isEmpty)
        let status = try Self.agent(["status", "--state-dir", state, "--format", "json"], key: server.key)
        let object = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any] ?? [:]
        #expect(object["suppressed"] as? Int == 7)
        let bySignature = object["suppressed_by_signature"] as? [String: Int] ?? [:]
        #expect(bySignature.count == 1)
        // The agent's class is the server's group: the same signature.
        let serverSignature = try #require(crashes.first { $0["format"] as? String == "sanitizer" }?["signature"] as? String)
        #expect(bySignature[serverSignature] == 7, "\(bySignature) vs \(serverSignature)")
        // The counts reached the server with the submissions (Crashsym-Agent-Counts), under the
        // agent's id from its status.
        let agents = try Self.agents(server)
        #expect(agents.count == 1)
        #expect(agents.first?["agent_id"] as? String == object["agent_id"] as? String)
        #expect((object["agent_id"] as? String)?.count == 16)
        #expect(agents.first?["suppressed"] as? Int == 7)
        #expect(agents.first?["dropped"] as? Int == 0)
    }

    /// A malformed `Crashsym-Agent-Counts` header costs no crash (the crash is stored, the counts
    /// ignored), and a total never goes down (a retried or reordered submission).
    @Test func agentCountsOnlyEverGrowAndAMalformedHeaderCostsNoCrash() throws {
        let server = try AgentTestServer()
        func post(_ marker: Int, _ header: String) throws -> Int32 {
            let run = try Tool.run("/usr/bin/curl", [
                "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "60", "-H", "Authorization: Bearer \(server.key)",
                "-H", "Crashsym-Agent-Counts: \(header)", "--data-binary", AgentTest.glibcReport(marker),
                server.base + "/api/v1/apps/\(server.appID)/crashes?host=h1",
            ])
            return Int32(run.text) ?? -1
        }
        for (index, header) in ["agent=xyz; dropped=1; suppressed=2", "agent=0123456789abcdef; dropped=-1; suppressed=0",
                                "nonsense", "agent=0123456789abcdef; dropped=1"].enumerated() {
            #expect(try post(index, header) == 201, "\(header)")
        }
        #expect(try Self.agents(server).isEmpty)
        #expect(try post(10, "agent=0123456789abcdef; dropped=5; suppressed=2") == 201)
        #expect(try post(11, "agent=0123456789abcdef; dropped=3; suppressed=9") == 201)
        let agents = try Self.agents(server)
        #expect(agents.count == 1)
        #expect(agents.first?["dropped"] as? Int == 5)
        #expect(agents.first?["suppressed"] as? Int == 9)
        #expect(agents.first?["host"] as? String == "h1")
        #expect(try server.crashes().count == 6)
    }

    /// The app's agents and their drop counts, as `GET …/agents` lists them.
    static func agents(_ server: AgentTestServer) throws -> [[String: Any]] {
        let object = try JSONSerialization.jsonObject(with: try server.get("/api/v1/apps/\(server.appID)/agents")) as? [String: Any]
        return object?["agents"] as? [[String: Any]] ?? []
    }

    /// A burst of reports goes over one connection: the forwarder keeps its libcurl handle, and
    /// the connection in it, between reports (counted by the server: `crashsym_http_connections_total`,
    /// each scrape's own connection included).
    @Test func aBurstOfReportsSharesOneConnection() throws {
        let server = try AgentTestServer()
        let (spool, state) = try Self.directories(server)
        let reports = 12
        for index in 1...reports {
            try AgentTest.write(AgentTest.glibcReport(index), to: spool + "/burst-\(index).txt", age: 5)
        }
        func connections() throws -> Int {
            let text = String(decoding: try server.get("/metrics"), as: UTF8.self)
            let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("crashsym_http_connections_total ") })
            return try #require(Double(line.split(separator: " ").last ?? "").map { Int($0) })
        }
        let before = try connections()
        let run = try Self.agent(Self.flags(server, spool: spool, state: state, ["--once"]), key: server.key)
        let opened = try connections() - before - 1
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("taken \(reports), delivered \(reports)"), "\(run.stdout)")
        #expect((1...2).contains(opened), "\(opened) connections for \(reports) reports")
    }

    /// A wrong key is a configuration to fix, not a verdict on the reports: they stay queued.
    @Test func aWrongKeyKeepsReportsQueued() throws {
        let server = try AgentTestServer()
        let (spool, state) = try Self.directories(server)
        try AgentTest.write(AgentTest.glibcReport(1), to: spool + "/a.txt", age: 5)
        let run = try Self.agent(Self.flags(server, spool: spool, state: state, ["--once"]), key: "wrong-key")
        #expect(run.status == 1)
        #expect(run.stdout.contains("still queued 1"))
        #expect(run.stdout.contains("refused the app key"))
        #expect(AgentTest.files(state + "/rejected").isEmpty)
    }

    /// Config-file mistakes and missing settings are usage errors (2) with a message naming the
    /// setting; a missing spool is a failure (1) saying so.
    @Test(arguments: [
        ("{\"server\": \"http://127.0.0.1:1\", \"app-id\": \"a\", \"app-key\": \"k\", \"spool\": []}", "unknown setting \"spool\""),
        ("{\"server\": \"http://127.0.0.1:1\", ", "not JSON"),
        ("[1, 2]", "expected a JSON object"),
        ("{\"server\": \"http://127.0.0.1:1\", \"app-id\": \"a\", \"app-key\": \"k\", \"spools\": [{\"path\": \"/tmp\", \"format\": \"minidump\"}]}",
         "spools[0]: unknown format \"minidump\""),
        ("{\"server\": \"http://127.0.0.1:1\", \"app-id\": \"a\", \"app-key\": \"k\", \"max-queue-mb\": \"big\"}", "\"max-queue-mb\" must be a whole number"),
        ("{\"server\": \"ftp://x\", \"app-id\": \"a\", \"app-key\": \"k\"}", "server must start with http:// or https://"),
        ("{\"server\": \"http://127.0.0.1:1\", \"app-key\": \"k\", \"spools\": [{\"path\": \"/tmp\"}]}", "no app id for spool /tmp"),
    ])
    func aMalformedConfigIsAClearUsageError(config: String, message: String) throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try config.write(toFile: directory + "/agent.json", atomically: true, encoding: .utf8)
        let run = try CLI.run(["agent", "--config", directory + "/agent.json", "--once"],
                              environment: ["CRASHSYM_APP_KEY": "", "CRASHSYM_SERVER": "", "CRASHSYM_APP_ID": "", "CRASHSYM_SPOOL": ""])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains(message), "\(run.stderr)")
    }

    @Test func aMissingSpoolIsAFailureNamingIt() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let run = try CLI.run(["agent", "--server", "http://127.0.0.1:1", "--app-id", "a", "--spool", directory + "/absent",
                               "--state-dir", directory + "/state", "--once"], environment: ["CRASHSYM_APP_KEY": "k"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("spool \(directory)/absent is not a directory"), "\(run.stderr)")
    }

    /// Two agents on one state directory: the second refuses to start.
    @Test func oneAgentPerStateDirectory() throws {
        let server = try AgentTestServer()
        let (spool, state) = try Self.directories(server)
        let agent = try AgentProcess(Self.flags(server, spool: spool, state: state), key: server.key, scratch: server.scratch)
        #expect(AgentTest.eventually(within: 60) { agent.log.contains("agent started") })
        let second = try Self.agent(Self.flags(server, spool: spool, state: state, ["--once"]), key: server.key)
        #expect(second.status == 1)
        #expect(second.stderr.contains("another crashsym agent uses this state directory"), "\(second.stderr)")
        let status = try Self.agent(["status", "--state-dir", state], key: server.key)
        #expect(status.stdout.contains("running:      yes"))
        #expect(agent.terminate() == 0)
    }
}
