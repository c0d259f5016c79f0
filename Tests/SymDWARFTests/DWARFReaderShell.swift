#if canImport(Glibc)
import Glibc
#endif

/// Runs the real tools the DWARF reader is checked against (gcc, clang, llvm-dwarfdump), without
/// Foundation.
enum DWARFReaderShell {
    /// A command that exited with a failure status.
    struct Failure: Error, CustomStringConvertible {
        let command: String
        let status: Int32
        let output: String
        var description: String { "`\(command)` exited with status \(status): \(output)" }
    }

    /// Runs `command` with `/bin/sh -c` and returns its standard output as bytes; throws on a
    /// non-zero exit status, with standard error in the message.
    @discardableResult
    static func run(_ command: String) throws -> [UInt8] {
        let (status, output) = capture("PATH=/opt/swift/usr/bin:$PATH; export PATH; { \(command) ; } 2>/dev/null")
        guard status == 0 else {
            let (_, diagnostics) = capture("PATH=/opt/swift/usr/bin:$PATH; export PATH; { \(command) ; } 2>&1")
            throw Failure(command: command, status: status, output: String(decoding: diagnostics.suffix(4000), as: UTF8.self))
        }
        return output
    }

    /// Quotes `text` for the shell.
    static func quote(_ text: String) -> String {
        "'" + text.replacing("'", with: "'\\''") + "'"
    }

    /// Whether `path` exists.
    static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    private static func capture(_ command: String) -> (Int32, [UInt8]) {
        guard let pipe = popen(command, "r") else { return (-1, Array("popen failed".utf8)) }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let read = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, pipe) }
            if read == 0 { break }
            output += chunk[0..<read]
        }
        let status = pclose(pipe)
        let exitCode = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return (exitCode, output)
    }

    /// Creates a fresh directory under /tmp and returns its path.
    static func temporaryDirectory(_ prefix: String) throws -> String {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let result = mkdtemp(buffer.baseAddress!) else { return nil }
            return String(cString: result)
        }
        guard let created else { throw Failure(command: "mkdtemp", status: errno, output: "") }
        return created
    }

    /// Writes `text` to a new file at `path`.
    static func write(_ text: String, to path: String) throws {
        guard let handle = fopen(path, "wb") else { throw Failure(command: "fopen \(path)", status: errno, output: "") }
        defer { fclose(handle) }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, handle) }
        guard written == bytes.count else { throw Failure(command: "fwrite \(path)", status: errno, output: "") }
    }

    /// Seconds on a monotonic clock.
    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
