import Foundation
import TestSupport

/// The built `crashsym` binary, found like Tests/CrashsymTests/CLI.swift does.
enum Binary {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static var crashsym: String {
        if let path = ProcessInfo.processInfo.environment["CRASHSYM_BINARY"] { return path }
        let bundle = Bundle.main.bundleURL
        for directory in [bundle, bundle.deletingLastPathComponent()] {
            let candidate = directory.appendingPathComponent("crashsym").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return root.appendingPathComponent(".build/debug/crashsym").path
    }

    static func fixture(_ relative: String) -> String { root.appendingPathComponent("Fixtures/elf/" + relative).path }

    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs `executable` with `arguments` to completion.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let outPath = directory + "/out", errPath = directory + "/err"
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try out.close()
        try err.close()
        return Output(status: process.terminationStatus,
                      stdout: String(decoding: FileManager.default.contents(atPath: outPath) ?? Data(), as: UTF8.self),
                      stderr: String(decoding: FileManager.default.contents(atPath: errPath) ?? Data(), as: UTF8.self))
    }

    static func crashsym(_ arguments: [String], environment: [String: String] = [:]) throws -> Output {
        try run(crashsym, arguments, environment: environment)
    }

    static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "crashsym-server-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// An HTTP answer as curl saw it.
struct HTTPAnswer {
    var status: Int
    var body: Data
    var headers: [String: String]

    var text: String { String(decoding: body, as: UTF8.self) }
    /// The body as a JSON object.
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
    /// `error.code` of an error body.
    var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
}

/// A real `crashsym serve` process on 127.0.0.1 with a kernel-chosen free port, over its own data
/// directory, with one app created through `crashsym apps create`.
final class TestServer {
    let dataDirectory: String
    let scratch: String
    private(set) var port = 0
    private(set) var process: Process?
    let extraArguments: [String]
    /// Variables added to the environment of `crashsym` (the S3 credentials).
    let environment: [String: String]
    let appID: String
    let key: String

    /// `database`: a `postgres://` URL for the metadata (`--database`), nil for SQLite; `app`: an
    /// app to serve instead of creating one (a second node of the same database).
    /// `environment`: variables added to `crashsym`'s (the S3 credentials).
    init(arguments: [String] = [], database: String? = nil, dataDirectory: String? = nil, app: (id: String, key: String)? = nil,
         environment: [String: String] = [:]) throws {
        scratch = try Binary.temporaryDirectory()
        self.environment = environment
        self.dataDirectory = dataDirectory ?? scratch + "/data"
        let shared = database.map { ["--database", $0] } ?? []
        extraArguments = arguments + shared
        if let app {
            (appID, key) = app
            try start()
            return
        }
        let created = try Binary.crashsym(["apps", "create", "test app", "--data-dir", self.dataDirectory, "--format", "json"] + shared,
                                          environment: environment)
        guard created.status == 0,
              let object = try JSONSerialization.jsonObject(with: Data(created.stdout.utf8)) as? [String: Any],
              let id = object["id"] as? String, let key = object["key"] as? String else {
            throw TestFailure("apps create failed: \(created.stderr)")
        }
        appID = id
        self.key = key
        try start()
    }

    deinit {
        if let process, process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
        try? FileManager.default.removeItem(atPath: scratch)
    }

    var base: String { "http://127.0.0.1:\(port)" }

    /// Starts the server (on `port`, else a free port) and waits for its "listening on" line.
    func start(port requested: Int = 0) throws {
        let server = try ServerProcess(binary: Binary.crashsym, dataDirectory: dataDirectory, scratch: scratch,
                                       port: requested, arguments: extraArguments, environment: environment)
        process = server.process
        port = server.port
    }

    /// kill -9.
    func crash() {
        guard let process else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    /// SIGTERM, then the exit status.
    func terminate() -> Int32 {
        guard let process else { return -1 }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        self.process = nil
        return process.terminationStatus
    }

    /// A Sendable client for this server's current port and app.
    var client: HTTPClient { HTTPClient(base: base, appID: appID, key: key) }

    /// One request with the curl CLI; `key` nil sends no Authorization header.
    func request(_ method: String, _ path: String, key: String?? = .none, json: String? = nil, file: String? = nil,
                 extra: [String] = []) throws -> HTTPAnswer {
        try client.request(method, path, key: key, json: json, file: file, extra: extra)
    }

    /// Uploads the bundle at `path`.
    func upload(_ path: String, key: String?? = .none, appID: String? = nil) throws -> HTTPAnswer {
        try client.upload(path, key: key, appID: appID)
    }

    /// The text of /proc/net/tcp, read to its end: a proc file reads a page or so per read(2),
    /// and a reader that stops at the first short read (as reading a file of size 0 may) sees
    /// only the first few dozen sockets, which in a full run need not hold the server's.
    static func procNetTCP() throws -> String {
        let fd = open("/proc/net/tcp", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw TestFailure("cannot open /proc/net/tcp: errno \(errno)") }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let got = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { throw TestFailure("cannot read /proc/net/tcp: errno \(errno)") }
            if got == 0 { break }
            bytes += chunk[..<got]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// TCP connections in state ESTABLISHED on the server's port (from /proc/net/tcp).
    func establishedConnections() throws -> Int {
        let suffix = String(format: ":%04X", port)
        var count = 0
        for line in try Self.procNetTCP().split(separator: "\n") {
            let fields = line.split(separator: " ")
            // Field 1 is the local address, field 3 the state (01: ESTABLISHED).
            if fields.count > 3, fields[3] == "01", fields[1].hasSuffix(suffix) { count += 1 }
        }
        return count
    }

    /// Files left in the scratch directory of the data directory.
    func leftovers() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dataDirectory + "/tmp")
    }
}

/// Requests to a running server with the curl CLI.
struct HTTPClient: Sendable {
    var base: String
    var appID: String
    var key: String

    /// One request with the curl CLI; `key` nil sends no Authorization header.
    func request(_ method: String, _ path: String, key: String?? = .none, json: String? = nil, file: String? = nil,
                 extra: [String] = []) throws -> HTTPAnswer {
        let directory = try Binary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var arguments = ["-sS", "-X", method, "-o", directory + "/body", "-D", directory + "/headers", "-w", "%{http_code}",
                         "--max-time", "120"]
        let key = key ?? self.key
        if let key { arguments += ["-H", "Authorization: Bearer \(key)"] }
        if let json { arguments += ["-H", "Content-Type: application/json", "--data-binary", json] }
        if let file { arguments += ["-H", "Content-Type: application/zip", "--data-binary", "@" + file] }
        arguments += extra
        arguments.append(base + path)
        let result = try Binary.run("/usr/bin/curl", arguments)
        guard let status = Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw TestFailure("curl failed: \(result.stderr)")
        }
        var headers: [String: String] = [:]
        let headerText = (try? String(contentsOfFile: directory + "/headers", encoding: .utf8)) ?? ""
        for line in headerText.split(whereSeparator: \.isNewline) {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return HTTPAnswer(status: status, body: FileManager.default.contents(atPath: directory + "/body") ?? Data(),
                          headers: headers)
    }

    /// Uploads the bundle at `path`.
    func upload(_ path: String, key: String?? = .none, appID: String? = nil) throws -> HTTPAnswer {
        try request("POST", "/api/v1/apps/\(appID ?? self.appID)/symbols", key: key, file: path)
    }
}
