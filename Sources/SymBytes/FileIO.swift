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
}
