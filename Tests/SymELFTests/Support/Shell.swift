#if canImport(Glibc)
import Glibc
#endif
import SymBytes

/// A failed external command, with what it printed.
struct CommandError: Error, CustomStringConvertible {
    let command: String
    let status: Int32
    let output: String
    var description: String { "`\(command)` exited with status \(status): \(output)" }
}

/// Runs real tools (compilers, binutils, readelf) for fixtures and oracles, without Foundation.
enum Shell {
    /// Directory of the Swift toolchain's clang and LLVM tools.
    static let toolchainBin = "/opt/swift/usr/bin"

    /// Runs `command` with `/bin/sh -c` and returns its standard output; throws on a non-zero exit.
    /// Standard error is folded into the output only when the command fails.
    @discardableResult
    static func run(_ command: String) throws(CommandError) -> String {
        let wrapped = "PATH=\(toolchainBin):$PATH; export PATH; { \(command) ; } 2>/dev/null"
        let (status, output) = capture(wrapped)
        guard status == 0 else {
            let (_, diagnostics) = capture("PATH=\(toolchainBin):$PATH; export PATH; { \(command) ; } 2>&1")
            throw CommandError(command: command, status: status, output: diagnostics)
        }
        return output
    }

    /// Quotes `text` for the shell.
    static func quote(_ text: String) -> String {
        "'" + text.replacing("'", with: "'\\''") + "'"
    }

    private static func capture(_ command: String) -> (Int32, String) {
        guard let pipe = popen(command, "r") else { return (-1, "popen failed") }
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let read = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, pipe) }
            if read == 0 { break }
            output += chunk[0..<read]
        }
        let status = pclose(pipe)
        // pclose returns a wait status; decode the exit code without the C macros.
        let exitCode = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return (exitCode, String(decoding: output, as: UTF8.self))
    }
}

/// A fresh directory under /tmp, removed by `remove()`.
struct TemporaryDirectory: Sendable {
    let path: String

    init(_ prefix: String = "symelf") throws(CommandError) {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let result = mkdtemp(buffer.baseAddress!) else { return nil }
            return String(cString: result)
        }
        guard let created else {
            throw CommandError(command: "mkdtemp", status: errno, output: "cannot create a temporary directory")
        }
        path = created
    }

    /// Creates the directory `exactPath`, replacing any left over from an earlier process.
    init(exactPath: String) throws(CommandError) {
        try Shell.run("rm -rf \(Shell.quote(exactPath)) && mkdir -p \(Shell.quote(exactPath))")
        path = exactPath
    }

    /// `path/name`.
    func file(_ name: String) -> String { path + "/" + name }

    /// Writes `text` to `name` in the directory.
    func write(_ text: String, to name: String) throws {
        try writeBytes(Array(text.utf8), to: file(name))
    }

    func remove() {
        _ = try? Shell.run("rm -rf \(Shell.quote(path))")
    }
}

/// The bytes of a file.
func readBytes(_ path: String) throws -> [UInt8] {
    let file = try MappedFile(path: path)
    return withExtendedLifetime(file) { Array(file.bytes) }
}

/// Writes `bytes` to a new file at `path`.
func writeBytes(_ bytes: [UInt8], to path: String) throws {
    guard let handle = fopen(path, "wb") else {
        throw CommandError(command: "fopen \(path)", status: errno, output: "cannot create file")
    }
    defer { fclose(handle) }
    let written = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, handle) }
    guard written == bytes.count else {
        throw CommandError(command: "fwrite \(path)", status: errno, output: "short write")
    }
}

/// Lowercase hex of `bytes`.
func hex(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
}
