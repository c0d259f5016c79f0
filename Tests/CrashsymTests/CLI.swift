import Foundation

/// Runs the built `crashsym` binary.
enum CLI {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The binary: `CRASHSYM_BINARY`, else the one next to the test bundle.
    static var binary: String {
        if let path = ProcessInfo.processInfo.environment["CRASHSYM_BINARY"] { return path }
        let bundle = Bundle.main.bundleURL
        for directory in [bundle, bundle.deletingLastPathComponent()] {
            let candidate = directory.appendingPathComponent("crashsym").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return root.appendingPathComponent(".build/debug/crashsym").path
    }

    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs crashsym with `arguments` and optional standard input.
    static func run(_ arguments: [String], input: String? = nil, environment: [String: String] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        process.currentDirectoryURL = root
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let output = Pipe(), stdin = Pipe()
        let errorPath = NSTemporaryDirectory() + "crashsym-stderr-" + UUID().uuidString
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        let errors = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
        defer { try? FileManager.default.removeItem(atPath: errorPath) }
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = stdin
        try process.run()
        let writer = Thread {
            if let input { stdin.fileHandleForWriting.write(input.data(using: .utf8)!) }
            try? stdin.fileHandleForWriting.close()
        }
        writer.start()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try errors.close()
        let errorData = FileManager.default.contents(atPath: errorPath) ?? Data()
        return Result(status: process.terminationStatus, stdout: String(decoding: data, as: UTF8.self),
                      stderr: String(decoding: errorData, as: UTF8.self))
    }

    /// A fresh temporary directory.
    static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "crashsym-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func fixture(_ relative: String) -> String { root.appendingPathComponent("Fixtures/elf/" + relative).path }
}
