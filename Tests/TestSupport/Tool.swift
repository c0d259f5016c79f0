import Foundation

/// Runs the real tools the tests compare with (readelf, nm, unzip, llvm-symbolizer …).
public enum Tool {
    /// What `executable` printed on standard output when run with `arguments` (standard error is
    /// left to the test's own); throws when it cannot be started.
    public static func output(_ executable: String, _ arguments: [String]) throws -> String {
        String(decoding: try data(executable, arguments), as: UTF8.self)
    }

    /// The bytes `executable` printed on standard output when run with `arguments`.
    public static func data(_ executable: String, _ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return data
    }
}

extension Tool {
    /// What a finished run left: its exit status (the signal number, negated, when a signal ended it)
    /// and both outputs.
    public struct Run: Sendable {
        public var status: Int32
        public var stdout: Data
        public var stderr: String
        /// Standard output as text.
        public var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// Runs `executable` to completion: `input` is written to its standard input from another
    /// thread (so a full output pipe cannot deadlock either side), standard error goes to a file
    /// (so it cannot fill up and stall the child), `environment` is added to this process's.
    public static func run(_ executable: String, _ arguments: [String], input: Data = Data(),
                           environment: [String: String] = [:], directory: URL? = nil) throws -> Run {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let stdin = Pipe(), stdout = Pipe()
        let errorPath = NSTemporaryDirectory() + "crashsym-tool-stderr-" + UUID().uuidString
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: errorPath) }
        let errors = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = errors
        try process.run()
        let writer = Thread {
            if !input.isEmpty { stdin.fileHandleForWriting.write(input) }
            try? stdin.fileHandleForWriting.close()
        }
        writer.start()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try errors.close()
        let status = process.terminationReason == .uncaughtSignal ? -process.terminationStatus : process.terminationStatus
        return Run(status: status, stdout: output,
                   stderr: String(decoding: FileManager.default.contents(atPath: errorPath) ?? Data(), as: UTF8.self))
    }
}
