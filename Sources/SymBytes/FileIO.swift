#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The POSIX file idioms that must be written once (STYLE.md 25): writes that survive short
/// writes and signals.
public enum FileIO {
    /// Writes all of `bytes` to `descriptor`, retrying short writes and `EINTR`; 0 when every
    /// byte was written, else the `errno` of the failed write.
    public static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
        guard var next = bytes.baseAddress else { return 0 }
        var left = bytes.count
        while left > 0 {
            let written = write(descriptor, next, left)
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            if written == 0 { return EIO }
            next += written
            left -= written
        }
        return 0
    }

    /// fsync(2) of the file or directory at `path`: 0 when its data (or entries) reached the disk,
    /// else the `errno` of the failed open or sync.
    public static func sync(path: String, directory: Bool = false) -> Int32 {
        let descriptor = open(path, (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC)
        guard descriptor >= 0 else { return errno }
        defer { close(descriptor) }
        while fsync(descriptor) != 0 {
            if errno == EINTR { continue }
            return errno
        }
        return 0
    }

    /// The directory part of `path` (`"."` for a bare name, `"/"` for a file in the root).
    public static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The durable rename: flushes `source`'s data, renames it to `destination` (atomic within one
    /// filesystem) and flushes the destination's directory, so that after a power loss the file is
    /// either at its old name or whole at its new one. 0 on success, else the `errno` of the step
    /// that failed (`EXDEV` when the two are on different filesystems).
    public static func durablyRename(_ source: String, to destination: String) -> Int32 {
        let synced = sync(path: source)
        guard synced == 0 else { return synced }
        guard rename(source, destination) == 0 else { return errno }
        return sync(path: directory(of: destination), directory: true)
    }

    /// Writes `bytes` to `path` durably: into the scratch file `scratch` (same filesystem), fsync,
    /// then `durablyRename`; readers see the old file or the whole new one. 0 on success, else the
    /// `errno` of the failed step (the scratch file is then removed).
    public static func writeDurably(_ bytes: [UInt8], to path: String, scratch: String) -> Int32 {
        let descriptor = open(scratch, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return errno }
        var failure = bytes.withUnsafeBytes { writeAll(descriptor, $0) }
        close(descriptor)
        // durablyRename flushes the scratch file's data before the rename.
        if failure == 0 { failure = durablyRename(scratch, to: path) }
        if failure != 0 { unlink(scratch) }
        return failure
    }
}
