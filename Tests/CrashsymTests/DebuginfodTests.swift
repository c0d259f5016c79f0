import Foundation
import Testing
import TestSupport

/// The debuginfod client of `lookup` and `symbolicate` against elfutils' real `debuginfod` server
/// (apt `debuginfod`) serving a directory of fixture binaries, and against a plain HTTP server
/// that answers with the wrong file.
@Suite(.serialized)
struct DebuginfodTests {
    /// The unstripped fixture the server indexes; tests run a stripped copy of it.
    static let served = CLI.fixture("gcc-c-O2-dwarf5")

    /// A running server process, stopped when the test ends.
    final class Server {
        let process: Process
        let url: String
        let directory: String

        init(process: Process, url: String, directory: String) {
            self.process = process
            self.url = url
            self.directory = directory
        }

        deinit {
            // debuginfod takes its time over SIGTERM (it finishes its scanner threads first).
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// A port nothing listens on now (bound, then released).
    static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(socket, pointer, length) == 0 && getsockname(socket, pointer, &length) == 0
            }
        }
        guard bound else { throw Failure(description: "cannot bind a socket on 127.0.0.1") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The HTTP status of a GET of `url` (0: no answer).
    static func status(_ url: String) -> Int {
        guard let run = try? Tool.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2", url]) else { return 0 }
        return Int(run.text) ?? 0
    }

    /// elfutils' debuginfod serving `files` (copied into a directory of its own), once it serves
    /// `ready` (a `/buildid/…` path).
    static func debuginfod(serving files: [String], ready: String) throws -> Server {
        let directory = try CLI.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: directory + "/files", withIntermediateDirectories: true)
        for file in files {
            try FileManager.default.copyItem(atPath: file, toPath: directory + "/files/" + URL(fileURLWithPath: file).lastPathComponent)
        }
        let port = try freePort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/debuginfod")
        process.arguments = ["-F", directory + "/files", "-p", "\(port)", "-d", directory + "/index.sqlite"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let server = Server(process: process, url: "http://127.0.0.1:\(port)", directory: directory)
        // The first scan indexes the files within a few seconds.
        let deadline = ContinuousClock.now + .seconds(90)  // a loaded machine scans slowly
        while status(server.url + ready) != 200 && ContinuousClock.now < deadline {
            usleep(100_000)
        }
        guard status(server.url + ready) == 200 else { throw Failure(description: "debuginfod did not serve \(ready)") }
        return server
    }

    static func buildID(_ path: String) throws -> String {
        let notes = try Tool.output("/usr/bin/readelf", ["-n", path])
        guard let line = notes.split(separator: "\n").first(where: { $0.contains("Build ID:") }),
              let id = line.split(separator: " ").last else { throw Failure(description: "no build-id in \(path)") }
        return String(id)
    }

    /// A stripped copy (no DWARF, symbols kept) of `served` in `directory`.
    static func strippedCopy(in directory: String) throws -> String {
        let path = directory + "/app"
        let run = try Tool.run("/usr/bin/strip", ["-g", "-o", path, served])
        guard run.status == 0 else { throw Failure(description: "strip: \(run.stderr)") }
        return path
    }

    /// The file virtual address of `main` in `served`.
    static func mainAddress() throws -> String {
        let symbols = try Tool.output("/usr/bin/nm", [served])
        guard let line = symbols.split(separator: "\n").first(where: { $0.hasSuffix(" T main") }),
              let value = UInt64(line.split(separator: " ")[0], radix: 16) else { throw Failure(description: "no main in \(served)") }
        return "0x" + String(value + 4, radix: 16)
    }

    @Test func lookupFetchesTheDebugFileOfAStrippedBinaryAndSharesElfutilsCache() throws {
        let id = try Self.buildID(Self.served)
        let server = try Self.debuginfod(serving: [Self.served], ready: "/buildid/\(id)/debuginfo")
        let work = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let stripped = try Self.strippedCopy(in: work)
        let address = try Self.mainAddress()
        let environment = ["DEBUGINFOD_CACHE_PATH": work + "/client-cache", "DEBUGINFOD_URLS": "", "CRASHSYM_CACHE_DIR": work + "/tables"]

        let local = try CLI.run(["lookup", stripped, address], environment: environment)
        #expect(local.stdout.contains("(symbol table only)"), "without a server the stripped binary has names only: \(local.stdout)")

        let fetched = try CLI.run(["lookup", stripped, address, "--debuginfod", server.url], environment: environment)
        let reference = try CLI.run(["lookup", Self.served, address], environment: environment)
        #expect(fetched.status == 0, "\(fetched.stderr)")
        #expect(fetched.stdout == reference.stdout, "the fetched debug file answers as the unstripped binary does")
        #expect(reference.stdout.contains("main.c:"))

        // elfutils' own client finds the file in the cache crashsym filled, without a server.
        let cached = work + "/client-cache/\(id)/debuginfo"
        let find = try Tool.run("/usr/bin/debuginfod-find", ["debuginfo", id],
                                environment: ["DEBUGINFOD_CACHE_PATH": work + "/client-cache", "DEBUGINFOD_URLS": "http://127.0.0.1:1"])
        #expect(find.text.trimmingCharacters(in: .whitespacesAndNewlines) == cached, "\(find.stderr)")

        // The environment variable names servers too.
        var viaEnvironment = environment
        viaEnvironment["DEBUGINFOD_URLS"] = server.url
        viaEnvironment["DEBUGINFOD_CACHE_PATH"] = work + "/client-cache-2"
        let listed = try CLI.run(["lookup", stripped, address], environment: viaEnvironment)
        #expect(listed.stdout == reference.stdout)
    }

    @Test func symbolicateFetchesModulesThatNoLocalSourceHas() throws {
        let id = try Self.buildID(Self.served)
        let server = try Self.debuginfod(serving: [Self.served], ready: "/buildid/\(id)/debuginfo")
        let work = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let address = try Self.mainAddress()
        let report = """
            {"modules":[{"name":"app","path":"/nonexistent/app","build_id":"\(id)"}],
             "stacks":[{"name":"main","crashed":true,"frames":[{"index":0,"module_index":0,"module_offset":"\(address)","address_kind":"exact"}]}]}
            """
        let reportPath = work + "/report.json"
        try report.write(toFile: reportPath, atomically: true, encoding: .utf8)
        var environment = ["DEBUGINFOD_CACHE_PATH": work + "/client-cache", "DEBUGINFOD_URLS": "", "CRASHSYM_CACHE_DIR": work + "/tables"]

        let offline = try CLI.run(["symbolicate", reportPath, "--format", "json"], environment: environment)
        #expect(offline.stdout.contains("\"no-symbols\""))

        environment["DEBUGINFOD_URLS"] = server.url
        let fetched = try CLI.run(["symbolicate", reportPath, "--format", "json"], environment: environment)
        let local = try CLI.run(["symbolicate", reportPath, "--format", "json", "--symbols", Self.served], environment: environment)
        #expect(fetched.status == 0, "\(fetched.stderr)")
        #expect(fetched.stdout.contains("\"status\":\"ok\"") || fetched.stdout.contains("\"status\": \"ok\""), "\(fetched.stdout)")
        let frames = { (text: String) in text.components(separatedBy: "\"symbolized\"").dropFirst().joined() }
        #expect(frames(fetched.stdout) == frames(local.stdout), "the same frames as with the binary at hand")
    }

    @Test func aMissOnEveryServerIsRememberedUntilItExpires() throws {
        let id = try Self.buildID(Self.served)
        let server = try Self.debuginfod(serving: [Self.served], ready: "/buildid/\(id)/debuginfo")
        let work = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        // Another build: the server does not have it.
        let other = work + "/other"
        let strip = try Tool.run("/usr/bin/strip", ["-g", "-o", other, CLI.fixture("clang-c-O2-dwarf5")])
        #expect(strip.status == 0)
        let otherID = try Self.buildID(other)
        let cache = work + "/client-cache"
        let environment = ["DEBUGINFOD_CACHE_PATH": cache, "DEBUGINFOD_URLS": "", "CRASHSYM_CACHE_DIR": work + "/tables"]
        let report = """
            {"modules":[{"name":"other","path":"/nonexistent/other","build_id":"\(otherID)"}],
             "stacks":[{"name":"main","crashed":true,"frames":[{"index":0,"module_index":0,"module_offset":"0x1000","address_kind":"exact"}]}]}
            """
        let reportPath = work + "/report.json"
        try report.write(toFile: reportPath, atomically: true, encoding: .utf8)

        let first = try CLI.run(["symbolicate", reportPath, "--explain", "--debuginfod", server.url], environment: environment)
        #expect(first.stdout.contains("\(server.url)/buildid/\(otherID)/debuginfo: not found"), "\(first.stdout)")
        let miss = cache + "/\(otherID)/debuginfo"
        let attributes = try FileManager.default.attributesOfItem(atPath: miss)
        #expect((attributes[.size] as? Int) == 0, "a miss is an empty file, as elfutils writes it")
        #expect((attributes[.posixPermissions] as? Int) == 0)

        // Remembered: the next run asks no server (this one is not even listening).
        let second = try CLI.run(["symbolicate", reportPath, "--explain", "--debuginfod", "http://127.0.0.1:1"], environment: environment)
        #expect(second.stdout.contains("a remembered miss"), "\(second.stdout)")
        #expect(!second.stdout.contains("127.0.0.1:1/buildid"))

        // Expired (cache_miss_s, as elfutils reads it): the servers are asked again.
        try "0\n".write(toFile: cache + "/cache_miss_s", atomically: true, encoding: .utf8)
        let third = try CLI.run(["symbolicate", reportPath, "--explain", "--debuginfod", server.url], environment: environment)
        #expect(third.stdout.contains("\(server.url)/buildid/\(otherID)/debuginfo: not found"), "\(third.stdout)")
    }

    @Test func aServerAnsweringWithAnotherBuildIsNotBelieved() throws {
        let work = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let stripped = try Self.strippedCopy(in: work)
        let id = try Self.buildID(stripped)
        // A plain HTTP server whose /buildid/<id>/debuginfo is another program's debug file.
        let root = work + "/www/buildid/\(id)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: CLI.fixture("clang-c-O2-dwarf5"), toPath: root + "/debuginfo")
        let port = try Self.freePort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-m", "http.server", "\(port)", "--bind", "127.0.0.1", "--directory", work + "/www"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let server = Server(process: process, url: "http://127.0.0.1:\(port)", directory: work + "/www")
        let deadline = ContinuousClock.now + .seconds(90)
        while Self.status(server.url + "/buildid/\(id)/debuginfo") != 200 && ContinuousClock.now < deadline { usleep(100_000) }

        let environment = ["DEBUGINFOD_CACHE_PATH": work + "/client-cache", "DEBUGINFOD_URLS": "", "CRASHSYM_CACHE_DIR": work + "/tables"]
        let address = try Self.mainAddress()
        let run = try CLI.run(["lookup", stripped, address, "--debuginfod", server.url], environment: environment)
        #expect(run.stdout.contains("(symbol table only)"), "the wrong debug file is not used: \(run.stdout)")
        #expect(!FileManager.default.fileExists(atPath: work + "/client-cache/\(id)/debuginfo") ||
                ((try? FileManager.default.attributesOfItem(atPath: work + "/client-cache/\(id)/debuginfo")[.size] as? Int) ?? 0) == 0,
                "the wrong file is not kept in the cache")
    }

    /// `DEBUGINFOD_TIMEOUT` bounds how long a server may stay silent (elfutils' default is 90 s):
    /// a server that accepts the connection and never answers is left after it, and the module
    /// keeps its symbol-table names. Each download is announced on a terminal only, as elfutils'
    /// client does (`script` gives the command a terminal).
    @Test func aSilentServerIsLeftAfterTheTimeoutAndDownloadsShowOnATerminal() throws {
        let work = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let stripped = try Self.strippedCopy(in: work)
        let id = try Self.buildID(stripped)
        let port = try Self.freePort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", """
            import socket, sys, time
            s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", \(port))); s.listen(16); print("ready", flush=True); time.sleep(600)
            """]
        let ready = Pipe()
        process.standardOutput = ready
        process.standardError = FileHandle.nullDevice
        try process.run()
        let server = Server(process: process, url: "http://127.0.0.1:\(port)", directory: work + "/none")
        #expect(String(decoding: ready.fileHandleForReading.availableData, as: UTF8.self).hasPrefix("ready"))

        let environment = ["DEBUGINFOD_CACHE_PATH": work + "/client-cache", "DEBUGINFOD_URLS": "", "CRASHSYM_CACHE_DIR": work + "/tables",
                           "DEBUGINFOD_TIMEOUT": "2"]
        let address = try Self.mainAddress()
        let started = ContinuousClock.now
        let plain = try CLI.run(["lookup", stripped, address, "--debuginfod", server.url], environment: environment)
        #expect(ContinuousClock.now - started < .seconds(60), "the silent server was waited for past DEBUGINFOD_TIMEOUT")
        #expect(plain.stdout.contains("main  (symbol table only)"), "\(plain.stdout) \(plain.stderr)")
        #expect(!plain.stderr.contains("Downloading"), "no progress line off a terminal: \(plain.stderr)")

        let command = [CLI.binary, "lookup", stripped, address, "--debuginfod", server.url].joined(separator: " ")
        let onTerminal = try Tool.run("/usr/bin/script", ["-qec", command, "/dev/null"], environment: environment)
        #expect(onTerminal.text.contains("crashsym: Downloading from \(server.url)/buildid/\(id)/debuginfo"), "\(onTerminal.text)")
        #expect(onTerminal.text.contains("main  (symbol table only)"))
    }
}
