#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The POSIX file idioms that must be written once (STYLE.md 25): writes and bounded reads that
/// survive short transfers and signals, durable writes and renames.
public enum FileIO {
    /// Writes all of `bytes` to `descriptor`, retrying short writes and `EINTR`; 0 when every
    /// byte was written, else the `errno` of the failed write. With `offset`, the bytes go there
    /// (pwrite(2), the file position left alone); without, at the file position.
    public static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, at offset: UInt64? = nil) -> Int32 {
        guard var next = bytes.baseAddress else { return 0 }
        if let offset, offset > UInt64(off_t.max) - UInt64(bytes.count) { return EFBIG }
        var left = bytes.count
        while left > 0 {
            let written = if let offset {
                pwrite(descriptor, next, left, off_t(offset) + off_t(bytes.count - left))
            } else {
                write(descriptor, next, left)
            }
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

    /// Up to `count` bytes of `descriptor` from `offset` (pread(2), so the file position is left
    /// alone), retrying short reads and `EINTR`: fewer only when the file ends first.
    public static func readAll(_ descriptor: Int32, count: Int, at offset: UInt64) throws(ReadFailure) -> [UInt8] {
        guard count > 0 else { return [] }
        var failure: Int32 = 0
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            while initialized < count {
                let got = pread(descriptor, buffer.baseAddress! + initialized, count - initialized, off_t(offset) + off_t(initialized))
                if got < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                if got == 0 { return }
                initialized += got
            }
        }
        guard failure == 0 else { throw ReadFailure(code: failure, bytesRead: bytes.count) }
        return bytes
    }

    /// A read that failed: its `errno`, and how many bytes arrived before.
    public struct ReadFailure: Error, Equatable, Sendable {
        public let code: Int32
        public let bytesRead: Int
        public init(code: Int32, bytesRead: Int) {
            self.code = code
            self.bytesRead = bytesRead
        }
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
        moveDurably(source, to: destination)?.code ?? 0
    }

    /// A step of a durable write or rename that failed, and the `errno` it failed with; for
    /// callers whose messages say which step went wrong.
    public struct DurableFailure: Error, Equatable, Sendable {
        /// The steps, in the order they run.
        public enum Step: Sendable {
            /// Creating the scratch file.
            case create
            /// Writing the bytes into it.
            case write
            /// Flushing the file's data (opening it by path, then fsync).
            case syncFile
            /// The rename into place.
            case rename
            /// Flushing the destination's directory; the file is then already in place.
            case syncDirectory
        }
        public let step: Step
        public let code: Int32
        public init(_ step: Step, _ code: Int32) {
            self.step = step
            self.code = code
        }
    }

    /// `durablyRename`, saying which step failed: nil on success.
    public static func moveDurably(_ source: String, to destination: String) -> DurableFailure? {
        let synced = sync(path: source)
        guard synced == 0 else { return DurableFailure(.syncFile, synced) }
        guard rename(source, destination) == 0 else { return DurableFailure(.rename, errno) }
        let directorySynced = sync(path: directory(of: destination), directory: true)
        return directorySynced == 0 ? nil : DurableFailure(.syncDirectory, directorySynced)
    }

    /// `writeDurably`, saying which step failed: nil on success. The scratch file is created with
    /// `permissions`, and only when absent if `exclusive` (a name of its own per writer); it is
    /// removed when a step before the rename fails.
    public static func writeDurably(_ bytes: [UInt8], to path: String, scratch: String, exclusive: Bool,
                                    permissions: mode_t = 0o644) -> DurableFailure? {
        let descriptor = open(scratch, O_WRONLY | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : O_TRUNC), permissions)
        guard descriptor >= 0 else { return DurableFailure(.create, errno) }
        let written = bytes.withUnsafeBytes { writeAll(descriptor, $0) }
        close(descriptor)
        let failure = written == 0 ? moveDurably(scratch, to: path) : DurableFailure(.write, written)
        if let failure, failure.step != .syncDirectory { unlink(scratch) }
        return failure
    }

    /// Writes `bytes` to `path` durably: into the scratch file `scratch` (same filesystem), fsync,
    /// then `durablyRename`; readers see the old file or the whole new one. 0 on success, else the
    /// `errno` of the failed step (the scratch file is then removed).
    public static func writeDurably(_ bytes: [UInt8], to path: String, scratch: String) -> Int32 {
        writeDurably(bytes, to: path, scratch: scratch, exclusive: false)?.code ?? 0
    }
}
