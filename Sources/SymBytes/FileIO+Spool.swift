#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension FileIO {
    /// The largest input `spool` copies (a core of a big process; a larger one is refused).
    public static let maximumSpoolSize: UInt64 = 64 << 30

    /// Copies `prefix` (bytes already read) and the rest of `descriptor` (standard input, a
    /// pipe) into an unlinked temporary file under `$TMPDIR` (else `/tmp`) in 1 MiB chunks and
    /// maps it: a binary report read from a pipe in constant memory, whatever its size up to
    /// `limit`. The file's blocks are freed when the mapping goes.
    public static func spool(_ descriptor: Int32, prefix: [UInt8], limit: UInt64 = maximumSpoolSize,
                             name: String = "<stdin>") throws(FormatError) -> MappedFile {
        let directory = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((directory + "/crashsym-stdin-XXXXXX").utf8CString)
        let file = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard file >= 0 else {
            throw FormatError(.io, "cannot create a temporary file in \(directory): \(String(cString: strerror(errno))) (set TMPDIR)", path: name)
        }
        defer { close(file) }
        _ = fcntl(file, F_SETFD, FD_CLOEXEC)
        // Unlinked at once: nothing is left behind, whatever happens next.
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        var total = UInt64(prefix.count)
        var failure = prefix.withUnsafeBytes { writeAll(file, $0) }
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while failure == 0 {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 { throw FormatError(.io, "cannot read: \(String(cString: strerror(errno)))", path: name) }
            if count == 0 { break }
            total += UInt64(count)
            guard total <= limit else {
                throw FormatError(.limitExceeded, "larger than \(limit >> 30) GiB: not read (pass the file's path instead)", path: name)
            }
            failure = chunk.withUnsafeBytes { writeAll(file, UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        }
        guard failure == 0 else {
            throw FormatError(.io, "cannot write the temporary copy in \(directory): \(String(cString: strerror(failure))) (set TMPDIR)", path: name)
        }
        return try MappedFile(descriptor: file, path: name)
    }
}
