import Foundation

/// A real HTTP receiver on 127.0.0.1 (Support/webhook_receiver.py, a child process) that records
/// every request it gets and answers by path (see the script). With a secret it checks each
/// `X-Crashsym-Signature` with Python's hmac, an oracle that shares no code with the server.
final class WebhookReceiver {
    static let script = Binary.root.appendingPathComponent("Tests/SymServerTests/Support/webhook_receiver.py").path

    let log: String
    let port: Int
    private let process = Process()

    init(directory: String, secret: String? = nil, port requested: Int = 0) throws {
        log = directory + "/webhook-\(UUID().uuidString).jsonl"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Self.script, "--log", log, "--port", String(requested)] + (secret.map { ["--secret", $0] } ?? [])
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { throw TestFailure("the webhook receiver exited before listening") }
            line.append(chunk)
        }
        guard let text = String(data: line, encoding: .utf8)?.split(separator: " ").last?.split(separator: "\n").first,
              let port = Int(text) else { throw TestFailure("unexpected receiver line \(String(decoding: line, as: UTF8.self))") }
        self.port = port
    }

    deinit { stop() }

    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// One request as the receiver recorded it.
    struct Request {
        var path: String
        var headers: [String: String]
        var body: String
        var signatureValid: Bool?
        var inflight: Int
        /// The sender's port: one port, one connection.
        var clientPort: Int
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:] }
        var delivery: String? { headers["x-crashsym-delivery"] }
        var event: String? { headers["x-crashsym-event"] }
    }

    /// Every request so far, in arrival order.
    func requests() -> [Request] {
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return nil }
            return Request(path: object["path"] as? String ?? "", headers: object["headers"] as? [String: String] ?? [:],
                           body: object["body"] as? String ?? "", signatureValid: object["signature_valid"] as? Bool,
                           inflight: object["inflight"] as? Int ?? 0, clientPort: object["client_port"] as? Int ?? 0)
        }
    }
}

extension TestServer {
    /// `crashsym apps webhooks add APP URL ARGUMENTS`: the new webhook's id.
    func addWebhook(_ url: String, _ arguments: [String] = []) throws -> String {
        let result = try Binary.crashsym(["apps", "webhooks", "add", appID, url, "--data-dir", dataDirectory] + arguments)
        let words = result.stdout.split(separator: " ")
        guard result.status == 0, words.count > 1, words[0] == "webhook" else {
            throw TestFailure("webhooks add: \(result.status) \(result.stdout) \(result.stderr)")
        }
        return String(words[1])
    }

    /// Posts a glibc `backtrace_symbols` report whose crashing function is `function` (one bug
    /// per name: the report's own names make the signature, no symbols needed) and waits for
    /// its processing; returns the crash's JSON answer.
    @discardableResult
    func submitCrash(in function: String, version: String = "1.0") throws -> [String: Any] {
        let path = scratch + "/report-\(UUID().uuidString).txt"
        try "/app/prog(\(function)+0x10)[0x5555555551a0]\n/app/prog(main+0x20)[0x555555555200]\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let answer = try post("crashes", file: path, query: "wait=20&version=\(version)")
        guard answer.status == 201, answer.json["state"] as? String == "done" else {
            throw TestFailure("crash: HTTP \(answer.status) \(answer.text)")
        }
        return answer.json
    }

    /// `GET …/webhooks/{id}/deliveries`.
    func deliveries(_ webhook: String) throws -> [[String: Any]] {
        let answer = try get("webhooks/\(webhook)/deliveries")
        guard answer.status == 200 else { throw TestFailure("deliveries: HTTP \(answer.status) \(answer.text)") }
        return answer.json["deliveries"] as? [[String: Any]] ?? []
    }
}
