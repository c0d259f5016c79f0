#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Gives back resident pages of read-only private file mappings (`MappedFile`) once a pass is done
/// with them: reading them again faults them in from the page cache, so this lowers resident
/// memory without changing what is read. Never for memory that was written (a decompressed
/// section): its pages would come back zeroed.
public enum FileMappedPages {
    /// Releases the pages lying wholly inside `range` of the `count` bytes at `base`.
    ///
    /// Returns the offset up to which pages were released (`range.upperBound` rounded down to a
    /// page), where a caller releasing a region piece by piece starts its next range, so that
    /// pages straddling two ranges are released too.
    @discardableResult
    public static func release(of base: UnsafeRawPointer, count: Int, _ range: Range<Int>) -> Int {
        guard range.lowerBound >= 0, range.upperBound <= count else { return range.lowerBound }
        let pageSize = UInt(max(1, sysconf(Int32(_SC_PAGESIZE))))
        let address = UInt(bitPattern: base)
        let start = (address + UInt(range.lowerBound) + pageSize - 1) / pageSize * pageSize
        let end = (address + UInt(range.upperBound)) / pageSize * pageSize
        guard start < end, let pointer = UnsafeMutableRawPointer(bitPattern: start) else { return range.lowerBound }
        _ = madvise(pointer, Int(end - start), MADV_DONTNEED)
        return Int(end - address)
    }

    /// Releases the pages lying wholly inside `bytes`.
    public static func release(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        release(of: base, count: bytes.count, 0..<bytes.count)
    }
}
