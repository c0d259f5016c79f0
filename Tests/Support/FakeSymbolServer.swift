// Shared by SymClientTests and CrashsymTests (each target links this file by a symbolic link).
import Foundation

/// `Tests/Support/fake_symbol_server.py` running on 127.0.0.1 in a subprocess: a scripted stand-in
/// for `crashsym serve` that logs every request it receives.
final class FakeSymbolServer {
    /// One request as the server saw it.
    struct Request {
        var time: Double
        var path: String
        var headers: [String: String]
        var bodySize: Int?
        var bodySHA256: String?
        var json: [String: Any]?
        var manifest: [String: Any]?
        var entries: [String]?
        var scripted: Bool
        /// When a table request ended, and how many were in flight when it began (itself included).
        var end: Double? = nil
        var concurrent: Int? = nil
    }

    let port: Int
    let directory: String
    private let process: Process

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Support/fake_symbol_server.py").path

    var url: String { "http://127.0.0.1:\(port)" }

    /// Starts the server with `script` (see the Python file) and waits until its port is known.
    init(script: [String: Any] = [:], listenAfter: Double = 0) throws {
        directory = NSTemporaryDirectory() + "crashsym-fake-server-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let scriptPath = directory + "/script.json"
        try JSONSerialization.data(withJSONObject: script).write(to: URL(fileURLWithPath: scriptPath))
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Self.script, "--log", directory + "/log.jsonl", "--script", scriptPath,
                             "--listen-after", String(listenAfter)]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var line = Data()
        while !line.contains(0x0a) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("PORT "), let port = Int(text.dropFirst(5).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            kill(process.processIdentifier, SIGKILL)
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "fake server did not start: \(text)"])
        }
        self.port = port
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Stops the server (the subprocess this object started). SIGKILL, because a child spawned from
    /// the test runner may inherit a signal mask that blocks SIGTERM.
    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// The requests received so far, in order.
    func requests() -> [Request] {
        guard let data = FileManager.default.contents(atPath: directory + "/log.jsonl") else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return Request(time: object["time"] as? Double ?? 0, path: object["path"] as? String ?? "",
                           headers: object["headers"] as? [String: String] ?? [:],
                           bodySize: object["body_size"] as? Int, bodySHA256: object["body_sha256"] as? String,
                           json: object["json"] as? [String: Any], manifest: object["manifest"] as? [String: Any],
                           entries: object["entries"] as? [String], scripted: object["action"] != nil,
                           end: object["end"] as? Double, concurrent: object["concurrent"] as? Int)
        }
    }
}
