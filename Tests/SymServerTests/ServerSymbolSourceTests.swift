import Foundation
import Testing

/// The CLI fetching what `crashsym upload` sent to a real `crashsym serve`: tables through
/// `symbolicate --server`, and debug files through the debuginfod client (`--debuginfod`) from the
/// server's `/buildid/` routes.
@Suite struct ServerSymbolSourceTests {
    static func report(buildID: String, offset: String) -> String {
        """
        {"modules":[{"name":"app","path":"/nonexistent/app","build_id":"\(buildID)"}],
         "stacks":[{"name":"main","crashed":true,"frames":[{"index":0,"module_index":0,"module_offset":"\(offset)","address_kind":"exact"}]}]}
        """
    }

    /// The file virtual address 4 bytes into `main` of `path`.
    static func mainAddress(_ path: String) throws -> String {
        let symbols = try Binary.run("/usr/bin/nm", [path]).stdout
        let line = try #require(symbols.split(separator: "\n").first { $0.hasSuffix(" T main") })
        let value = try #require(UInt64(line.split(separator: " ")[0], radix: 16))
        return "0x" + String(value + 4, radix: 16)
    }

    /// The GNU build-id of `path` (readelf's).
    static func buildID(_ path: String) throws -> String {
        let notes = try Binary.run("/usr/bin/readelf", ["-n", path]).stdout
        let line = try #require(notes.split(separator: "\n").first { $0.contains("Build ID:") })
        return String(try #require(line.split(separator: " ").last))
    }

    /// The frames' answers of a `symbolicate --format json` document (what follows `"symbolized"`).
    static func answers(_ json: String) -> String {
        json.components(separatedBy: "\"symbolized\"").dropFirst().joined()
    }

    @Test func symbolicateFetchesUploadedTablesFromTheServer() throws {
        let run = try EndToEnd()
        let program = Binary.fixture("gcc-c-O2-dwarf5")
        let upload = try run.upload([program] + run.account + ["--version", "1.0"])
        #expect(upload.status == 0, "\(upload.stderr)")
        let id = try BuildTree.buildID(program)
        let reportPath = run.server.scratch + "/report.json"
        try Self.report(buildID: id, offset: try Self.mainAddress(program)).write(toFile: reportPath, atomically: true, encoding: .utf8)
        var environment = run.environment
        environment["CRASHSYM_APP_KEY"] = run.server.key
        environment["CRASHSYM_CACHE_DIR"] = run.server.scratch + "/cache/crashsym"

        let offline = try Binary.crashsym(["symbolicate", reportPath, "--format", "json"], environment: environment)
        #expect(offline.stdout.contains("\"no-symbols\""), "nothing local has the module")

        let fetched = try Binary.crashsym(["symbolicate", reportPath, "--format", "json", "--server", run.server.base,
                                           "--app-id", run.server.appID], environment: environment)
        let local = try Binary.crashsym(["symbolicate", reportPath, "--format", "json", "--symbols", program], environment: environment)
        #expect(fetched.status == 0, "\(fetched.stderr)")
        #expect(Self.answers(fetched.stdout).contains("main.c"), "\(fetched.stdout)")
        #expect(Self.answers(fetched.stdout) == Self.answers(local.stdout), "the server's table answers as the binary does")

        // --explain says where the table came from: fetched from the server by this run (text, a
        // fresh cache), or by an earlier one (JSON, the cache above).
        var fresh = environment
        fresh["CRASHSYM_CACHE_DIR"] = run.server.scratch + "/cache-explain"
        let explained = try Binary.crashsym(["symbolicate", reportPath, "--explain", "--server", run.server.base,
                                             "--app-id", run.server.appID], environment: fresh)
        #expect(explained.stdout.contains("main.c"), "\(explained.stdout)")
        #expect(explained.stdout.contains("    tried: fetched from \(run.server.base), build-id matches: \(run.server.base)/api/v1/apps/\(run.server.appID)/symbols/\(id)\n"),
                "\(explained.stdout)")
        let explainedJSON = try Binary.crashsym(["symbolicate", reportPath, "--format", "json", "--explain", "--server", run.server.base,
                                                 "--app-id", run.server.appID], environment: environment)
        #expect(explainedJSON.stdout.contains("\"fetched from \(run.server.base) by an earlier run (kept in the cache), build-id matches: \(run.server.base)/api/v1/apps/\(run.server.appID)/symbols/\(id)\"]"),
                "\(explainedJSON.stdout)")
        let localExplained = try Binary.crashsym(["symbolicate", reportPath, "--explain", "--symbols", program], environment: environment)
        #expect(!localExplained.stdout.contains("tried:"), "a frame resolved from a local file is not explained: \(localExplained.stdout)")

        // A wrong key is explained; a module the server lacks is "not found".
        var wrong = run.environment
        wrong["CRASHSYM_APP_KEY"] = "csk_" + String(repeating: "0", count: 64)
        wrong["CRASHSYM_CACHE_DIR"] = run.server.scratch + "/cache-wrong-key"
        let refused = try Binary.crashsym(["symbolicate", reportPath, "--explain", "--server", run.server.base,
                                           "--app-id", run.server.appID], environment: wrong)
        #expect(refused.stdout.contains("HTTP 401"), "\(refused.stdout)")
        let other = run.server.scratch + "/other.json"
        try Self.report(buildID: String(repeating: "ab", count: 20), offset: "0x10").write(toFile: other, atomically: true, encoding: .utf8)
        let absent = try Binary.crashsym(["symbolicate", other, "--explain", "--server", run.server.base,
                                          "--app-id", run.server.appID], environment: environment)
        #expect(absent.stdout.contains("/symbols/\(String(repeating: "ab", count: 20)): not found"), "\(absent.stdout)")

        // Kept: with the server gone, the next run still answers from what was fetched.
        run.server.crash()
        let cached = try Binary.crashsym(["symbolicate", reportPath, "--format", "json", "--server", run.server.base,
                                          "--app-id", run.server.appID], environment: environment)
        #expect(Self.answers(cached.stdout) == Self.answers(local.stdout), "\(cached.stdout)")

        // Usage errors: a server without an app id, or a URL that is not http(s).
        let noApp = try Binary.crashsym(["symbolicate", reportPath, "--server", run.server.base],
                                        environment: environment.merging(["CRASHSYM_APP_ID": ""]) { $1 })
        #expect(noApp.status == 2 && noApp.stderr.contains("--app-id"), "\(noApp.stderr)")
        let badURL = try Binary.crashsym(["symbolicate", reportPath, "--server", "ftp://x", "--app-id", "a"], environment: environment)
        #expect(badURL.status == 2)
    }

    @Test func theDebuginfodClientReadsUploadedDebugFilesFromTheServer() throws {
        let run = try EndToEnd()
        let program = Binary.fixture("gcc-c-O2-dwarf5")
        // A stripped copy stays here; the full binary is uploaded as the debug file.
        let stripped = run.server.scratch + "/app"
        let strip = try Binary.run("/usr/bin/strip", ["-g", "-o", stripped, program])
        #expect(strip.status == 0)
        let upload = try run.upload([program] + run.account + ["--version", "1.0", "--include-debug"])
        #expect(upload.status == 0, "\(upload.stderr)")
        var environment = run.environment
        environment["DEBUGINFOD_CACHE_PATH"] = run.server.scratch + "/debuginfod-cache"
        environment["DEBUGINFOD_URLS"] = ""
        environment["CRASHSYM_CACHE_DIR"] = run.server.scratch + "/cache/crashsym"
        let address = try Self.mainAddress(program)

        let before = try Binary.crashsym(["lookup", stripped, address], environment: environment)
        #expect(before.stdout.contains("(symbol table only)"))
        let fetched = try Binary.crashsym(["lookup", stripped, address, "--debuginfod", run.server.base], environment: environment)
        let reference = try Binary.crashsym(["lookup", program, address], environment: environment)
        #expect(fetched.stdout == reference.stdout, "\(fetched.stderr)")
        #expect(reference.stdout.contains("main.c:"))

        // The drop-ins fetch too, from DEBUGINFOD_URLS (each with a cache of its own, so each asks
        // the server): addr2line and llvm-symbolizer answer for the stripped copy as for the program.
        let programID = try Self.buildID(program)
        for (index, command) in [["addr2line", "-f", "-e"], ["llvm-symbolizer", "--obj"]].enumerated() {
            var viaEnvironment = environment
            viaEnvironment["DEBUGINFOD_URLS"] = run.server.base
            viaEnvironment["DEBUGINFOD_CACHE_PATH"] = run.server.scratch + "/debuginfod-cache-\(index)"
            let dropIn = { (file: String) in try Binary.crashsym(command + [file, address], environment: viaEnvironment) }
            let (strippedAnswer, programAnswer) = (try dropIn(stripped), try dropIn(program))
            #expect(strippedAnswer.stdout == programAnswer.stdout, "\(command[0]): \(strippedAnswer.stdout) \(strippedAnswer.stderr)")
            #expect(strippedAnswer.stdout.contains("main.c:"), "\(command[0]): \(strippedAnswer.stdout)")
            let cached = viaEnvironment["DEBUGINFOD_CACHE_PATH"]! + "/" + programID + "/debuginfo"
            #expect(FileManager.default.fileExists(atPath: cached), "\(command[0]) fetched nothing into \(cached)")
        }
    }
}
