#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import SymBytes

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
        guard range.lowerBound >= 0, range.upperBound <= count,
              let end = Pages.advise(MADV_DONTNEED, whollyInside: base + range.lowerBound, count: range.count)
        else { return range.lowerBound }
        return end - base
    }

    /// Releases the pages lying wholly inside `bytes`.
    public static func release(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        release(of: base, count: bytes.count, 0..<bytes.count)
    }
}
