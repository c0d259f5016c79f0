import Foundation

/// A real `crashsym serve` process on 127.0.0.1 over a data directory, started as the server
/// tests (SymServerTests' `TestServer`) and the agent tests (CrashsymTests' `AgentTestServer`)
/// both need it: standard error to a new log file, then the "listening on …:PORT" line read.
public final class ServerProcess {
    /// The running process.
    public let process: Process
    /// The port it listens on (the kernel's choice when 0 was asked).
    public let port: Int

    /// Why the server did not start.
    public struct StartFailure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Starts `binary serve --data-dir DIR --port PORT --log-level warning ARGUMENTS` (its log
    /// in `scratch`), with `environment` added to its own, and waits until it listens.
    public init(binary: String, dataDirectory: String, scratch: String, port requested: Int = 0,
                arguments: [String] = [], environment: [String: String] = [:]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--data-dir", dataDirectory, "--port", String(requested), "--log-level", "warning"]
            + arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, given in given }
        }
        let output = Pipe()
        process.standardOutput = output
        let log = scratch + "/server-\(UUID().uuidString).log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        try process.run()
        self.process = process
        var line = Data()
        let reader = output.fileHandleForReading
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = reader.availableData
            if chunk.isEmpty {
                throw StartFailure(description: "server exited before listening: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
            }
            line.append(chunk)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let portText = text.split(separator: ":").last?.split(separator: "\n").first, let port = Int(portText) else {
            throw StartFailure(description: "unexpected first line \(text)")
        }
        self.port = port
    }
}
