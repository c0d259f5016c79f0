import SymBytes

/// A bounds-checked forward reader over call-frame bytes: every read checks `limit` (the end of
/// the current record, never past the section) and throws `FormatError.truncated` instead of
/// trapping. Offsets in errors are section offsets.
struct CFICursor {
    let bytes: UnsafeRawBufferPointer
    var offset: Int
    var limit: Int
    let littleEndian: Bool

    init(_ bytes: UnsafeRawBufferPointer, offset: Int = 0, limit: Int? = nil, littleEndian: Bool) {
        self.bytes = bytes
        self.offset = offset
        self.limit = min(limit ?? bytes.count, bytes.count)
        self.littleEndian = littleEndian
    }

    var isAtEnd: Bool { offset >= limit }
    var remaining: Int { max(0, limit - offset) }

    func truncated(_ what: String) -> FormatError {
        FormatError(.truncated, "\(what) extends past the end of its record", offset: UInt64(max(0, offset)))
    }

    mutating func need(_ count: Int, _ what: String) throws(FormatError) {
        guard count >= 0, offset >= 0, offset <= limit, count <= limit - offset else { throw truncated(what) }
    }

    mutating func u8(_ what: String = "a byte") throws(FormatError) -> UInt8 {
        try need(1, what)
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func unsigned(_ size: Int, _ what: String) throws(FormatError) -> UInt64 {
        try need(size, what)
        var value: UInt64 = 0
        for index in 0..<size {
            let byte = UInt64(bytes[offset + (littleEndian ? index : size - 1 - index)])
            value |= byte << (8 * UInt64(index))
        }
        offset += size
        return value
    }

    mutating func u16(_ what: String = "a 2-byte value") throws(FormatError) -> UInt16 { UInt16(try unsigned(2, what)) }
    mutating func u32(_ what: String = "a 4-byte value") throws(FormatError) -> UInt32 { UInt32(try unsigned(4, what)) }
    mutating func u64(_ what: String = "an 8-byte value") throws(FormatError) -> UInt64 { try unsigned(8, what) }

    /// Unsigned LEB128; bits past 64 must be zero.
    mutating func uleb(_ what: String = "a ULEB128 value") throws(FormatError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try u8(what)
            let payload = UInt64(byte & 0x7f)
            if shift < 64 {
                if shift > 57 && payload >> (64 - shift) != 0 {
                    throw FormatError(.invalidValue, "\(what) does not fit in 64 bits", offset: UInt64(offset - 1))
                }
                result |= payload << shift
            } else if payload != 0 {
                throw FormatError(.invalidValue, "\(what) does not fit in 64 bits", offset: UInt64(offset - 1))
            }
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
    }

    /// Signed LEB128, kept to 64 bits.
    mutating func sleb(_ what: String = "an SLEB128 value") throws(FormatError) -> Int64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        var byte: UInt8
        repeat {
            byte = try u8(what)
            if shift < 64 { result |= UInt64(byte & 0x7f) << shift }
            shift += 7
        } while byte & 0x80 != 0
        if shift < 64 && byte & 0x40 != 0 { result |= ~0 << shift }
        return Int64(bitPattern: result)
    }

    /// A ULEB128 that must fit a register number (DWARF register numbers are small).
    mutating func register() throws(FormatError) -> UInt16 {
        let start = offset
        let value = try uleb("a register number")
        guard value <= UInt64(CallFrameInfo.maximumRegister) else {
            throw FormatError(.invalidValue, "register number \(value) is out of range", offset: UInt64(start))
        }
        return UInt16(value)
    }

    /// `count` bytes as a copy.
    mutating func block(_ count: UInt64, _ what: String) throws(FormatError) -> [UInt8] {
        guard count <= UInt64(remaining) else { throw truncated(what) }
        let length = Int(count)
        defer { offset += length }
        return Array(bytes[offset..<(offset + length)])
    }

    mutating func skip(_ count: UInt64, _ what: String) throws(FormatError) {
        guard count <= UInt64(remaining) else { throw truncated(what) }
        offset += Int(count)
    }
}
