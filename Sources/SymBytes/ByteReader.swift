/// Bounds-checked little/big-endian reads at explicit offsets over borrowed bytes.
///
/// Every read checks the range and throws `FormatError.truncated` instead of trapping; offsets are
/// `Int` and every addition of a value read from input is overflow-checked.
public struct ByteReader {
    /// The bytes being read.
    public let bytes: UnsafeRawBufferPointer
    /// Whether multi-byte values are little-endian.
    public var littleEndian: Bool
    /// Offset of `bytes` within the original input, added to error offsets.
    public var baseOffset: UInt64

    /// Creates a reader over `bytes`.
    public init(_ bytes: UnsafeRawBufferPointer, littleEndian: Bool = true, baseOffset: UInt64 = 0) {
        self.bytes = bytes
        self.littleEndian = littleEndian
        self.baseOffset = baseOffset
    }

    /// Number of bytes readable.
    @inlinable public var count: Int { bytes.count }

    /// Throws unless `length` bytes are readable at `offset`.
    @inlinable
    public func check(_ offset: Int, _ length: Int, _ what: @autoclosure () -> String = "data") throws(FormatError) {
        guard offset >= 0, length >= 0, offset <= bytes.count, length <= bytes.count - offset else {
            throw FormatError(.truncated, "\(what()) extends past the end of the input",
                              offset: baseOffset &+ UInt64(max(0, offset)))
        }
    }

    /// Reads one byte.
    @inlinable
    public func u8(at offset: Int) throws(FormatError) -> UInt8 {
        try check(offset, 1)
        return bytes[offset]
    }

    /// Reads an unsigned 16-bit value.
    @inlinable
    public func u16(at offset: Int) throws(FormatError) -> UInt16 {
        try check(offset, 2)
        let v = bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self)
        return littleEndian ? UInt16(littleEndian: v) : UInt16(bigEndian: v)
    }

    /// Reads an unsigned 32-bit value.
    @inlinable
    public func u32(at offset: Int) throws(FormatError) -> UInt32 {
        try check(offset, 4)
        let v = bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
        return littleEndian ? UInt32(littleEndian: v) : UInt32(bigEndian: v)
    }

    /// Reads an unsigned 64-bit value.
    @inlinable
    public func u64(at offset: Int) throws(FormatError) -> UInt64 {
        try check(offset, 8)
        let v = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        return littleEndian ? UInt64(littleEndian: v) : UInt64(bigEndian: v)
    }

    /// Reads an unsigned value of `size` bytes (1 to 8) widened to 64 bits: a memory read of
    /// the width a stack walker asks for.
    @inlinable
    public func unsigned(at offset: Int, size: Int) throws(FormatError) -> UInt64 {
        guard size >= 1, size <= 8 else {
            throw FormatError(.invalidValue, "a \(size)-byte value: 1 to 8 bytes are read at once", offset: baseOffset &+ UInt64(max(0, offset)))
        }
        try check(offset, size)
        var value: UInt64 = 0
        for index in 0..<size {
            value |= UInt64(bytes[offset + (littleEndian ? index : size - 1 - index)]) << (8 * UInt64(index))
        }
        return value
    }

    /// Reads a 32- or 64-bit unsigned value widened to 64 bits.
    @inlinable
    public func word(at offset: Int, is64Bit: Bool) throws(FormatError) -> UInt64 {
        is64Bit ? try u64(at: offset) : UInt64(try u32(at: offset))
    }

    /// A sub-range of the bytes, bounds-checked.
    @inlinable
    public func slice(_ offset: Int, _ length: Int, _ what: @autoclosure () -> String = "data") throws(FormatError) -> UnsafeRawBufferPointer {
        try check(offset, length, what())
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)])
    }

    /// A NUL-terminated string starting at `offset` (bytes up to the end when unterminated).
    public func cString(at offset: Int) throws(FormatError) -> String {
        try check(offset, 0, "string")
        var end = offset
        while end < bytes.count && bytes[end] != 0 { end += 1 }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<end]), as: UTF8.self)
    }

    /// Converts an untrusted 64-bit value to an `Int` offset or size, or throws.
    @inlinable
    public static func int(_ value: UInt64, _ what: @autoclosure () -> String) throws(FormatError) -> Int {
        guard value <= UInt64(Int.max) else {
            throw FormatError(.invalidValue, "\(what()) is too large (\(value))")
        }
        return Int(value)
    }
}
