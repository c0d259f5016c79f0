import SymBytes

/// The bytes of one section, kept alive by this object.
///
/// Uncompressed sections point straight into the file's mapping (zero-copy) and retain it;
/// compressed sections own their decompressed buffer.
public final class SectionContents: Sendable {
    private let storage: ByteStorage
    private let start: Int
    /// Number of bytes.
    public let count: Int

    /// Wraps `count` bytes at `start` of `storage`; the caller has bounds-checked the range.
    init(storage: ByteStorage, start: Int, count: Int) {
        precondition(start >= 0 && count >= 0 && count <= storage.bytes.count - start,
                     "section range was not bounds-checked")
        self.storage = storage
        self.start = start
        self.count = count
    }

    /// The section's bytes; valid only while this object is alive.
    ///
    /// Swift may release an object right after its last use, so keep a reference for as long as
    /// the pointer is used (`withExtendedLifetime`), or use `withUnsafeBytes` / `copyBytes()`.
    public var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: storage.bytes[start..<(start + count)])
    }

    /// Calls `body` with the bytes, keeping them alive until it returns.
    public func withUnsafeBytes<Result, Failure: Error>(
        _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        defer { withExtendedLifetime(self) {} }
        return try body(bytes)
    }

    /// A copy of the bytes in an array.
    public func copyBytes() -> [UInt8] {
        withUnsafeBytes { Array($0) }
    }

    /// Whether the bytes are a view of a file mapping (so the pages can be given back to the
    /// kernel and read again from the file), not memory this process wrote.
    public var isFileMapping: Bool {
        if case .mapped = storage { return true }
        return false
    }

    /// Whether the section has no bytes (for example `SHT_NOBITS`).
    public var isEmpty: Bool { count == 0 }

    /// A bounds-checked reader over the bytes with the given byte order.
    public func reader(littleEndian: Bool) -> ByteReader {
        ByteReader(bytes, littleEndian: littleEndian)
    }
}
