import Crypto
import SymBytes
#if canImport(Glibc)
import Glibc
#endif

/// Size and SHA-256 of a file on disk, read in fixed-size chunks so memory stays constant.
public struct FileDigest: Sendable, Equatable {
    /// Size in bytes.
    public var size: UInt64
    /// Lowercase hex SHA-256 of the contents.
    public var sha256: String

    /// Chunk size of the reads.
    static let chunkSize = 1 << 20

    /// Reads `path` once and returns its size and SHA-256.
    public init(path: String) throws(FormatError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw FormatError(.io, "cannot open: \(String(cString: strerror(errno)))", path: path) }
        defer { close(descriptor) }
        var hasher = SHA256()
        var total: UInt64 = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = read(descriptor, buffer.baseAddress, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw FormatError(.io, "cannot read: \(String(cString: strerror(errno)))", offset: total, path: path)
            }
            if count == 0 { break }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            total += UInt64(count)
        }
        size = total
        sha256 = hexString(Array(hasher.finalize()))
    }
}
