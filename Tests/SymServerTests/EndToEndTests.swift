import Foundation
import Testing

/// Issue 4 end to end: the real `crashsym upload` (libcurl) against a real `crashsym serve` on
/// 127.0.0.1, both the built binary. Build-ids come from readelf, recorded rows from sqlite3,
/// expected tables from `crashsym dump`, debug files from debuginfod-find.
@Suite("crashsym upload → crashsym serve")
struct EndToEndTests {
    static let secret = "this-key-must-never-be-printed"

    @Test("post-build flow: every module stored, version complete, tables byte-equal to dump, second run sends nothing")
    func postBuildFlow() throws {
        let e2e = try EndToEnd()
        let tree = try BuildTree.make(in: e2e.server.scratch)
        let expected = try BuildTree.expected()
        #expect(expected.count == 4)

        let first = try e2e.upload([tree, "--version", "1.0", "--package", "com.example.e2e", "--include-debug",
                                    "--format", "json"] + e2e.account)
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        #expect(EndToEnd.statuses(first) == Dictionary(uniqueKeysWithValues: expected.values.map { ($0, "uploaded") }))
        #expect(!first.stdout.contains(e2e.server.key) && !first.stderr.contains(e2e.server.key))

        // The version lists every module, under the binary's name, with its debug file.
        let modules = try e2e.modules(version: "1.0")
        #expect(Set(modules.keys) == Set(expected.values))
        for (name, id) in expected {
            #expect(modules[id]?["name"] as? String == name)
            #expect(modules[id]?["has_debug_file"] as? Bool == true, "\(name)")
        }

        // Stored tables are byte for byte what `crashsym dump` writes; debug files are the originals.
        let dumpDirectory = e2e.server.scratch + "/dump"
        let dump = try Binary.crashsym(["dump", tree, "-o", dumpDirectory, "--format", "json"], environment: e2e.environment)
        #expect(dump.status == 0, "\(dump.stderr)")
        let recorded = try e2e.recordedModules()
        #expect(Set(recorded.keys) == Set(expected.values))
        for id in expected.values {
            let table = try Data(contentsOf: URL(fileURLWithPath: dumpDirectory + "/\(id).csym"))
            let row = try #require(recorded[id])
            #expect(modules[id]?["symbols_size"] as? Int == table.count)
            #expect(try Data(contentsOf: URL(fileURLWithPath: e2e.objectPath(row.symbols))) == table, "\(id)")
        }
        let progID = try #require(expected["prog"]), appID = try #require(expected["greet-app"])
        let progDebug = try #require(recorded[progID]?.debug)
        #expect(try Data(contentsOf: URL(fileURLWithPath: e2e.objectPath(progDebug)))
            == Data(contentsOf: URL(fileURLWithPath: tree + "/debuglink/prog.debug")))
        let appDebug = try #require(recorded[appID]?.debug)
        #expect(try Data(contentsOf: URL(fileURLWithPath: e2e.objectPath(appDebug)))
            == Data(contentsOf: URL(fileURLWithPath: tree + "/greet-app")))
        let objects = try e2e.storedObjects()
        #expect(objects.count == 8, "\(objects)")

        // Again: the server has everything, so no bundle is sent at all.
        let uploadsBefore = try e2e.counter("crashsym_uploads_total")
        let bytesBefore = try e2e.counter("crashsym_upload_bytes_total")
        #expect(uploadsBefore == 1)
        let second = try e2e.upload([tree, "--version", "1.0", "--include-debug", "--format", "json"] + e2e.account)
        #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
        #expect(EndToEnd.statuses(second) == Dictionary(uniqueKeysWithValues: expected.values.map { ($0, "already_present") }))
        #expect(try e2e.counter("crashsym_uploads_total") == uploadsBefore)
        #expect(try e2e.counter("crashsym_upload_bytes_total") == bytesBefore)

        // A new version built from the same binaries lists them all, still without an upload.
        let next = try e2e.upload([tree, "--version", "1.1"] + e2e.account)
        #expect(next.status == 0, "\(next.stdout)\(next.stderr)")
        #expect(next.stdout.contains("4 modules: 0 uploaded, 4 already present, 0 failed"), "\(next.stdout)")
        #expect(Set(try e2e.modules(version: "1.1").keys) == Set(expected.values))
        #expect(try e2e.counter("crashsym_uploads_total") == uploadsBefore)
        #expect(try e2e.storedObjects().count == objects.count)
    }

    @Test("Bugly's spelling: -i PATH -u -id -key -package -version -symbol")
    func buglyFlags() throws {
        let e2e = try EndToEnd()
        let library = Binary.fixture("libgreet.so")
        let id = try BuildTree.buildID(library)
        let result = try e2e.upload(["-i", library, "-u", "-id", e2e.server.appID, "-key", e2e.server.key,
                                     "-package", "com.example.bugly", "-version", "2.0.1", "-symbol",
                                     "--server", e2e.server.base])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("uploaded        \(id)  libgreet.so"), "\(result.stdout)")
        #expect(Array(try e2e.modules(version: "2.0.1").keys) == [id])
        let versions = try e2e.server.request("GET", "/api/v1/apps/\(e2e.server.appID)/versions")
        #expect((versions.json["versions"] as? [[String: Any]])?.first?["version"] as? String == "2.0.1")
    }

    @Test("a wrong key and an unknown app fail with exit 1 and a clear message; the key is never printed")
    func refusedCredentials() throws {
        let e2e = try EndToEnd()
        let library = Binary.fixture("libgreet.so")
        let wrongKey = try e2e.upload([library, "--version", "1.0", "--server", e2e.server.base,
                                       "--app-id", e2e.server.appID, "--app-key", Self.secret])
        let unknownApp = try e2e.upload([library, "--version", "1.0", "--server", e2e.server.base,
                                         "--app-id", "no-such-app", "--app-key", Self.secret])
        for result in [wrongKey, unknownApp] {
            #expect(result.status == 1)
            #expect((result.stdout + result.stderr).contains("missing or invalid app key"), "\(result.stdout)\(result.stderr)")
            #expect((result.stdout + result.stderr).contains("401"), "\(result.stdout)\(result.stderr)")
            #expect(!(result.stdout + result.stderr).contains(Self.secret))
        }
        // Refused before any bundle was built or sent.
        #expect(try e2e.counter("crashsym_uploads_total") == 0)
        #expect(try e2e.server.request("GET", "/api/v1/apps/\(e2e.server.appID)/versions").json["versions"] as? [Any] != nil)
        #expect(try e2e.recordedModules().isEmpty)
    }

    @Test("missing version, app id or key is a usage error (exit 2)", arguments: [
        (["--app-id", "demo", "--app-key", secret], "--version is required"),
        (["--version", "1.0", "--app-key", secret], "no app id"),
        (["--version", "1.0", "--app-id", "demo"], "no app key"),
    ])
    func missingFields(arguments: [String], message: String) throws {
        let e2e = try EndToEnd()
        let result = try e2e.upload([Binary.fixture("libgreet.so"), "--server", e2e.server.base] + arguments)
        #expect(result.status == 2, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(!(result.stdout + result.stderr).contains(Self.secret))
        #expect(try e2e.recordedModules().isEmpty)
    }

    @Test("concurrent uploads of the same build-ids all succeed and store one copy")
    func concurrentUploads() throws {
        let e2e = try EndToEnd()
        let tree = try BuildTree.make(in: e2e.server.scratch)
        let expected = Set(try BuildTree.expected().values)
        let runs = try (0..<4).map { index in
            try e2e.startUpload([tree, "--version", "3.\(index)", "--include-debug", "--format", "json"] + e2e.account,
                                name: "concurrent-\(index)")
        }
        var uploaded: [String: Int] = [:]
        for run in runs {
            let result = run.wait()
            #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
            let statuses = EndToEnd.statuses(result)
            #expect(Set(statuses.keys) == expected)
            #expect(statuses.values.allSatisfy { ["uploaded", "already_present"].contains($0) }, "\(statuses)")
            for (id, status) in statuses where status == "uploaded" { uploaded[id, default: 0] += 1 }
        }
        // Each module was stored by exactly one of them.
        #expect(uploaded == Dictionary(uniqueKeysWithValues: expected.map { ($0, 1) }))
        for index in 0..<4 { #expect(Set(try e2e.modules(version: "3.\(index)").keys) == expected) }
        #expect(Set(try e2e.recordedModules().keys) == expected)
        #expect(try e2e.storedObjects().count == 8)
        #expect(try e2e.server.leftovers().isEmpty)
    }

    @Test("a server killed and restarted while the client retries: the upload succeeds, nothing is lost")
    func serverRestartDuringRetries() throws {
        let e2e = try EndToEnd()
        let library = Binary.fixture("libgreet.so")
        let first = try e2e.upload([library, "--version", "4.0"] + e2e.account)
        #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
        let port = e2e.server.port
        e2e.server.crash()

        let tree = try BuildTree.make(in: e2e.server.scratch)
        let run = try e2e.startUpload([tree, "--version", "4.1", "--format", "json", "--timeout", "600"] + e2e.account,
                                      name: "restart")
        Thread.sleep(forTimeInterval: 1)
        try e2e.server.start(port: port)
        let result = run.wait()
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains("retrying"), "\(result.stderr)")
        let expected = try BuildTree.expected()
        let statuses = EndToEnd.statuses(result)
        let libraryID = try #require(expected["libgreet.so"])
        #expect(statuses[libraryID] == "already_present")
        #expect(Set(statuses.keys) == Set(expected.values))
        #expect(statuses.values.filter { $0 == "uploaded" }.count == 3, "\(statuses)")
        #expect(Set(try e2e.modules(version: "4.1").keys) == Set(expected.values))
        #expect(Array(try e2e.modules(version: "4.0").keys) == [libraryID])
        #expect(Set(try e2e.recordedModules().keys) == Set(expected.values))
        #expect(try e2e.server.leftovers().isEmpty)
        #expect(!(result.stdout + result.stderr).contains(e2e.server.key))
    }

    @Test("debuginfod-find fetches a debug file uploaded with --include-debug")
    func debuginfodFind() throws {
        let e2e = try EndToEnd()
        let tree = try BuildTree.make(in: e2e.server.scratch)
        let result = try e2e.upload([tree + "/debuglink", "--version", "5.0", "--include-debug"] + e2e.account)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let id = try BuildTree.buildID(tree + "/debuglink/prog")
        let environment = ["DEBUGINFOD_URLS": e2e.server.base, "DEBUGINFOD_CACHE_PATH": e2e.server.scratch + "/debuginfod"]
        for kind in ["debuginfo", "executable"] {
            let found = try Binary.run("/usr/bin/debuginfod-find", [kind, id], environment: environment)
            #expect(found.status == 0, "\(found.stderr)")
            let path = found.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(try Data(contentsOf: URL(fileURLWithPath: path))
                == Data(contentsOf: URL(fileURLWithPath: tree + "/debuglink/prog.debug")))
        }
        // Uploaded without --include-debug: no debug file to serve.
        let other = try e2e.upload([Binary.fixture("libgreet.so"), "--version", "5.0"] + e2e.account)
        #expect(other.status == 0)
        let absent = try Binary.run("/usr/bin/debuginfod-find",
                                    ["debuginfo", try BuildTree.buildID(Binary.fixture("libgreet.so"))], environment: environment)
        #expect(absent.status != 0)
    }

    @Test("--no-upload -o writes a bundle that --bundle uploads and the server's validator accepts")
    func bundleWrittenThenUploaded() throws {
        let e2e = try EndToEnd()
        let tree = try BuildTree.make(in: e2e.server.scratch)
        let bundle = e2e.server.scratch + "/bundle.zip"
        let written = try e2e.upload([tree, "--version", "6.0", "--app-id", e2e.server.appID, "--include-debug",
                                      "--no-upload", "-o", bundle])
        #expect(written.status == 0, "\(written.stdout)\(written.stderr)")
        #expect(try e2e.recordedModules().isEmpty)
        let sent = try e2e.upload(["--bundle", bundle, "--format", "json"] + e2e.account)
        #expect(sent.status == 0, "\(sent.stdout)\(sent.stderr)")
        let expected = Set(try BuildTree.expected().values)
        #expect(EndToEnd.statuses(sent) == Dictionary(uniqueKeysWithValues: expected.map { ($0, "uploaded") }))
        #expect(Set(try e2e.modules(version: "6.0").keys) == expected)
        #expect(Set(try e2e.recordedModules().keys) == expected)
    }
}
