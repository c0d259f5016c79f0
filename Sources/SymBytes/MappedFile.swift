#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A read-only memory-mapped file; the mapping lives as long as this object.
// The audited wrapper for a mapping: immutable after init, unmapped only in deinit.
public final class MappedFile: @unchecked Sendable {
    /// The path the file was opened from.
    public let path: String
    private let base: UnsafeRawPointer?
    /// File size in bytes.
    public let count: Int

    /// Maps `path` read-only. Empty files map to an empty buffer.
    public convenience init(path: String) throws(FormatError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw FormatError(.io, "cannot open: \(String(cString: strerror(errno)))", path: path)
        }
        defer { close(fd) }
        try self.init(descriptor: fd, path: path)
    }

    /// Maps the regular file open at `fd` read-only (the descriptor stays the caller's; the
    /// mapping outlives it), naming it `path` (a file already unlinked has only a name).
    public init(descriptor fd: Int32, path: String) throws(FormatError) {
        self.path = path
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw FormatError(.io, "cannot stat: \(String(cString: strerror(errno)))", path: path)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw FormatError(.io, "not a regular file", path: path)
        }
        let size = Int(info.st_size)
        count = size
        if size == 0 {
            base = nil
            return
        }
        let pointer = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0)
        guard let pointer, pointer != MAP_FAILED else {
            throw FormatError(.io, "cannot map: \(String(cString: strerror(errno)))", path: path)
        }
        base = UnsafeRawPointer(pointer)
    }

    deinit {
        if let base { munmap(UnsafeMutableRawPointer(mutating: base), count) }
    }

    /// The mapped bytes; valid while this object is alive.
    public var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base, count: count)
    }
}
