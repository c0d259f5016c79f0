import Foundation
import Testing

/// `POST/GET …/symbolicate`, `GET/HEAD …/symbols/{buildId}` and the debuginfod additions, against
/// a real `crashsym serve`, with `crashsym symbolicate` and `crashsym lookup` as the oracles.
@Suite(.serialized)
struct SymbolicateEndpointTests {
    /// One server with every fixture program's table uploaded, and the same tables on disk for the CLI.
    struct Fixture {
        let server: TestServer
        let tables: String
        let modules: [ModuleFiles]

        /// `programs`: the fixture programs to upload (nil: all, and the system debug files).
        init(programs: [String]? = ["libfault.so", "prog-asan", "libfault-asan.so", "sanitizers-tsan"]) throws {
            server = try TestServer()
            tables = server.scratch + "/tables"
            try FileManager.default.createDirectory(atPath: tables, withIntermediateDirectories: true)
            modules = try CrashFixtures.tables(into: tables, programs: programs)
            try CrashFixtures.upload(modules, to: server, version: "1.0")
        }
    }

    @Test("POST symbolicate answers byte for byte what crashsym symbolicate prints, on every report fixture")
    func matchesTheCLI() throws {
        let fixture = try Fixture(programs: nil)
        #expect(CrashFixtures.reportFiles.count >= 12)
        for report in CrashFixtures.reportFiles {
            try compare(report, fixture)
        }
    }

    private func compare(_ report: String, _ fixture: Fixture) throws {
        let path = CrashFixtures.reports + "/" + report
        for (query, flags) in [("version=1.0", ["--format", "json"]), ("version=1.0&format=text", [])] {
            let cli = try Binary.crashsym(["symbolicate", path, "--symbols", fixture.tables, "--no-module-paths", "--no-cache"] + flags)
            #expect(cli.status == 0, "\(cli.stderr)")
            let answer = try fixture.server.post("symbolicate", file: path, query: query)
            #expect(answer.status == 200, "\(answer.text)")
            // A frame's reason may name the table it read (the server's store or the CLI's
            // --symbols directory): the one place where the two outputs may differ.
            // The CLI's JSON document starts with the file it read ("source"); a request body has
            // no file name, so the server's document is the rest.
            let expected = flags.isEmpty ? cli.stdout : cli.stdout.replacing(/^\{"source":"[^"]*",/, with: "{")
            #expect(Self.withoutTablePaths(answer.text) == Self.withoutTablePaths(expected), "\(report) \(query)")
            #expect(answer.headers["content-type"] == (flags.isEmpty ? "text/plain; charset=utf-8" : "application/json"))
        }
    }

    /// `text` with every table location written `<table>`: a `.csym` path (the CLI's) or a
    /// table's URL (the server's).
    static func withoutTablePaths(_ text: String) -> String {
        text.replacing(/\/[^ "\]\n]*\.csym/, with: "<table>").replacing(/\/api\/v1\/apps\/[^\/]+\/symbols\/[0-9a-f]+/, with: "<table>")
    }

    @Test("glibc `func+0x…` frames: the server's tables alone place them as the CLI does with the ELF files, at nm's value plus the offset, as llvm-symbolizer names them")
    func glibcSymbolFrames() throws {
        let fixture = try Fixture(programs: ["libfault.so", "prog"])
        let path = CrashFixtures.reports + "/glibc-backtrace.txt"
        let cli = try Binary.crashsym(["symbolicate", path, "--symbols", CrashFixtures.programs, "--no-module-paths", "--no-cache"])
        #expect(cli.status == 0, "\(cli.stderr)")
        let text = try fixture.server.post("symbolicate", file: path, query: "version=1.0&format=text")
        #expect(text.status == 200, "\(text.text)")
        #expect(text.text == cli.stdout)
        // Each libfault.so frame, as the server placed it: nm's value of the named function plus
        // the printed offset, looked up one byte back (a return address), named as
        // llvm-symbolizer names that address in the ELF file.
        let answer = try fixture.server.post("symbolicate", file: path, query: "version=1.0")
        let stacks = try #require(answer.json["stacks"] as? [[String: Any]])
        let frames = try #require(stacks.first?["frames"] as? [[String: Any]])
        let library = CrashFixtures.programs + "/libfault.so"
        let nm = try Binary.run("/usr/bin/nm", ["--defined-only", library]).stdout
        let value = try #require(nm.split(separator: "\n").first { $0.hasSuffix(" T fault_backtrace") }
            .flatMap { UInt64($0.prefix { $0 != " " }, radix: 16) })
        var placed = 0
        for (frame, line) in zip(frames, try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")) where line.contains("(fault_backtrace+0x") {
            let offset = try #require(UInt64(line.split(separator: "+0x")[1].prefix { $0.isHexDigit }, radix: 16))
            #expect(frame["status"] as? String == "ok")
            #expect(frame["module_offset"] as? String == "0x" + String(value + offset, radix: 16))
            let oracle = try Binary.run("/opt/swift/usr/bin/llvm-symbolizer",
                                        ["--obj=" + library, "--inlining", "--no-demangle", "0x" + String(value + offset - 1, radix: 16)]).stdout
            let oracleLines = oracle.split(separator: "\n")
            let symbolized = try #require(frame["symbolized"] as? [[String: Any]])
            #expect(symbolized.count * 2 == oracleLines.count)
            for (index, location) in symbolized.enumerated() where index * 2 + 1 < oracleLines.count {
                #expect(location["mangled"] as? String == String(oracleLines[index * 2]))
                let position = "\(location["file"] as? String ?? ""):\(location["line"] as? Int ?? 0):\(location["column"] as? Int ?? 0)"
                #expect(position == String(oracleLines[index * 2 + 1]))
            }
            placed += 1
        }
        #expect(placed == 3)
    }

    @Test("the reports resolve through the server's tables (not only unresolved frames on both sides)")
    func resolves() throws {
        let fixture = try Fixture()
        let answer = try fixture.server.post("symbolicate", file: CrashFixtures.reports + "/asan-use-after-free.txt")
        #expect(answer.status == 200)
        #expect(answer.text.contains(#""function":"fault_use_after_free""#))
        #expect(answer.text.contains(#""status":"ok""#))
    }

    @Test("symbols uploaded after a request are used by the next one (the tables remembered for the app are forgotten)")
    func lateUploadIsSeenAtOnce() throws {
        let fixture = try Fixture(programs: ["prog-asan"])
        let path = CrashFixtures.reports + "/asan-use-after-free.txt"
        // Twice: the second answer comes from the remembered tables.
        for _ in 0..<2 {
            let before = try fixture.server.post("symbolicate", file: path)
            #expect(before.status == 200)
            #expect(!before.text.contains(#""function":"fault_use_after_free""#))
            #expect(before.text.contains(#""status":"no-symbols""#))
        }
        try CrashFixtures.upload(try CrashFixtures.tables(into: fixture.tables, programs: ["libfault-asan.so"]),
                                 to: fixture.server, version: "1.0")
        let after = try fixture.server.post("symbolicate", file: path)
        #expect(after.text.contains(#""function":"fault_use_after_free""#), "\(after.text.prefix(400))")
    }

    @Test("GET symbolicate: a table uploaded after a 404 is answered by the next lookup (the absence remembered is forgotten)")
    func lateUploadIsSeenByLookup() throws {
        let fixture = try Fixture(programs: ["prog-asan"])
        let late = try CrashFixtures.tables(into: fixture.tables, programs: ["libfault.so"])
        let module = try #require(late.first(where: { $0.name == "libfault.so" }))
        let route = "symbolicate?build_id=\(module.buildID)&address=0x850"
        // Twice: the second 404 comes from the remembered absence.
        for _ in 0..<2 { #expect(try fixture.server.get(route).status == 404) }
        try CrashFixtures.upload(late, to: fixture.server, version: "1.0")
        let after = try fixture.server.get(route)
        #expect(after.status == 200, "\(after.text.prefix(400))")
        let cli = try Binary.crashsym(["lookup", module.symbols, "--format", "json", "0x850"])
        #expect(after.text == cli.stdout)
    }

    @Test("explain adds what was tried for each unresolved frame")
    func explain() throws {
        let fixture = try Fixture()
        let path = CrashFixtures.reports + "/tsan-data-race.txt"
        let plain = try fixture.server.post("symbolicate", file: path, query: "format=text")
        let explained = try fixture.server.post("symbolicate", file: path, query: "format=text&explain=1")
        #expect(!plain.text.contains("tried:"))
        #expect(explained.text.contains("    tried: "))
        let json = try fixture.server.post("symbolicate", file: path, query: "explain=1")
        #expect(json.text.contains(#""tried":["#))
    }

    @Test("input_format forces the parser, as --input-format does")
    func inputFormat() throws {
        let fixture = try Fixture()
        let path = CrashFixtures.reports + "/glibc-backtrace.txt"
        let forced = try fixture.server.post("symbolicate", file: path, query: "input_format=eu-stack")
        let cli = try Binary.crashsym(["symbolicate", path, "--symbols", fixture.tables, "--no-module-paths", "--no-cache",
                                       "--input-format", "eu-stack", "--format", "json"])
        #expect(forced.status == (cli.status == 0 ? 200 : 400))
        if cli.status == 0 { #expect(forced.text == cli.stdout) }
        let unknown = try fixture.server.post("symbolicate", file: path, query: "input_format=nope")
        #expect(unknown.status == 400)
        #expect(unknown.errorCode == "bad-request")
    }

    @Test("an unreadable report is a 400 naming the line; no key is a 401; an oversized body a 413")
    func errors() throws {
        let fixture = try Fixture()
        let scratch = fixture.server.scratch
        let notReport = scratch + "/not-a-report.txt"
        try "hello\nworld\n".write(toFile: notReport, atomically: true, encoding: .utf8)
        let bad = try fixture.server.post("symbolicate", file: notReport)
        #expect(bad.status == 400)
        #expect(((bad.json["error"] as? [String: Any])?["message"] as? String)?.contains("line 1") == true, "\(bad.text)")
        let anonymous = try fixture.server.post("symbolicate", file: CrashFixtures.reports + "/tombstone-arm64.txt", key: .some(nil))
        #expect(anonymous.status == 401)
        let wrong = try fixture.server.post("symbolicate", file: CrashFixtures.reports + "/tombstone-arm64.txt", key: "csk_wrong")
        #expect(wrong.status == 401)
        let big = scratch + "/big.txt"
        try Data(repeating: UInt8(ascii: "a"), count: 17 << 20).write(to: URL(fileURLWithPath: big))
        let tooLarge = try fixture.server.post("symbolicate", file: big)
        #expect(tooLarge.status == 413)
        #expect(tooLarge.errorCode == "too-large")
    }

    @Test("GET symbolicate answers each address as crashsym lookup --format json does")
    func lookup() throws {
        let fixture = try Fixture()
        guard let module = fixture.modules.first(where: { $0.name == "libfault.so" }) else { throw TestFailure("no libfault table") }
        let addresses = ["0x850", "0x8b0", "0x90e", "0x0", "0xffffffff"]  // functions of `nm libfault.so`, and none
        let answer = try fixture.server.get("symbolicate?build_id=\(module.buildID)&" + addresses.map { "address=\($0)" }.joined(separator: "&"))
        #expect(answer.status == 200, "\(answer.text)")
        let cli = try Binary.crashsym(["lookup", module.symbols, "--format", "json"] + addresses)
        #expect(cli.status == 0)
        #expect(answer.text == cli.stdout)
        #expect(answer.text.contains(#""function":"#))
        // Later requests render from the names kept with the table: the same bytes, in another order too.
        let again = try fixture.server.get("symbolicate?build_id=\(module.buildID)&" + addresses.map { "address=\($0)" }.joined(separator: "&"))
        #expect(again.text == cli.stdout)
        let reversed = try fixture.server.get("symbolicate?build_id=\(module.buildID)&" + addresses.reversed().map { "address=\($0)" }.joined(separator: "&"))
        let cliReversed = try Binary.crashsym(["lookup", module.symbols, "--format", "json"] + addresses.reversed())
        #expect(reversed.text == cliReversed.stdout)


        #expect(try fixture.server.get("symbolicate?build_id=\(module.buildID)").status == 400)
        #expect(try fixture.server.get("symbolicate?build_id=\(module.buildID)&address=zz").status == 400)
        #expect(try fixture.server.get("symbolicate?build_id=nothex&address=0x1").status == 400)
        #expect(try fixture.server.get("symbolicate?build_id=\(String(repeating: "ab", count: 20))&address=0x1").status == 404)
        let many = (0...1000).map { "address=0x\(String($0, radix: 16))" }.joined(separator: "&")
        #expect(try fixture.server.get("symbolicate?build_id=\(module.buildID)&" + many).status == 400)
    }

    @Test("GET and HEAD symbols/{buildId} serve the stored table with its SHA-256 as ETag")
    func table() throws {
        let fixture = try Fixture()
        let module = fixture.modules[0]
        let expected = try Data(contentsOf: URL(fileURLWithPath: module.symbols))
        let sha256 = try Bundles.sha256(module.symbols)
        let answer = try fixture.server.get("symbols/\(module.buildID)")
        #expect(answer.status == 200)
        #expect(answer.body == expected)
        #expect(answer.headers["etag"] == "\"\(sha256)\"")
        let head = try fixture.server.request("HEAD", "/api/v1/apps/\(fixture.server.appID)/symbols/\(module.buildID)", extra: ["-I"])
        #expect(head.status == 200)
        #expect(head.headers["content-length"] == String(expected.count))
        #expect(head.headers["etag"] == "\"\(sha256)\"")
        let cached = try fixture.server.request("GET", "/api/v1/apps/\(fixture.server.appID)/symbols/\(module.buildID)",
                                                extra: ["-H", "If-None-Match: \"\(sha256)\""])
        #expect(cached.status == 304)
        #expect(cached.body.isEmpty)
        #expect(try fixture.server.get("symbols/\(String(repeating: "cd", count: 20))").status == 404)
        #expect(try fixture.server.get("symbols/xyz").status == 400)
        let anonymous = try fixture.server.request("GET", "/api/v1/apps/\(fixture.server.appID)/symbols/\(module.buildID)", key: .some(nil))
        #expect(anonymous.status == 401)
    }

    @Test("debuginfod: HEAD answers like GET without a body; source paths are a JSON 404")
    func debuginfod() throws {
        let server = try TestServer()
        let directory = server.scratch + "/up"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let module = try Bundles.dump(fixture: "gcc-c-O2-dwarf5", into: directory)
        let bundle = directory + "/b.zip"
        try Bundles.bundle(to: bundle, appID: server.appID, version: "1", modules: [module])
        #expect(try server.upload(bundle).status == 201)
        let size = try Bundles.size(Binary.fixture("gcc-c-O2-dwarf5"))
        for kind in ["debuginfo", "executable"] {
            let get = try server.request("GET", "/buildid/\(module.buildID)/\(kind)", key: .some(nil))
            let head = try server.request("HEAD", "/buildid/\(module.buildID)/\(kind)", key: .some(nil), extra: ["-I"])
            #expect(get.status == 200)
            #expect(head.status == 200)
            #expect(head.headers["content-length"] == String(size))
            #expect(head.headers["x-debuginfod-size"] == String(size))
        }
        let missing = try server.request("HEAD", "/buildid/\(String(repeating: "ef", count: 20))/debuginfo", key: .some(nil), extra: ["-I"])
        #expect(missing.status == 404)
        let source = try server.request("GET", "/buildid/\(module.buildID)/source/usr/src/app/main.c", key: .some(nil))
        #expect(source.status == 404)
        #expect(source.errorCode == "not-found")
        #expect(try server.request("GET", "/buildid/zz/source/a.c", key: .some(nil)).status == 400)
    }
}
