import Foundation
import GRDB
import Testing

/// Modules matched by name (ambiguous when several tables share it, and late symbols by name),
/// re-signing after a change of grouping rules, and the signature frames kept for the console,
/// over real HTTP.
struct CrashReprocessingTests {
    /// The glibc `backtrace_symbols` fixture (modules by path only, no build-ids) with its
    /// libfault frames as file offsets (`(+0x8dd)`, as glibc prints static functions): a table
    /// alone does not place `(fault_backtrace+0x2d)` today (noted in the issue).
    static func glibc(_ server: TestServer) throws -> String {
        let text = try String(contentsOfFile: CrashFixtures.reports + "/glibc-backtrace.txt", encoding: .utf8)
            .replacingOccurrences(of: "(fault_backtrace+0x2d)", with: "(+0x8dd)")
            .replacingOccurrences(of: "(fault_backtrace+0x17)", with: "(+0x8c7)")
        let path = server.scratch + "/glibc-backtrace.txt"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
    static let asan = CrashFixtures.reports + "/asan-use-after-free.txt"
    static let ubsan = CrashFixtures.reports + "/ubsan-overflow.txt"

    /// The frames of a stored or symbolicated report whose module is named `name`.
    static func frames(_ report: [String: Any], module name: String) -> [[String: Any]] {
        (report["stacks"] as? [[String: Any]] ?? []).flatMap { $0["frames"] as? [[String: Any]] ?? [] }
            .filter { $0["module"] as? String == name }
    }

    /// Tables of the fixture programs `prog` and `libfault.so`, and a second, different table
    /// also named `libfault.so` (the ASan build's library under the plain build's name).
    static func tables(_ server: TestServer) throws -> (prog: ModuleFiles, libfault: ModuleFiles, impostor: ModuleFiles) {
        let directory = server.scratch + "/tables", other = server.scratch + "/other"
        for path in [directory, other] { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        let modules = try CrashFixtures.tables(into: directory, programs: ["prog", "libfault.so"])
        let renamed = server.scratch + "/renamed/libfault.so"
        try FileManager.default.createDirectory(atPath: server.scratch + "/renamed", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: CrashFixtures.programs + "/libfault-asan.so", toPath: renamed)
        let impostor = try CrashFixtures.dump(renamed, into: other)
        #expect(impostor.name == "libfault.so")
        #expect(impostor.buildID != modules[1].buildID)
        return (modules[0], modules[1], impostor)
    }

    @Test("a module without a build-id whose name two uploaded tables of the version share is ambiguous, not guessed")
    func ambiguousName() throws {
        let server = try TestServer()
        let glibc = try Self.glibc(server)
        let (prog, libfault, impostor) = try Self.tables(server)
        try CrashFixtures.upload([prog, libfault], to: server, version: "1.0")
        try CrashFixtures.upload([impostor], to: server, version: "1.0")
        try CrashFixtures.upload([libfault], to: server, version: "2.0")

        // Version 1.0 has two tables named libfault.so: its frames stay unresolved and say why.
        let posted = try server.post("crashes", file: glibc, query: "wait=20&version=1.0")
        let id = try #require(posted.json["id"] as? String)
        let report = try #require(try server.crash(id)["report"] as? [String: Any])
        let ambiguous = Self.frames(report, module: "libfault.so")
        #expect(ambiguous.count == 3)
        for frame in ambiguous {
            #expect(frame["status"] as? String == "no-symbols")
            #expect((frame["reason"] as? String)?.contains("ambiguous: 2 symbol files named libfault.so") == true, "\(frame)")
            #expect((frame["symbolized"] as? [Any])?.isEmpty == true)
        }
        // The one table named prog is used (matched by name).
        #expect(Self.frames(report, module: "prog").allSatisfy { $0["status"] as? String == "ok" })

        // The endpoint explains: each of the two tables, by its URL.
        let explained = try server.post("symbolicate", file: glibc, query: "version=1.0&explain=1").json
        let tried = Self.frames(explained, module: "libfault.so").first?["tried"] as? [String] ?? []
        #expect(Set(tried) == Set([libfault.buildID, impostor.buildID].map {
            "store /api/v1/apps/\(server.appID)/symbols/\($0): one of 2 files named libfault.so: ambiguous without a build-id, not used"
        }), "\(tried)")
        let text = try server.post("symbolicate", file: glibc, query: "version=1.0&format=text").text
        #expect(text.contains("[crashsym: no-symbols: ambiguous: 2 symbol files named libfault.so"), "\(text)")


        // Version 2.0 has one: matched by name.
        let single = try server.post("symbolicate", file: glibc, query: "version=2.0").json
        let singleFrames = Self.frames(single, module: "libfault.so")
        #expect(singleFrames.count == 3 && singleFrames.allSatisfy { $0["status"] as? String == "ok" }, "\(singleFrames)")


        // The console says so in the crash's module list.
        let password = try server.createUser("ada", admin: true)
        let console = ConsoleClient(server)
        #expect(try console.signIn("ada", password).status == 303)
        let page = try console.get("/apps/\(server.appID)/crashes/\(id)").text
        #expect(page.contains("no build-id: ambiguous, 2 uploaded tables of this version have the name"))
        #expect(page.contains("no build-id: matched by name, not verified"))
        #expect(page.contains("ambiguous: 2 symbol files named libfault.so"))
    }

    @Test("late symbols by name: a table uploaded for the version queues again the crashes that lacked its name")
    func lateSymbolsByName() throws {
        let server = try TestServer()
        let glibc = try Self.glibc(server)
        let (prog, libfault, _) = try Self.tables(server)
        let posted = try server.post("crashes", file: glibc, query: "wait=20&version=1.0")
        let id = try #require(posted.json["id"] as? String)
        let before = try server.crash(id)
        let report = try #require(before["report"] as? [String: Any])
        #expect(Self.frames(report, module: "libfault.so").allSatisfy { $0["status"] as? String == "no-symbols" })
        #expect(Self.frames(report, module: "libfault.so").count == 3)

        // Another version's tables are not this crash's: nothing is queued.
        try CrashFixtures.upload([prog, libfault], to: server, version: "2.0")
        Thread.sleep(forTimeInterval: 1.5)
        #expect(try server.crash(id)["last_symbolicated"] as? String == before["last_symbolicated"] as? String)

        // The crash's version: the upload alone queues it again, and its frames resolve.
        try CrashFixtures.upload([prog, libfault], to: server, version: "1.0")
        var after: [String: Any] = [:]
        #expect(try CrashFixtures.eventually(within: 30) {
            after = try server.crash(id)
            let frames = Self.frames(after["report"] as? [String: Any] ?? [:], module: "libfault.so")
            return !frames.isEmpty && frames.allSatisfy { $0["status"] as? String == "ok" }
        })
        #expect(after["last_symbolicated"] as? String != before["last_symbolicated"] as? String)
        let resolved = Self.frames(after["report"] as? [String: Any] ?? [:], module: "libfault.so")
        let files = resolved.compactMap { ($0["symbolized"] as? [[String: Any]])?.last?["file"] as? String }
        #expect(files.count == 3 && files.allSatisfy { $0.hasSuffix("fault.c") }, "\(resolved)")
    }

    /// The asan crashes' signature with a rule skipping their first app frame.
    static let skipRules = #"{"rules": [{"action": "skip", "function": "fault_use_after_free", "note": "test"}]}"#

    @Test("a rules change re-signs the app's stored crashes in the background: counts move, the emptied group leaves the list")
    func regroupOnRulesChange() throws {
        let server = try TestServer()
        let tables = server.scratch + "/tables"
        try FileManager.default.createDirectory(atPath: tables, withIntermediateDirectories: true)
        try CrashFixtures.upload(try CrashFixtures.tables(into: tables, programs: ["prog-asan", "libfault-asan.so", "sanitizers-ubsan"]),
                                 to: server, version: "1.0")
        var asanCrashes: [String] = []
        for host in ["a", "b", "c"] {
            let posted = try server.post("crashes", file: Self.asan, query: "wait=20&version=1.0&host=\(host)").json
            asanCrashes.append(try #require(posted["id"] as? String))
        }
        let ubsan = try server.post("crashes", file: Self.ubsan, query: "wait=20&version=1.0").json
        let ubsanGroup = try #require(ubsan["group_id"] as? String)
        let oldGroup = try #require(try server.crash(asanCrashes[0])["group_id"] as? String)
        let oldSignature = try #require(try server.crash(asanCrashes[0])["signature"] as? String)
        #expect(oldSignature.contains("fault_use_after_free"))

        let put = try server.request("PUT", "/api/v1/apps/\(server.appID)/grouping-rules", json: Self.skipRules)
        #expect(put.status == 200, "\(put.text)")
        var groups: [[String: Any]] = []
        #expect(try CrashFixtures.eventually(within: 30) {
            groups = try server.get("groups").json["groups"] as? [[String: Any]] ?? []
            return groups.count == 2 && !groups.contains { $0["id"] as? String == oldGroup }
        }, "\(groups)")
        let moved = try #require(groups.first { $0["id"] as? String != ubsanGroup })
        #expect(moved["count"] as? Int == 3)
        #expect(moved["hosts"] as? Int == 3)
        #expect(groups.first { $0["id"] as? String == ubsanGroup }?["count"] as? Int == 1)
        for id in asanCrashes {
            let crash = try server.crash(id)
            #expect(crash["group_id"] as? String == moved["id"] as? String)
            #expect((crash["signature"] as? String)?.contains("fault_use_after_free") == false)
        }
        // The emptied group is still readable, with no crash and no sample.
        let empty = try server.get("groups/\(oldGroup)").json
        #expect(empty["count"] as? Int == 0)
        #expect(empty["sample_crash_id"] is NSNull)
        #expect(empty["versions"] as? [String] == [])

        // The same rules again change nothing: no crash is processed again.
        let stamp = try server.crash(asanCrashes[0])["last_symbolicated"] as? String
        #expect(try server.request("PUT", "/api/v1/apps/\(server.appID)/grouping-rules", json: Self.skipRules).status == 200)
        Thread.sleep(forTimeInterval: 1.5)
        #expect(try server.crash(asanCrashes[0])["last_symbolicated"] as? String == stamp)

        // Back to the built-in rules, then kill -9 at once: the run is resumed after the restart
        // and the crashes return to a group of their first signature.
        #expect(try server.request("PUT", "/api/v1/apps/\(server.appID)/grouping-rules", json: #"{"rules": []}"#).status == 200)
        server.crash()
        try server.start()
        #expect(try CrashFixtures.eventually(within: 30) {
            try asanCrashes.allSatisfy { try server.crash($0)["signature"] as? String == oldSignature }
        })
        groups = try server.get("groups").json["groups"] as? [[String: Any]] ?? []
        #expect(groups.first { $0["id"] as? String == oldGroup }?["count"] as? Int == 3, "\(groups)")
        #expect(groups.count == 2)
    }

    @Test("the group page explains the latest crash from the frames kept at processing, as re-analysis explains it")
    func groupPageReadsKeptFrames() throws {
        let server = try TestServer()
        let tables = server.scratch + "/tables"
        try FileManager.default.createDirectory(atPath: tables, withIntermediateDirectories: true)
        try CrashFixtures.upload(try CrashFixtures.tables(into: tables, programs: ["prog-asan", "libfault-asan.so"]),
                                 to: server, version: "1.0")
        let (crash, group) = try server.postProcessed(Self.asan)
        let password = try server.createUser("ada", admin: true)
        let console = ConsoleClient(server)
        #expect(try console.signIn("ada", password).status == 303)
        let path = "/apps/\(server.appID)/groups/\(group)"
        let kept = Self.explanation(try console.get(path).text)
        #expect(kept.count > 3, "\(kept)")
        #expect(kept.contains { $0.contains("role-signature") && $0.contains("fault_use_after_free") })

        // Without the raw bytes the page still explains: it reads the kept frames.
        // The object holding them: the pack of the crash (docs/storage.md "Crash packs").
        let object = try #require(try DatabaseQueue(path: server.dataDirectory + "/metadata.sqlite").read { db in
            try String.fetchOne(db, sql: "SELECT COALESCE(raw_pack, raw_sha256) FROM crash WHERE id = ?", arguments: [crash])
        })
        let raw = server.dataDirectory + "/objects/sha256/" + object.prefix(2) + "/" + object.dropFirst(2)
        let saved = server.scratch + "/raw-copy"
        try FileManager.default.moveItem(atPath: raw, toPath: saved)
        #expect(Self.explanation(try console.get(path).text) == kept)

        // A crash processed before frames were kept (none stored): analysed again, only possible with its bytes.
        try Self.sqlite(server, "UPDATE crash SET grouping = NULL WHERE id = '\(crash)'")
        #expect(try console.get(path).text.contains("could not be analysed again"))
        try FileManager.default.moveItem(atPath: saved, toPath: raw)
        #expect(Self.explanation(try console.get(path).text) == kept)
    }

    /// The rows of a group page's explanation table.
    static func explanation(_ html: String) -> [String] {
        guard let start = html.range(of: "<tbody><tr class=\"role-") else { return [] }
        let body = html[start.lowerBound...]
        guard let end = body.range(of: "</tbody>") else { return [] }
        return body[..<end.lowerBound].components(separatedBy: "</tr>").filter { $0.contains("<td") }
    }


    /// Runs one SQL statement on the server's metadata database (Python's sqlite3, WAL-aware).
    static func sqlite(_ server: TestServer, _ statement: String) throws {
        let database = server.dataDirectory + "/metadata.sqlite"
        let script = "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit()"
        let result = try Binary.run("/usr/bin/python3", ["-c", script, database, statement])
        guard result.status == 0 else { throw TestFailure("sqlite: \(result.stderr)") }
    }
}
