#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Memory advice (`madvise`) for the pages lying wholly inside a byte range: a page that a range
/// only partly covers also holds bytes outside it, so it is left alone.
public enum Pages {
    /// The system's page size.
    public static let size = max(1, sysconf(Int32(_SC_PAGESIZE)))

    /// Gives `advice` for the pages lying wholly inside the `count` bytes at `start`. Returns
    /// where those pages end (`start` plus `count`, rounded down to a page), or nil when no page
    /// lies wholly inside.
    @discardableResult
    public static func advise(_ advice: Int32, whollyInside start: UnsafeRawPointer,
                              count: Int) -> UnsafeRawPointer? {
        let size = UInt(Self.size)
        let address = UInt(bitPattern: start)
        let first = (address + size - 1) / size * size
        let end = (address + UInt(max(0, count))) / size * size
        guard first < end, let pointer = UnsafeMutableRawPointer(bitPattern: first) else { return nil }
        _ = madvise(pointer, Int(end - first), advice)
        return UnsafeRawPointer(bitPattern: end)
    }
}
