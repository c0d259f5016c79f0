import Foundation
import TestSupport

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

    /// Runs crashsym with `arguments` and optional standard input, in the package root.
    static func run(_ arguments: [String], input: String? = nil, environment: [String: String] = [:]) throws -> Result {
        let run = try Tool.run(binary, arguments, input: Data((input ?? "").utf8), environment: environment, directory: root)
        return Result(status: run.status, stdout: run.text, stderr: run.stderr)
    }

    /// A fresh temporary directory.
    static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "crashsym-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func fixture(_ relative: String) -> String { root.appendingPathComponent("Fixtures/elf/" + relative).path }

    /// Dumps `elf` into `directory` with `crashsym dump --format json` and returns the module's
    /// JSON object and the path of its table; fails the test when `dump` fails.
    static func dumpTable(_ elf: String, into directory: String) throws -> (module: [String: Any], table: String) {
        let dump = try run(["dump", elf, "-o", directory, "--format", "json"])
        guard dump.status == 0, let module = try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any],
              let buildID = module["build_id"] as? String else {
            throw DumpFailed(description: "crashsym dump \(elf): status \(dump.status): \(dump.stderr)")
        }
        return (module, "\(directory)/\(buildID).csym")
    }

    struct DumpFailed: Error, CustomStringConvertible {
        var description: String
    }
}
