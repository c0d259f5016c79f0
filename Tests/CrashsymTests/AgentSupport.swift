import Foundation
import Testing
import TestSupport

/// A real `crashsym serve` on 127.0.0.1 (kernel-chosen port) with one app, for the agent tests;
/// started by TestSupport's `ServerProcess`, as SymServerTests' `TestServer` is.
final class AgentTestServer {
    let scratch: String
    let dataDirectory: String
    let appID: String
    let key: String
    private(set) var port = 0
    private var process: Process?

    init() throws {
        scratch = try CLI.temporaryDirectory()
        dataDirectory = scratch + "/data"
        let created = try CLI.run(["apps", "create", "agent test", "--data-dir", dataDirectory, "--format", "json"])
        guard created.status == 0, let object = try JSONSerialization.jsonObject(with: Data(created.stdout.utf8)) as? [String: Any],
              let id = object["id"] as? String, let key = object["key"] as? String else {
            throw AgentTestFailure("apps create failed: \(created.stderr)")
        }
        appID = id
        self.key = key
        try start()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: scratch)
    }

    var base: String { "http://127.0.0.1:\(port)" }

    /// Starts the server (on `requested`, else a free port) and waits for its "listening on" line.
    func start(port requested: Int = 0) throws {
        let server = try ServerProcess(binary: CLI.binary, dataDirectory: dataDirectory, scratch: scratch, port: requested)
        process = server.process
        port = server.port
    }

    /// kill -9 (the port stays known for a restart).
    func stop() {
        guard let process else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    /// One GET with the app's key; the body.
    func get(_ path: String) throws -> Data {
        let run = try Tool.run("/usr/bin/curl", ["-sS", "--fail", "--max-time", "60", "-H", "Authorization: Bearer \(key)", base + path])
        guard run.status == 0 else { throw AgentTestFailure("GET \(path): \(run.stderr)") }
        return run.stdout
    }

    /// Every crash stored for the app (newest first), as the API lists them.
    func crashes() throws -> [[String: Any]] {
        var all: [[String: Any]] = []
        var cursor: String?
        repeat {
            let page = try get("/api/v1/apps/\(appID)/crashes?limit=1000" + (cursor.map { "&cursor=\($0)" } ?? ""))
            let object = try JSONSerialization.jsonObject(with: page) as? [String: Any] ?? [:]
            all += object["crashes"] as? [[String: Any]] ?? []
            cursor = object["next_cursor"] as? String
        } while cursor != nil
        return all
    }

    /// The raw bytes of one crash.
    func raw(_ id: String) throws -> Data { try get("/api/v1/apps/\(appID)/crashes/\(id)/raw") }

    /// The raw bytes of every crash listed, one after the other (one curl process, one connection).
    func rawOfAll() throws -> String {
        let urls = try crashes().map { base + "/api/v1/apps/\(appID)/crashes/\($0["id"] as! String)/raw" }
        let run = try Tool.run("/usr/bin/curl", ["-sS", "--fail", "--max-time", "120", "-H", "Authorization: Bearer \(key)"] + urls)
        guard run.status == 0 else { throw AgentTestFailure("GET raw: \(run.stderr)") }
        return run.text
    }
}

/// A `crashsym agent` running in the background (the real binary), its log in a file.
final class AgentProcess {
    let process = Process()
    let logPath: String

    init(_ arguments: [String], key: String, scratch: String) throws {
        process.executableURL = URL(fileURLWithPath: CLI.binary)
        process.arguments = ["agent"] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["CRASHSYM_APP_KEY": key]) { $1 }
        logPath = scratch + "/agent-\(UUID().uuidString).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        // Files written from now on are watched (not found by the start-up listing).
        guard AgentTest.eventually(within: 30, { log.contains("agent started") || !process.isRunning }),
              process.isRunning else {
            throw AgentTestFailure("the agent did not start: \(log)")
        }
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// SIGTERM, then the exit status.
    func terminate() -> Int32 {
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// kill -9.
    func crash() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

struct AgentTestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

enum AgentTest {
    /// Polls `condition` every 50 ms until it holds or `seconds` pass; whether it held.
    static func eventually(within seconds: Double = 30, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            usleep(50_000)
        }
        return try condition()
    }

    /// A distinct glibc backtrace report (the marker makes its bytes, so its Idempotency-Key, unique).
    static func glibcReport(_ marker: Int) -> String {
        """
        crash \(marker): segmentation fault
        ./prog(+0x1189)[0x55d0c0a00189]
        ./prog(main+0x2a)[0x55d0c0a001b3]
        /lib/x86_64-linux-gnu/libc.so.6(+0x271ca)[0x7f1c2a8271ca]

        """
    }

    /// Files in a directory (none when it is missing).
    static func files(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    /// Writes `text` to `path` with an mtime `age` seconds in the past (already settled).
    static func write(_ text: String, to path: String, age: TimeInterval = 0) throws {
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        if age > 0 {
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-age)], ofItemAtPath: path)
        }
    }
}
