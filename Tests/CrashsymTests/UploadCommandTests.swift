import Foundation
import Testing
import TestSupport

/// `crashsym upload` run as a user would, against a scripted HTTP server on 127.0.0.1
/// (`Tests/Support/fake_symbol_server.py`, which checks every file against the manifest's size and
/// SHA-256). Build-ids come from `readelf -n`, bundle contents from `unzip`.
@Suite struct UploadCommandTests {
    static let key = "k3y-that-must-never-appear"
    static let library = CLI.fixture("libgreet.so")
    static let app = CLI.fixture("greet-app")

    /// The GNU build-id as readelf prints it.
    static func buildID(_ path: String) throws -> String {
        let output = try Tool.output("/usr/bin/readelf", ["-n", path])
        let line = try #require(output.split(separator: "\n").first { $0.contains("Build ID:") })
        return String(try #require(line.split(separator: " ").last))
    }

    static func entries(of bundle: String) throws -> [String] {
        try Tool.output("/usr/bin/unzip", ["-Z1", bundle]).split(separator: "\n").map(String.init)
    }

    static func manifest(of bundle: String) throws -> [String: Any] {
        let text = try Tool.output("/usr/bin/unzip", ["-p", bundle, "manifest.json"])
        return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    /// Runs crashsym with an empty config directory, so no config file of the machine interferes.
    static func crashsym(_ arguments: [String], environment: [String: String] = [:]) throws -> CLI.Result {
        let home = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        var env = ["XDG_CONFIG_HOME": home]
        for (name, value) in environment { env[name] = value }
        let result = try CLI.run(arguments, environment: env)
        #expect(!result.stdout.contains(key) && !result.stderr.contains(key), "the app key was printed")
        return result
    }

    @Test func uploadsEveryModuleAndSaysSo() throws {
        let server = try FakeSymbolServer(script: ["key": Self.key])
        let result = try Self.crashsym(["upload", Self.library, Self.app, "--app-id", "demo", "--app-key", Self.key,
                                        "--version", "1.4.2", "--package", "com.example.app", "--server", server.url])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let library = try Self.buildID(Self.library), app = try Self.buildID(Self.app)
        #expect(result.stdout == """
            uploaded        \(library)  libgreet.so
            uploaded        \(app)  greet-app
            2 modules: 2 uploaded, 0 already present, 0 failed

            """)
        let requests = server.requests()
        try #require(requests.count == 2)
        #expect(requests[0].path == "/api/v1/apps/demo/symbols/missing")
        let asked = try #require(requests[0].json)
        #expect(asked["version"] as? String == "1.4.2")
        #expect(asked["package"] as? String == "com.example.app")
        #expect(asked["platform"] as? String == "linux")
        let modules = try #require(asked["modules"] as? [[String: Any]])
        #expect(modules.map { $0.filter { $0.value is String } as? [String: String] } == [
            ["build_id": library, "name": "libgreet.so", "arch": "x86_64"],
            ["build_id": app, "name": "greet-app", "arch": "x86_64"],
        ])
        // Both carry DWARF; no debug file goes up without --include-debug (docs/http-api.md: improvable modules).
        #expect(modules.map { $0["has_dwarf"] as? Bool } == [true, true])
        #expect(modules.map { $0["has_debug_file"] as? Bool } == [false, false])
        #expect(requests[1].path == "/api/v1/apps/demo/symbols")
        #expect(requests[1].headers["content-type"] == "application/zip")
        #expect(requests[1].entries == ["manifest.json", "symbols/\(library).csym", "symbols/\(app).csym"])
        let manifest = try #require(requests[1].manifest)
        #expect(manifest["app_id"] as? String == "demo")
        #expect(manifest["tool"] as? String == "crashsym 0.1.0")
        #expect((manifest["modules"] as? [[String: Any]])?.map { $0["name"] as? String } == ["libgreet.so", "greet-app"])
    }

    @Test func onlyWhatTheServerLacksIsConvertedAndSent() throws {
        let library = try Self.buildID(Self.library), app = try Self.buildID(Self.app)
        let server = try FakeSymbolServer(script: ["present": [library]])
        let arguments = ["upload", Self.library, Self.app, "--app-id", "demo", "--app-key", Self.key,
                         "--version", "2.0", "--server", server.url]
        let first = try Self.crashsym(arguments)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("already present \(library)  libgreet.so\n"))
        #expect(first.stdout.contains("uploaded        \(app)  greet-app\n"))
        #expect(server.requests().last?.entries == ["manifest.json", "symbols/\(app).csym"])
        // Second run: everything is there, nothing is sent but the question.
        let second = try Self.crashsym(arguments)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout.hasSuffix("2 modules: 0 uploaded, 2 already present, 0 failed\n"))
        let requests = server.requests()
        #expect(requests.count == 3)
        #expect(requests[2].path.hasSuffix("/symbols/missing"))
    }

    @Test func aSetOverTheBoundGoesUpInSeveralBundles() throws {
        // Three Rust binaries of 354–387 KiB, each its own debug file: with --include-debug the first
        // two fit in 1 MiB, the third does not.
        let server = try FakeSymbolServer()
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let inputs = ["rust-O0", "rust-O2", "rust-O2-dwarf5-v0"].map(CLI.fixture)
        let result = try Self.crashsym(["upload"] + inputs + ["--app-id", "demo", "--app-key", Self.key,
                                        "--version", "1", "--server", server.url, "--max-bundle-size", "1",
                                        "--include-debug", "-o", directory + "/parts.zip", "-u"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasSuffix("3 modules: 3 uploaded, 0 already present, 0 failed\n"))
        #expect(result.stdout.contains("bundle \(directory)/parts-1.zip: 2 modules, "))
        #expect(result.stdout.contains("bundle \(directory)/parts-2.zip: 1 modules, "))
        let uploads = server.requests().filter { $0.path.hasSuffix("/symbols") }
        try #require(uploads.count == 2)
        #expect(uploads.map { $0.entries?.count } == [5, 3])
        #expect(uploads[0].bodySHA256 == (try Tool.output("/usr/bin/sha256sum", [directory + "/parts-1.zip"]).prefix(64).description))
        #expect(uploads[1].bodySHA256 == (try Tool.output("/usr/bin/sha256sum", [directory + "/parts-2.zip"]).prefix(64).description))
    }

    @Test func duplicatesAndDebugFilesAreOneModule() throws {
        // The same build-id three times (a binary, its stripped twin, its debug file): one module.
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bundle = directory + "/out.zip"
        let result = try Self.crashsym([
            "upload", CLI.fixture("gcc-c-O2-dwarf5"), CLI.fixture("gcc-c-O2-dwarf5-strip-debug"),
            CLI.fixture("debuglink"), "--app-id", "demo", "--version", "1", "-o", bundle])
        #expect(result.status == 0, "\(result.stderr)")
        let ids = try Set([CLI.fixture("gcc-c-O2-dwarf5"), CLI.fixture("debuglink/prog")].map(Self.buildID))
        let modules = try #require(Self.manifest(of: bundle)["modules"] as? [[String: Any]])
        #expect(Set(modules.compactMap { $0["build_id"] as? String }) == ids)
        #expect(modules.count == 2)
        let debuglink = try #require(modules.first { $0["build_id"] as? String == (try? Self.buildID(CLI.fixture("debuglink/prog"))) })
        #expect(debuglink["name"] as? String == "prog")  // named after the binary, not prog.debug
        #expect(debuglink["has_dwarf"] as? Bool == true)
    }

    /// Streaming, measured on its own process: a module whose debug file is padded to 192 MiB goes
    /// into a bundle with a peak RSS within 48 MiB of the same module unpadded. (Measured in a child
    /// process: the test runner's own RSS moves with every suite running beside this one.)
    @Test func aLargeDebugFileIsStreamedIntoTheBundle() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func peakRSS(padTo size: UInt64?) throws -> (kilobytes: Int, status: Int32, bundle: String) {
            let name = size == nil ? "small" : "large"
            let module = directory + "/\(name)/libgreet.so"
            try FileManager.default.createDirectory(atPath: directory + "/\(name)", withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: Self.library, toPath: module)
            if let size {
                let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: module))
                try handle.truncate(atOffset: size)  // zeros after the section headers: the same ELF
                try handle.close()
            }
            let bundle = directory + "/\(name).zip"
            // RUSAGE_CHILDREN's ru_maxrss is the peak of crashsym (and crashsym-net, which it execs).
            let measure = """
                import resource, subprocess, sys
                status = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, env={"XDG_CONFIG_HOME": sys.argv[0]}).returncode
                print(status, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
                """
            let output = try Tool.output("/usr/bin/env", ["python3", "-c", measure, CLI.binary, "upload", module,
                                                          "--app-id", "demo", "--version", "1", "--include-debug",
                                                          "-o", bundle])
            let fields = output.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Int($0) }
            try #require(fields.count == 2, "measurement printed \(output)")
            return (fields[1], Int32(fields[0]), bundle)
        }
        let small = try peakRSS(padTo: nil)
        let size: UInt64 = 192 << 20
        let large = try peakRSS(padTo: size)
        #expect(small.status == 0 && large.status == 0)
        let growth = large.kilobytes - small.kilobytes
        #expect(growth < 48 << 10, "peak RSS grew by \(growth >> 10) MiB for a \(size >> 20) MiB entry")
        let modules = try #require(Self.manifest(of: large.bundle)["modules"] as? [[String: Any]])
        let debug = try #require(modules.first?["debug"] as? [String: Any])
        #expect((debug["size"] as? NSNumber)?.uint64Value == size)
    }

    @Test("-o without -u, or --no-upload, only writes the bundle", arguments: [["-o"], ["--no-upload", "-o"]])
    func writeOnly(flags: [String]) throws {
        let server = try FakeSymbolServer()
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bundle = directory + "/symbols.zip"
        let result = try Self.crashsym(["upload", Self.library, Self.app, "--app-id", "demo", "--version", "3.1",
                                        "--include-debug"] + flags + [bundle],
                                       environment: ["CRASHSYM_SERVER": server.url, "CRASHSYM_APP_KEY": Self.key])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(server.requests().isEmpty)
        let library = try Self.buildID(Self.library), app = try Self.buildID(Self.app)
        #expect(result.stdout.hasPrefix("written         \(library)  libgreet.so\nwritten         \(app)  greet-app\nbundle \(bundle): 2 modules, "))
        #expect(result.stdout.hasSuffix("2 modules: 2 written, 0 failed\n"))
        #expect(try Self.entries(of: bundle) == ["manifest.json", "symbols/\(library).csym", "debug/\(library).debug",
                                                 "symbols/\(app).csym", "debug/\(app).debug"])
        // The debug entry is the original file, byte for byte.
        let extracted = try Tool.data("/usr/bin/unzip", ["-p", bundle, "debug/\(library).debug"])
        #expect(extracted == FileManager.default.contents(atPath: Self.library))
        let manifest = try Self.manifest(of: bundle)
        #expect(manifest["version"] as? String == "3.1")
        #expect(manifest["package"] as? String == "")
    }

    @Test func buglySpellingUploadsAndKeepsTheBundle() throws {
        let server = try FakeSymbolServer(script: ["key": Self.key])
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bundle = directory + "/out.zip"
        let result = try Self.crashsym(["upload", "-i", Self.library, "-i", Self.app, "-u", "-id", "bugly-app",
                                        "-key", Self.key, "-package", "com.example.bugly", "-version", "5.0.1",
                                        "-o", bundle, "-symbol", "--platform", "android", "--server", server.url])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.hasSuffix("2 modules: 2 uploaded, 0 already present, 0 failed\n"))
        let requests = server.requests()
        try #require(requests.count == 2)
        #expect(requests[1].path == "/api/v1/apps/bugly-app/symbols")
        let manifest = try #require(requests[1].manifest)
        #expect(manifest["app_id"] as? String == "bugly-app")
        #expect(manifest["package"] as? String == "com.example.bugly")
        #expect(manifest["version"] as? String == "5.0.1")
        #expect(manifest["platform"] as? String == "android")
        #expect(try Self.entries(of: bundle).count == 3)  // -o keeps the uploaded bundle
    }

    @Test func aBundleWrittenEarlierIsUploadedAsItIs() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bundle = directory + "/later.zip"
        let written = try Self.crashsym(["upload", Self.library, Self.app, "--app-id", "demo", "--version", "7", "-o", bundle])
        #expect(written.status == 0, "\(written.stderr)")
        let server = try FakeSymbolServer(script: ["present": [try Self.buildID(Self.app)]])
        let result = try Self.crashsym(["upload", "--bundle", bundle, "--app-id", "demo", "--app-key", Self.key,
                                        "--server", server.url])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == """
            uploaded        \(try Self.buildID(Self.library))  libgreet.so
            already present \(try Self.buildID(Self.app))  greet-app
            2 modules: 1 uploaded, 1 already present, 0 failed

            """)
        let requests = server.requests()
        try #require(requests.count == 1)  // no question first: the bundle is decided
        #expect(requests[0].bodySHA256 == (try Tool.output("/usr/bin/sha256sum", [bundle]).prefix(64).description))
    }

    @Test func flagBeatsEnvironmentBeatsConfigFile() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fileServer = try FakeSymbolServer(), envServer = try FakeSymbolServer(), flagServer = try FakeSymbolServer()
        let config = directory + "/config.json"
        try JSONSerialization.data(withJSONObject: ["server": fileServer.url, "app_id": "file-app", "app_key": Self.key])
            .write(to: URL(fileURLWithPath: config))
        let base = ["upload", Self.library, "--version", "1", "--config", config]

        _ = try Self.crashsym(base)
        #expect(fileServer.requests().first?.path == "/api/v1/apps/file-app/symbols/missing")
        #expect(fileServer.requests().first?.headers["authorization"] == "Bearer \(Self.key)")

        _ = try Self.crashsym(base, environment: ["CRASHSYM_SERVER": envServer.url, "CRASHSYM_APP_ID": "env-app"])
        #expect(envServer.requests().first?.path == "/api/v1/apps/env-app/symbols/missing")

        _ = try Self.crashsym(base + ["--server", flagServer.url, "--app-id", "flag-app"],
                              environment: ["CRASHSYM_SERVER": envServer.url, "CRASHSYM_APP_ID": "env-app"])
        #expect(flagServer.requests().first?.path == "/api/v1/apps/flag-app/symbols/missing")
        #expect(fileServer.requests().count == 2 && envServer.requests().count == 2 && flagServer.requests().count == 2)
    }

    @Test func theDefaultConfigFileIsReadFromXDGConfigHome() throws {
        let home = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: home) }
        let server = try FakeSymbolServer(script: ["key": "from-config"])
        try FileManager.default.createDirectory(atPath: home + "/crashsym", withIntermediateDirectories: true)
        try JSONSerialization.data(withJSONObject: ["server": server.url, "app_id": "cfg", "app_key": "from-config"])
            .write(to: URL(fileURLWithPath: home + "/crashsym/config.json"))
        let result = try Self.crashsym(["upload", Self.library, "--version", "1"], environment: ["XDG_CONFIG_HOME": home])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(server.requests().map(\.path) == ["/api/v1/apps/cfg/symbols/missing", "/api/v1/apps/cfg/symbols"])
    }

    @Test func jsonSummary() throws {
        let library = try Self.buildID(Self.library), app = try Self.buildID(Self.app)
        let server = try FakeSymbolServer(script: ["present": [app]])
        let result = try Self.crashsym(["upload", Self.library, Self.app, "/nonexistent/lib.so", "--app-id", "demo",
                                        "--app-key", Self.key, "--version", "1", "--server", server.url, "--format", "json"])
        #expect(result.status == 1)
        let objects = try result.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        try #require(objects.count == 3)
        #expect(objects[0] as? [String: String] == ["build_id": library, "name": "libgreet.so", "status": "uploaded"])
        #expect(objects[1] as? [String: String] == ["build_id": app, "name": "greet-app", "status": "already_present"])
        #expect(objects[2]["status"] as? String == "failed")
        #expect(objects[2]["name"] as? String == "/nonexistent/lib.so")
        #expect(objects[2]["build_id"] is NSNull)
        #expect((objects[2]["reason"] as? String)?.contains("no such file") == true)
    }

    @Test func aWrongKeyFailsWithoutPrintingIt() throws {
        let server = try FakeSymbolServer(script: ["key": "the-right-one"])
        let result = try Self.crashsym(["upload", Self.library, "--app-id", "demo", "--app-key", Self.key,
                                        "--version", "1", "--server", server.url])
        #expect(result.status == 1)
        #expect(result.stdout.contains("failed          \(try Self.buildID(Self.library))  libgreet.so\n"))
        #expect(result.stderr.contains("HTTP 401 unauthorized"))
        #expect(server.requests().count == 1)
    }

    @Test func retriesA503ThenSucceeds() throws {
        let server = try FakeSymbolServer(script: ["upload": [["status": 503, "retry_after": "1"]]])
        let result = try Self.crashsym(["upload", Self.library, "--app-id", "demo", "--app-key", Self.key,
                                        "--version", "1", "--server", server.url])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains("retrying POST"))
        let uploads = server.requests().filter { $0.path.hasSuffix("/symbols") }
        try #require(uploads.count == 2)
        #expect(uploads[1].time - uploads[0].time >= 0.95)
        #expect(uploads[0].bodySHA256 == uploads[1].bodySHA256)
    }

    @Test func aRejectedBundleIsAFailure() throws {
        let rejection: [String: Any] = ["status": 422, "body": ["error": ["code": "invalid-bundle", "message": "symbols/x.csym: bad magic"]]]
        let server = try FakeSymbolServer(script: ["upload": [rejection]])
        let result = try Self.crashsym(["upload", Self.library, Self.app, "--app-id", "demo", "--app-key", Self.key,
                                        "--version", "1", "--server", server.url])
        #expect(result.status == 1)
        // Said once, for the bundle, not once per module.
        #expect(result.stderr == "crashsym: uploading the bundle: HTTP 422 invalid-bundle: symbols/x.csym: bad magic\n")
        #expect(result.stdout.hasSuffix("2 modules: 0 uploaded, 0 already present, 2 failed\n"))
    }

    @Test func anUnreachableServerFailsWithinTheTimeout() throws {
        let server = try FakeSymbolServer(listenAfter: 3600)  // bound, never listening: refused
        let started = Date()
        let result = try Self.crashsym(["upload", Self.library, "--app-id", "demo", "--app-key", Self.key,
                                        "--version", "1", "--server", server.url, "--timeout", "3"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("crashsym: asking the server which symbols it lacks: cannot reach \(server.url): "))
        #expect(result.stderr.contains("Couldn't connect to server"))
        #expect(Date().timeIntervalSince(started) < 15)
    }

    @Test func aServerThatComesBackIsWaitedFor() throws {
        let server = try FakeSymbolServer(listenAfter: 1.5)  // a restart: refused for 1.5 s
        let result = try Self.crashsym(["upload", Self.library, "--app-id", "demo", "--app-key", Self.key,
                                        "--version", "1", "--server", server.url])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains("Couldn't connect to server"))  // the retry was logged
        #expect(server.requests().count == 2)
    }

    @Test func aFileWithoutBuildIDIsReportedAndFails() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let stripped = directory + "/no-build-id"
        _ = try Tool.output("/usr/bin/objcopy", ["--remove-section=.note.gnu.build-id", Self.library, stripped])
        #expect(try Tool.output("/usr/bin/readelf", ["-n", stripped]).contains("Build ID") == false)
        let result = try Self.crashsym(["upload", stripped, Self.app, "--app-id", "demo", "--version", "1",
                                        "-o", directory + "/b.zip"])
        #expect(result.status == 1)
        #expect(result.stdout.contains("failed          \(stripped): no GNU build-id"))
        #expect(try Self.entries(of: directory + "/b.zip") == ["manifest.json", "symbols/\(try Self.buildID(Self.app)).csym"])
    }

    @Test("usage errors exit 2", arguments: [
        ["upload", "--app-id", "a", "--app-key", "k", "--version", "1"],                       // no input
        ["upload", "x", "--app-id", "a", "--app-key", "k"],                                    // no version
        ["upload", "x", "--app-id", "a", "--version", "1", "--no-upload"],                     // --no-upload without -o
        ["upload", "x", "--app-key", "k", "--version", "1"],                                   // no app id
        ["upload", "x", "--app-id", "a", "--version", "1"],                                    // uploading without a key
        ["upload", "x", "--app-id", "a", "--app-key", "k", "--version", "1", "--platform", "ios"],
        ["upload", "x", "--bundle", "b.zip", "--app-id", "a", "--app-key", "k"],              // --bundle with paths
        ["upload", "--bundle", "b.zip", "--app-id", "a", "--app-key", "k", "--timeout", "0"],
        ["upload", "x", "--app-id", "a", "--app-key", "k", "--version", "1", "--max-bundle-size", "0"],
    ])
    func usageErrors(arguments: [String]) throws {
        let result = try Self.crashsym(arguments)
        #expect(result.status == 2, "\(arguments): \(result.stderr)")
        #expect(!result.stderr.isEmpty)
    }

    @Test func versionOfTheToolStillPrints() throws {
        let result = try CLI.run(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout == "0.1.0\n")
    }
}
