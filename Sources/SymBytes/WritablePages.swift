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
        Pages.advise(populateWrite, whollyInside: start, count: count)
        #endif
    }
}
