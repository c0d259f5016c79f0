#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Asks for fresh anonymous memory that is about to be written to be mapped at once: one call
/// instead of a page fault per page as it is first written, and no shared zero page mapped by a
/// first read and replaced by the first write (which interrupts the process's other threads to
/// flush their TLBs).
public enum WritablePages {
    /// `MADV_POPULATE_WRITE` (Linux 5.14), which Debian 12's headers do not name.
    static let populateWrite: Int32 = 23

    /// Makes the pages lying wholly inside the `count` bytes at `start` present and writable.
    /// Advice only: their contents are unchanged, and a kernel without `MADV_POPULATE_WRITE`
    /// leaves them to fault in as before.
    public static func populate(_ start: UnsafeMutableRawPointer, count: Int) {
        #if os(Linux)
        let pageSize = UInt(max(1, sysconf(Int32(_SC_PAGESIZE))))
        let address = UInt(bitPattern: start)
        let first = (address + pageSize - 1) / pageSize * pageSize
        let end = (address + UInt(max(0, count))) / pageSize * pageSize
        guard first < end, let pointer = UnsafeMutableRawPointer(bitPattern: first) else { return }
        _ = madvise(pointer, Int(end - first), populateWrite)
        #endif
    }
}
