#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writing and removing scratch files and fixtures, with the C library (no Foundation needed).
enum TemporaryFile {
    /// Writes `bytes` to a new file in the temporary directory and returns its path.
    static func write(_ bytes: [UInt8], name: String) throws -> String {
        var template = Array("/tmp/csym-test-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { throw WriteError(path: name) }
        close(fd)
        let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        try writeFile(bytes, to: path)
        return path
    }

    /// Replaces the file at `path` with `bytes`.
    static func writeFile(_ bytes: [UInt8], to path: String) throws {
        guard let file = fopen(path, "wb") else { throw WriteError(path: path) }
        defer { fclose(file) }
        let written = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        guard written == bytes.count else { throw WriteError(path: path) }
    }

    /// Deletes `path`.
    static func remove(_ path: String) {
        unlink(path)
    }

    /// The value of environment variable `name`.
    static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    struct WriteError: Error {
        var path: String
    }
}
