import CLibz
import SymBytes

/// A `.gnu_debuglink` section: the separate debug file's name and the CRC of its contents.
public struct DebugLink: Sendable, Equatable {
    /// File name of the debug file (no directory), looked up next to the binary and in
    /// `/usr/lib/debug/<dir>`.
    public let fileName: String
    /// `gnuDebuglinkCRC32` of the whole debug file.
    public let crc: UInt32

    /// Creates a debug link.
    public init(fileName: String, crc: UInt32) {
        self.fileName = fileName
        self.crc = crc
    }

    /// Parses the section bytes: a NUL-terminated name, zero padding to a 4-byte boundary, then
    /// the CRC in the file's byte order (GDB manual "Debugging Information in Separate Files").
    init(parsing bytes: UnsafeRawBufferPointer, littleEndian: Bool, fileOffset: UInt64) throws(FormatError) {
        let names = StringTable(bytes: bytes, fileOffset: fileOffset)
        fileName = try names.string(at: 0, "debug link file name")
        // Measure the name in bytes, not through the decoded String, which repairs bad UTF-8.
        let nameLength = bytes.firstIndex(of: 0) ?? bytes.count
        let crcOffset = (nameLength + 1 + 3) & ~3
        crc = try ByteReader(bytes, littleEndian: littleEndian, baseOffset: fileOffset).u32(at: crcOffset)
    }
}

/// The CRC-32 that `.gnu_debuglink` records: the IEEE 802.3 polynomial, as zlib's `crc32`.
public func gnuDebuglinkCRC32(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
    guard var next = bytes.baseAddress?.assumingMemoryBound(to: Bytef.self) else { return 0 }
    var remaining = bytes.count
    var crc: uLong = crc32(0, nil, 0)
    // zlib takes a 32-bit length: feed large inputs in chunks.
    while remaining > 0 {
        let chunk = min(remaining, 1 << 30)
        crc = crc32(crc, next, uInt(chunk))
        next += chunk
        remaining -= chunk
    }
    return UInt32(truncatingIfNeeded: crc)
}
