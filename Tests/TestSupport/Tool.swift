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
