import Foundation
import Testing
import TestSupport

/// Which app and version a crash is sent with: an `apps` entry of the agent's config by the
/// crashed program, and the version the server knows for the program's build-id
/// (`GET …/builds/{build-id}`, asked once and remembered). The real binaries: `crashsym upload`,
/// `crashsym serve`, `crashsym agent --once`, over HTTP on 127.0.0.1.
@Suite(.serialized) struct AgentAppsTests {
    /// A crashsym JSON report of a crash in `path` (build-id `buildID`), marked `marker`.
    static func report(_ marker: Int, path: String, buildID: String?, version: String? = nil) -> String {
        var metadata = "\"marker\": \"\(marker)\""
        if let version { metadata += ", \"version\": \"\(version)\"" }
        let id = buildID.map { ", \"build_id\": \"\($0)\"" } ?? ""
        return """
            {"signal": "SIGSEGV", "metadata": {\(metadata)},
             "modules": [{"path": "/lib/x86_64-linux-gnu/libc.so.6"}, {"path": "\(path)"\(id), "load_address": "0x555555554000"}],
             "stacks": [{"crashed": true, "frames": [{"index": 0, "module_index": 1, "address": "0x555555555189"}]}]}

            """
    }

    /// The build-id of an ELF fixture, as `crashsym dump` reads it.
    static func buildID(of path: String, scratch: String) throws -> String {
        let run = try CLI.run(["dump", path, "-o", scratch + "/dump", "--format", "json"])
        let object = try JSONSerialization.jsonObject(with: Data((run.stdout.split(separator: "\n").first ?? "").utf8)) as? [String: Any]
        return try #require(object?["build_id"] as? String, "\(run.stderr)")
    }

    /// `crashsym upload FIXTURE --version VERSION` to the app.
    static func upload(_ fixture: String, version: String, server: AgentTestServer) throws {
        let run = try CLI.run(["upload", fixture, "--server", server.base, "--app-id", server.appID, "--app-key", server.key,
                               "--version", version])
        #expect(run.status == 0, "\(run.stderr)")
    }

    /// GET requests the server answered with `status`, from its /metrics.
    static func gets(_ server: AgentTestServer, status: Int) throws -> Int {
        let text = String(decoding: try server.get("/metrics"), as: UTF8.self)
        for line in text.split(separator: "\n") where line.hasPrefix("crashsym_http_requests_total{")
            && line.contains("method=\"GET\"") && line.contains("status=\"\(status)\"") {
            return Int(Double(line.split(separator: " ").last ?? "") ?? 0)
        }
        return 0
    }

    /// Each crash's marker and version, from the raw report the server stored.
    static func versionsByMarker(_ server: AgentTestServer) throws -> [String: String] {
        var result: [String: String] = [:]
        for crash in try server.crashes() {
            let raw = try JSONSerialization.jsonObject(with: try server.raw(try #require(crash["id"] as? String))) as? [String: Any]
            let marker = (raw?["metadata"] as? [String: Any])?["marker"] as? String ?? "?"
            result[marker] = crash["version"] as? String
        }
        return result
    }

    @Test func aCrashWithoutAVersionGetsTheVersionItsExecutableWasUploadedWith() throws {
        let server = try AgentTestServer()
        let (spool, state) = try AgentTests.directories(server)
        let fixture = CLI.fixture("gcc-c-O2-dwarf5")
        let id = try Self.buildID(of: fixture, scratch: server.scratch)
        try Self.upload(fixture, version: "3.1.4", server: server)
        let program = "/opt/app/bin/gcc-c-O2-dwarf5"
        let unknown = String(repeating: "ab", count: 20)
        try AgentTest.write(Self.report(1, path: program, buildID: id), to: spool + "/1.json", age: 5)
        try AgentTest.write(Self.report(2, path: program, buildID: id), to: spool + "/2.json", age: 5)
        try AgentTest.write(Self.report(3, path: program, buildID: id, version: "7.7.7"), to: spool + "/3.json", age: 5)
        try AgentTest.write(Self.report(4, path: "/opt/app/bin/other", buildID: unknown), to: spool + "/4.json", age: 5)
        try AgentTest.write(Self.report(5, path: "/opt/app/bin/other", buildID: unknown), to: spool + "/5.json", age: 5)
        // Reading /metrics is itself a GET answered 200: two readings give what one adds.
        let missing = try Self.gets(server, status: 404)
        let first = try Self.gets(server, status: 200), found = try Self.gets(server, status: 200)
        let run = try AgentTests.agent(AgentTests.flags(server, spool: spool, state: state, ["--once", "--connections", "1"]),
                                       key: server.key)
        #expect(run.status == 0, "\(run.stderr)")
        // One question per build-id, whatever the number of its crashes.
        #expect(try Self.gets(server, status: 200) - found - (found - first) == 1)
        #expect(try Self.gets(server, status: 404) - missing == 1)
        #expect(try Self.versionsByMarker(server) == ["1": "3.1.4", "2": "3.1.4", "3": "7.7.7", "4": "unknown", "5": "unknown"])
        // The agent told the server about itself with its first crash: queue length, no drops.
        let agents = try AgentTests.agents(server)
        #expect(agents.count == 1)
        #expect(agents.first?["queue"] as? Int != nil && agents.first?["dropped"] as? Int == 0)
    }

    /// One agent, two apps: crashes of the program an `apps` entry names go to that app, with its
    /// key, version and environment (the spool's version is not carried over to another app);
    /// the others stay with the agent's app.
    @Test func appsEntriesSendEachProgramsCrashesToItsApp() throws {
        let server = try AgentTestServer()
        let (spool, state) = try AgentTests.directories(server)
        let created = try CLI.run(["apps", "create", "second", "--data-dir", server.dataDirectory, "--format", "json"])
        let second = try JSONSerialization.jsonObject(with: Data(created.stdout.utf8)) as? [String: Any] ?? [:]
        let otherID = try #require(second["id"] as? String, "\(created.stderr)"), otherKey = try #require(second["key"] as? String)
        let config = server.scratch + "/agent.json"
        try """
            {"server": "\(server.base)", "app-id": "\(server.appID)", "version": "1.0", "environment": "prod",
             "state-dir": "\(state)", "settle-seconds": 0.3, "spools": [{"path": "\(spool)"}],
             "apps": [{"executable": "/opt/b/bin/bprog", "app-id": "\(otherID)", "app-key": "\(otherKey)", "version": "2.0", "environment": "b-env"},
                      {"executable": "cprog", "app-id": "\(otherID)", "app-key": "\(otherKey)"}]}
            """.write(toFile: config, atomically: true, encoding: .utf8)
        func glibc(_ marker: Int, _ program: String) -> String {
            "crash \(marker): segmentation fault\n/lib/x86_64-linux-gnu/libc.so.6(+0x271ca)[0x7f1c2a8271ca]\n\(program)(+0x1189)[0x55d0c0a00189]\n"
        }
        try AgentTest.write(glibc(1, "/opt/b/bin/bprog"), to: spool + "/1.txt", age: 5)
        try AgentTest.write(glibc(2, "./cprog"), to: spool + "/2.txt", age: 5)
        try AgentTest.write(glibc(3, "/usr/bin/aprog"), to: spool + "/3.txt", age: 5)
        try AgentTest.write(glibc(4, "/opt/elsewhere/bprog"), to: spool + "/4.txt", age: 5)
        let run = try AgentTests.agent(["--config", config, "--once"], key: server.key)
        #expect(run.status == 0, "\(run.stderr) \(run.stdout)")
        func crashes(app: String, key: String) throws -> [String: [String: Any]] {
            let list = try Tool.run("/usr/bin/curl", ["-sS", "--fail", "-H", "Authorization: Bearer \(key)",
                                                      server.base + "/api/v1/apps/\(app)/crashes?limit=100"])
            var result: [String: [String: Any]] = [:]
            for crash in (try JSONSerialization.jsonObject(with: list.stdout) as? [String: Any])?["crashes"] as? [[String: Any]] ?? [] {
                let raw = try Tool.run("/usr/bin/curl", ["-sS", "--fail", "-H", "Authorization: Bearer \(key)",
                                                         server.base + "/api/v1/apps/\(app)/crashes/\(crash["id"] as! String)/raw"])
                result[String(raw.text.prefix { $0 != ":" })] = crash
            }
            return result
        }
        let mapped = try crashes(app: otherID, key: otherKey)
        #expect(mapped.keys.sorted() == ["crash 1", "crash 2"])
        #expect(mapped["crash 1"]?["version"] as? String == "2.0" && mapped["crash 1"]?["environment"] as? String == "b-env")
        #expect(mapped["crash 2"]?["version"] as? String == "unknown" && mapped["crash 2"]?["environment"] as? String == "prod")
        let own = try crashes(app: server.appID, key: server.key)
        #expect(own.keys.sorted() == ["crash 3", "crash 4"])
        #expect(own["crash 3"]?["version"] as? String == "1.0")
    }

    /// `GET …/builds/{build-id}` answers for the app whose key asks, newest version first, and
    /// says nothing of another app's build-ids.
    @Test func theBuildRouteAnswersOnlyForTheAppsOwnBuilds() throws {
        let server = try AgentTestServer()
        let fixture = CLI.fixture("gcc-c-O2-dwarf5")
        let id = try Self.buildID(of: fixture, scratch: server.scratch)
        try Self.upload(fixture, version: "1.0", server: server)
        try Self.upload(fixture, version: "1.1", server: server)
        let answer = try JSONSerialization.jsonObject(with: try server.get("/api/v1/apps/\(server.appID)/builds/\(id.uppercased())"))
            as? [String: Any] ?? [:]
        #expect(answer["build_id"] as? String == id)
        #expect(answer["name"] as? String == "gcc-c-O2-dwarf5")
        #expect(answer["arch"] as? String == "x86_64")
        let versions = answer["versions"] as? [[String: Any]] ?? []
        #expect(versions.compactMap { $0["version"] as? String } == ["1.1", "1.0"])
        #expect(versions.allSatisfy { ($0["created"] as? String)?.hasPrefix("20") == true && $0["platform"] as? String == "linux" })
        let created = try CLI.run(["apps", "create", "second", "--data-dir", server.dataDirectory, "--format", "json"])
        let second = try JSONSerialization.jsonObject(with: Data(created.stdout.utf8)) as? [String: Any] ?? [:]
        let otherID = try #require(second["id"] as? String), otherKey = try #require(second["key"] as? String)
        func status(_ app: String, _ key: String, _ build: String) throws -> String {
            try Tool.run("/usr/bin/curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer \(key)",
                                           server.base + "/api/v1/apps/\(app)/builds/\(build)"]).text
        }
        #expect(try status(otherID, otherKey, id) == "404")  // not its build
        #expect(["401", "403"].contains(try status(server.appID, otherKey, id)))  // not its app
        #expect(try status(server.appID, server.key, "not-hex") == "400")
        #expect(try status(server.appID, server.key, String(repeating: "cd", count: 20)) == "404")
    }
}
