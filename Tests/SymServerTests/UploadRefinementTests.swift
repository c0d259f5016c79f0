import Foundation
import Testing

/// Issue 19, items 10–17 and 22 (upload, apps, serve), against a real `crashsym serve` on 127.0.0.1
/// and the real `crashsym upload`: the README's example, improving a stored module, errors printed
/// once and early, `--bundle` taken from its manifest, stores never created by reading commands,
/// one-line startup errors, Bugly's current flags, config keys, and the small hardening items.
/// Oracles: readelf (build-ids), sqlite3 (rows), `crashsym dump` (tables), strip/objcopy (inputs).
@Suite("issue 19: upload, apps and serve")
struct UploadRefinementTests {
    static let library = Binary.fixture("libgreet.so")
    static let app = Binary.fixture("greet-app")

    /// `sqlite3 -readonly` of the server's metadata, one line per row.
    static func query(_ e2e: EndToEnd, _ sql: String) throws -> [String] {
        let result = try Binary.run("/usr/bin/sqlite3", ["-readonly", "-separator", " ", e2e.server.dataDirectory + "/metadata.sqlite", sql])
        guard result.status == 0 else { throw TestFailure("sqlite3: \(result.stderr)") }
        return result.stdout.split(separator: "\n").map(String.init)
    }

    /// A copy of `source` passed through `tool` (`strip`, `objcopy --strip-debug`) in `directory`.
    static func stripped(_ source: String, in directory: String, _ arguments: [String]) throws -> String {
        let path = directory + "/" + (source as NSString).lastPathComponent
        let result = try Binary.run("/usr/bin/objcopy", arguments + [source, path])
        guard result.status == 0 else { throw TestFailure("objcopy: \(result.stderr)") }
        return path
    }

    /// The SHA-256 `crashsym dump` gives the table of `elf`.
    static func dumpedTableSHA256(_ elf: String, scratch: String) throws -> String {
        let directory = scratch + "/dump-" + UUID().uuidString
        let dump = try Binary.crashsym(["dump", elf, "-o", directory])
        guard dump.status == 0 else { throw TestFailure("dump: \(dump.stderr)") }
        let id = try BuildTree.buildID(elf)
        return String(try Binary.run("/usr/bin/sha256sum", [directory + "/\(id).csym"]).stdout.prefix(64))
    }

    // MARK: 10

    /// The README's own lines, run as written (data directory, server and key filled in): the app
    /// created by `apps create` is the app the upload line names.
    @Test("10: the README's apps create and upload lines work together")
    func readmeExample() throws {
        let e2e = try EndToEnd()
        let readme = try String(contentsOfFile: Binary.root.appendingPathComponent("README.md").path, encoding: .utf8)
        var lines: [String] = []
        var pending = ""
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false) {
            let text = pending + line.trimmingCharacters(in: .whitespaces)
            if text.hasSuffix("\\") { pending = String(text.dropLast()) + " "; continue }
            pending = ""
            lines.append(String(text.split(separator: "#", maxSplits: 1).first ?? "").trimmingCharacters(in: .whitespaces))
        }
        let create = try #require(lines.first { $0.hasPrefix("crashsym apps create demo") && $0.contains("--data-dir") })
        let upload = try #require(lines.first { $0.hasPrefix("crashsym upload build/out --app-id") && $0.contains("--server") })
        func words(_ line: String) -> [String] {
            Array(line.split(separator: " ").map { $0.replacingOccurrences(of: "\"", with: "") }.dropFirst())
        }
        let created = try Binary.crashsym(words(create).map { $0 == "/var/lib/crashsym" ? e2e.server.dataDirectory : $0 })
        #expect(created.status == 0, "\(create): \(created.stderr)")
        let key = try #require(created.stdout.split(separator: "\n").first { $0.contains("key: ") }?.split(separator: " ").last)
        let tree = try BuildTree.make(in: e2e.server.scratch)
        let arguments = words(upload).map {
            $0 == "build/out" ? tree : $0 == "$KEY" ? String(key) : $0.hasPrefix("https://") ? e2e.server.base : $0
        }
        let result = try Binary.crashsym(arguments, environment: e2e.environment)
        #expect(result.status == 0, "\(upload)\n\(result.stdout)\(result.stderr)")
        #expect(result.stdout.hasSuffix("4 modules: 4 uploaded, 0 already present, 0 failed\n"))
    }

    @Test("10, 12: a 401 says once which id to use; nothing is printed per module")
    func unauthorizedIsExplainedOnce() throws {
        let e2e = try EndToEnd()
        let result = try e2e.upload([Self.library, Self.app, "--version", "1", "--server", e2e.server.base,
                                     "--app-id", "demo", "--app-key", e2e.server.key])
        #expect(result.status == 1)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(result.stderr)")
        #expect(lines.first?.contains("HTTP 401 unauthorized") == true)
        #expect(lines.first?.contains("check that --app-id is the id printed by `crashsym apps create`") == true)
        #expect(!result.stdout.contains("401"), "\(result.stdout)")
        #expect(result.stdout.hasSuffix("2 modules: 0 uploaded, 0 already present, 2 failed\n"))
    }

    // MARK: 11

    @Test("11: a stripped upload first is improved by the unstripped binary; a poorer one never replaces it")
    func aStrippedModuleIsImproved() throws {
        let e2e = try EndToEnd()
        let scratch = e2e.server.scratch
        try FileManager.default.createDirectory(atPath: scratch + "/stripped", withIntermediateDirectories: true)
        let stripped = try Self.stripped(Self.library, in: scratch + "/stripped", ["--strip-all"])
        let id = try BuildTree.buildID(Self.library)
        #expect(try BuildTree.buildID(stripped) == id)

        let first = try e2e.upload([stripped, "--version", "1", "--format", "json"] + e2e.account)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(EndToEnd.statuses(first) == [id: "uploaded"])
        #expect(first.stderr.contains("warning: 1 of 1 modules have no DWARF"), "\(first.stderr)")
        #expect(try Self.query(e2e, "SELECT has_dwarf FROM module") == ["0"])

        // The server says the DWARF-carrying module would improve what it has; old requests are answered as before.
        let asked = try e2e.server.request("POST", "/api/v1/apps/\(e2e.server.appID)/symbols/missing", json: """
            {"version": "1", "modules": [{"build_id": "\(id)", "has_dwarf": true}]}
            """)
        #expect(asked.json["present"] as? [String] == [id] && asked.json["improvable"] as? [String] == [id], "\(asked.text)")
        let old = try e2e.server.request("POST", "/api/v1/apps/\(e2e.server.appID)/symbols/missing", json: """
            {"version": "1", "modules": [{"build_id": "\(id)"}]}
            """)
        #expect(old.json["present"] as? [String] == [id] && old.json["improvable"] as? [String] == [], "\(old.text)")

        let second = try e2e.upload([Self.library, "--version", "2"] + e2e.account)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout == "improved        \(id)  libgreet.so\n1 modules: 0 uploaded, 1 improved, 0 already present, 0 failed\n")
        let full = try Self.dumpedTableSHA256(Self.library, scratch: scratch)
        #expect(try e2e.recordedModules()[id]?.symbols == full)
        #expect(try Self.query(e2e, "SELECT has_dwarf FROM module") == ["1"])
        // Both versions list it.
        #expect(try e2e.modules(version: "1")[id]?["has_dwarf"] as? Bool == true)

        // Nothing more to improve: no loop of uploads. A poorer table sent as a bundle is refused politely.
        let third = try e2e.upload([Self.library, "--version", "2", "--format", "json"] + e2e.account)
        #expect(EndToEnd.statuses(third) == [id: "already_present"])
        let bundle = scratch + "/stripped.zip"
        #expect(try e2e.upload([stripped, "--version", "3", "-o", bundle, "--app-id", e2e.server.appID]).status == 0)
        let poorer = try e2e.upload(["--bundle", bundle, "--format", "json"] + e2e.account)
        #expect(EndToEnd.statuses(poorer) == [id: "already_present"], "\(poorer.stdout)\(poorer.stderr)")
        #expect(try e2e.recordedModules()[id]?.symbols == full)
    }

    @Test("11: a debug file sent later completes the module; a full .symtab improves a .dynsym-only table")
    func completionAndMoreSymbols() throws {
        let e2e = try EndToEnd()
        let scratch = e2e.server.scratch
        let id = try BuildTree.buildID(Self.library)
        #expect(try e2e.upload([Self.library, "--version", "1"] + e2e.account).status == 0)
        #expect(try e2e.recordedModules()[id]?.debug == nil)
        let table = try #require(try e2e.recordedModules()[id]?.symbols)
        let again = try e2e.upload([Self.library, "--version", "1", "--include-debug", "--format", "json"] + e2e.account)
        #expect(EndToEnd.statuses(again) == [id: "improved"], "\(again.stdout)\(again.stderr)")
        let row = try #require(try e2e.recordedModules()[id])
        #expect(row.symbols == table)  // the same table: only the debug file was added
        let debug = try #require(row.debug)
        #expect(try Data(contentsOf: URL(fileURLWithPath: e2e.objectPath(debug))) == Data(contentsOf: URL(fileURLWithPath: Self.library)))

        // Symbol tables only: .dynsym first, then the same binary with its .symtab (no DWARF either way).
        try FileManager.default.createDirectory(atPath: scratch + "/a", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: scratch + "/b", withIntermediateDirectories: true)
        let appID = try BuildTree.buildID(Self.app)
        let dynsym = try Self.stripped(Self.app, in: scratch + "/a", ["--strip-all"])
        let symtab = try Self.stripped(Self.app, in: scratch + "/b", ["--strip-debug"])
        #expect(try e2e.upload([dynsym, "--version", "1"] + e2e.account).status == 0)
        let bundle = scratch + "/symtab.zip"
        #expect(try e2e.upload([symtab, "--version", "1", "-o", bundle, "--app-id", e2e.server.appID]).status == 0)
        let richer = try e2e.upload(["--bundle", bundle, "--format", "json"] + e2e.account)
        #expect(EndToEnd.statuses(richer) == [appID: "improved"], "\(richer.stdout)\(richer.stderr)")
        #expect(try e2e.recordedModules()[appID]?.symbols == Self.dumpedTableSHA256(symtab, scratch: scratch))
    }

    @Test("11: --strict fails modules without DWARF and uploads none of them")
    func strictRefusesNamesOnlyModules() throws {
        let e2e = try EndToEnd()
        try FileManager.default.createDirectory(atPath: e2e.server.scratch + "/s", withIntermediateDirectories: true)
        let stripped = try Self.stripped(Self.library, in: e2e.server.scratch + "/s", ["--strip-all"])
        let result = try e2e.upload([stripped, Self.app, "--version", "1", "--strict"] + e2e.account)
        #expect(result.status == 1)
        #expect(result.stderr.contains("1 of 2 modules have no DWARF"), "\(result.stderr)")
        #expect(result.stdout.contains("failed          \(try BuildTree.buildID(stripped))  libgreet.so: no DWARF"))
        #expect(Set(try e2e.recordedModules().keys) == [try BuildTree.buildID(Self.app)])
    }

    // MARK: 12, 13

    @Test("12: -o -u writes every module even when the server has them all")
    func outputAlwaysWrites() throws {
        let e2e = try EndToEnd()
        #expect(try e2e.upload([Self.library, Self.app, "--version", "1"] + e2e.account).status == 0)
        let bundle = e2e.server.scratch + "/all.zip"
        let result = try e2e.upload([Self.library, Self.app, "--version", "1", "-o", bundle, "-u"] + e2e.account)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("2 modules: 0 uploaded, 2 already present, 0 failed"))
        let entries = try Binary.run("/usr/bin/unzip", ["-Z1", bundle]).stdout.split(separator: "\n").map(String.init)
        #expect(entries == ["manifest.json", "symbols/\(try BuildTree.buildID(Self.library)).csym",
                            "symbols/\(try BuildTree.buildID(Self.app)).csym"])
        #expect(try e2e.counter("crashsym_uploads_total") == 1)  // nothing sent again
    }

    @Test("12: -o into a missing directory, a bad version, a bad URL: one line, before any work")
    func earlyErrorsAreOneLine() throws {
        let e2e = try EndToEnd()
        let missing = e2e.server.scratch + "/no/such/dir/out.zip"
        let output = try e2e.upload([Self.library, Self.app, "--version", "1", "-o", missing, "--app-id", "demo"])
        #expect(output.status == 1)
        #expect(output.stderr == "crashsym: -o \(missing): the directory \(e2e.server.scratch)/no/such/dir does not exist; create it first\n")

        let written = e2e.server.scratch + "/v.zip"
        let version = try e2e.upload([Self.library, "--version", "v 1/2", "-o", written, "--app-id", "demo"])
        #expect(version.status == 2)
        #expect(version.stderr.contains("--version 'v 1/2' must be 1 to 128 characters"))
        #expect(!FileManager.default.fileExists(atPath: written))

        let url = try e2e.upload([Self.library, Self.app, "--version", "1", "--server", "ftp://127.0.0.1/", "--app-id", "demo",
                                  "--app-key", "k"])
        #expect(url.status == 1)
        #expect(url.stderr == "crashsym: server URL must start with http:// or https://: 'ftp://127.0.0.1/'\n")
    }

    @Test("12, 22: an unreachable server is one error; a password in --server never reaches a line")
    func unreachableServerOnceAndRedacted() throws {
        let e2e = try EndToEnd()
        let port = e2e.server.port
        _ = e2e.server.terminate()
        let result = try e2e.upload([Self.library, Self.app, "--version", "1", "--server", "http://ci:s3cr3t-pw@127.0.0.1:\(port)",
                                     "--app-id", "demo", "--app-key", "k", "--timeout", "3"])
        #expect(result.status == 1)
        #expect(!result.stdout.contains("s3cr3t-pw") && !result.stderr.contains("s3cr3t-pw"), "\(result.stderr)")
        #expect(result.stderr.contains("retrying POST http://ci:***@127.0.0.1:\(port)/api/v1/apps/demo/symbols/missing"))
        let errors = result.stderr.split(separator: "\n").filter { $0.hasPrefix("crashsym: ") }
        #expect(errors.count == 1, "\(result.stderr)")
        #expect(errors.first?.contains("cannot reach http://ci:***@127.0.0.1:\(port)") == true)
        #expect(result.stdout.hasSuffix("2 modules: 0 uploaded, 0 already present, 2 failed\n"))
    }

    @Test("13: --bundle names and counts the manifest's modules; another version is refused with the reason")
    func bundleUsesItsManifest() throws {
        let e2e = try EndToEnd()
        let bundle = e2e.server.scratch + "/later.zip"
        #expect(try e2e.upload([Self.library, Self.app, "--version", "7", "-o", bundle, "--app-id", e2e.server.appID]).status == 0)
        let library = try BuildTree.buildID(Self.library), app = try BuildTree.buildID(Self.app)

        let refused = try e2e.upload(["--bundle", bundle, "--version", "8"] + e2e.account)
        #expect(refused.status == 1)
        #expect(refused.stderr == "crashsym: \(bundle) holds version 7, not --version 8: a bundle is uploaded as it is, "
            + "so write it again with --version 8, or leave --version out\n")
        #expect(refused.stdout == "failed          \(library)  libgreet.so\nfailed          \(app)  greet-app\n"
            + "2 modules: 0 uploaded, 0 already present, 2 failed\n")
        #expect(try e2e.counter("crashsym_uploads_total") == 0)

        let sent = try e2e.upload(["--bundle", bundle, "--version", "7"] + e2e.account)
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(sent.stdout == "uploaded        \(library)  libgreet.so\nuploaded        \(app)  greet-app\n"
            + "2 modules: 2 uploaded, 0 already present, 0 failed\n")
    }

    // MARK: 14, 15

    @Test("14: apps list and rotate-key refuse a directory holding no store, and create nothing")
    func readingCommandsCreateNoStore() throws {
        let scratch = try Binary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let typo = scratch + "/crashsym-dta"
        let list = try Binary.crashsym(["apps", "list", "--data-dir", typo])
        #expect(list.status == 1)
        #expect(list.stderr == "crashsym: no data directory \(typo): check --data-dir; only `crashsym serve` and `crashsym apps create` create one\n")
        #expect(!FileManager.default.fileExists(atPath: typo))
        let rotate = try Binary.crashsym(["apps", "rotate-key", "demo", "--data-dir", scratch])
        #expect(rotate.status == 1)
        #expect(rotate.stderr.contains("holds no crashsym store"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch).isEmpty)
        // create makes one, which list then reads.
        #expect(try Binary.crashsym(["apps", "create", "demo", "--id", "demo", "--data-dir", typo]).status == 0)
        #expect(try Binary.crashsym(["apps", "list", "--data-dir", typo]).stdout.hasPrefix("demo  "))
    }

    @Test("15: a busy port and unusable data directories are one line that says what to do")
    func startupErrorsAreOneLine() throws {
        let server = try TestServer()
        let busy = try Binary.crashsym(["serve", "--data-dir", server.scratch + "/other", "--port", String(server.port)])
        #expect(busy.status == 1)
        #expect(busy.stderr == "crashsym: cannot listen on 127.0.0.1:\(server.port): the port is in use by another process; "
            + "stop it or choose another --port (0 picks a free one)\n")

        let file = server.scratch + "/a-file"
        _ = FileManager.default.createFile(atPath: file, contents: Data("x".utf8))
        for (directory, expected) in [
            (file, "crashsym: the data directory \(file) is not a directory: choose another --data-dir\n"),
            (file + "/sub", "crashsym: cannot use the data directory \(file)/sub: Not a directory; choose another --data-dir\n"),
        ] {
            for command in [["serve", "--port", "0"], ["apps", "create", "x"]] {
                let result = try Binary.crashsym(command + ["--data-dir", directory])
                #expect(result.status == 1)
                #expect(result.stderr == expected, "\(command)")
            }
        }
        let garbage = server.scratch + "/garbage"
        try FileManager.default.createDirectory(atPath: garbage, withIntermediateDirectories: true)
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: garbage + "/metadata.sqlite"))
        let result = try Binary.crashsym(["apps", "list", "--data-dir", garbage])
        #expect(result.status == 1)
        #expect(result.stderr.split(separator: "\n").count == 1)
        #expect(result.stderr.hasPrefix("crashsym: \(garbage)/metadata.sqlite cannot be opened as crashsym's database (SQLite: "))
        #expect(result.stderr.hasSuffix("check the file and its permissions, or choose another --data-dir\n"))
    }

    // MARK: 16, 17

    @Test("16: the current Bugly uploader's spelling")
    func buglyCurrentFlags() throws {
        let e2e = try EndToEnd()
        let mapping = e2e.server.scratch + "/mapping.txt"
        _ = FileManager.default.createFile(atPath: mapping, contents: Data("a -> b:\n".utf8))
        let result = try e2e.upload(["-appid", e2e.server.appID, "-appkey", e2e.server.key, "-bundleid", "com.example.bugly",
                                     "-version", "3.2.1", "-platform", "Android", "-inputSymbol", Self.library,
                                     "-inputSymbol", Self.app, "-inputMapping", mapping, "--server", e2e.server.base])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.hasSuffix("2 modules: 2 uploaded, 0 already present, 0 failed\n"))
        #expect(result.stderr.contains("warning: -inputMapping \(mapping) ignored"))
        #expect(try Self.query(e2e, "SELECT version, package, platform FROM version") == ["3.2.1 com.example.bugly android"])
        #expect(Set(try e2e.modules(version: "3.2.1").keys) == [try BuildTree.buildID(Self.library), try BuildTree.buildID(Self.app)])
    }

    @Test("17: the config file's keys are the flag names, as serve's; the old ones still work, with a note")
    func configKeys() throws {
        let e2e = try EndToEnd()
        let config = e2e.server.scratch + "/config.json"
        for (keys, note) in [(["server", "app-id", "app-key"], false), (["server", "app_id", "app_key"], true)] {
            try JSONSerialization.data(withJSONObject: [keys[0]: e2e.server.base, keys[1]: e2e.server.appID, keys[2]: e2e.server.key])
                .write(to: URL(fileURLWithPath: config))
            let result = try e2e.upload([Self.library, "--version", "1", "--config", config])
            #expect(result.status == 0, "\(keys): \(result.stderr)")
            #expect(result.stderr.contains("\"app_id\" is deprecated, write \"app-id\"") == note, "\(result.stderr)")
        }
        try JSONSerialization.data(withJSONObject: ["server": e2e.server.base, "appid": "x"]).write(to: URL(fileURLWithPath: config))
        let unknown = try e2e.upload([Self.library, "--version", "1", "--config", config])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("unknown setting \"appid\""))
    }

    // MARK: 22

    @Test("22: symbols/missing validates the package as a manifest's", arguments: [
        "a\\u0000b", "line\\nbreak", "tab\\there", String(repeating: "p", count: 256),
    ])
    func missingValidatesThePackage(package: String) throws {
        let e2e = try EndToEnd()
        let answer = try e2e.server.request("POST", "/api/v1/apps/\(e2e.server.appID)/symbols/missing", json: """
            {"version": "1", "package": "\(package)", "modules": [{"build_id": "aa11"}]}
            """)
        #expect(answer.status == 400)
        #expect(answer.errorCode == "bad-request")
        #expect(try Self.query(e2e, "SELECT count(*) FROM version") == ["0"])
    }

    @Test("22: a 10 MiB package is refused")
    func hugePackageIsRefused() throws {
        let e2e = try EndToEnd()
        let body = e2e.server.scratch + "/body.json"
        try Data(#"{"version": "1", "package": "\#(String(repeating: "p", count: 10 << 20))", "modules": [{"build_id": "aa11"}]}"#.utf8)
            .write(to: URL(fileURLWithPath: body))
        let answer = try e2e.server.request("POST", "/api/v1/apps/\(e2e.server.appID)/symbols/missing",
                                            extra: ["-H", "Content-Type: application/json", "--data-binary", "@" + body])
        #expect(answer.status == 400)
        #expect(try Self.query(e2e, "SELECT count(*) FROM version") == ["0"])
    }
}
