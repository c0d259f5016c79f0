/// LEB128 coding of the writer's own working buffers (`LineTable`, `RangeList`). The decoders do
/// not check bounds beyond Swift's own: they only read bytes these encoders wrote.
enum LEB128Coding {
    /// Appends `value` as ULEB128.
    @inline(__always)
    static func appendUnsigned(_ value: UInt64, to bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// Appends `value` as SLEB128.
    @inline(__always)
    static func appendSigned(_ value: Int64, to bytes: inout [UInt8]) {
        var value = value
        while true {
            let byte = UInt8(truncatingIfNeeded: value) & 0x7F
            value >>= 7
            if (value == 0 && byte & 0x40 == 0) || (value == -1 && byte & 0x40 != 0) {
                bytes.append(byte)
                return
            }
            bytes.append(byte | 0x80)
        }
    }

    /// Writes `value` as ULEB128 at `offset` of a buffer with room for it, moving past it.
    @inline(__always)
    static func writeUnsigned(_ value: UInt64, to bytes: UnsafeMutableBufferPointer<UInt8>, at offset: inout Int) {
        var value = value
        while value >= 0x80 {
            bytes[offset] = UInt8(truncatingIfNeeded: value) | 0x80
            offset += 1
            value >>= 7
        }
        bytes[offset] = UInt8(value)
        offset += 1
    }

    /// Writes `value` as SLEB128 at `offset` of a buffer with room for it, moving past it.
    @inline(__always)
    static func writeSigned(_ value: Int64, to bytes: UnsafeMutableBufferPointer<UInt8>, at offset: inout Int) {
        var value = value
        while true {
            let byte = UInt8(truncatingIfNeeded: value) & 0x7F
            value >>= 7
            if (value == 0 && byte & 0x40 == 0) || (value == -1 && byte & 0x40 != 0) {
                bytes[offset] = byte
                offset += 1
                return
            }
            bytes[offset] = byte | 0x80
            offset += 1
        }
    }

    /// Reads a ULEB128 at `offset`, moving past it.
    @inline(__always)
    static func unsigned(_ bytes: UnsafeBufferPointer<UInt8>, _ offset: inout Int) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = bytes[offset]
            offset += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
    }

    /// Reads an SLEB128 at `offset`, moving past it.
    @inline(__always)
    static func signed(_ bytes: UnsafeBufferPointer<UInt8>, _ offset: inout Int) -> Int64 {
        var value: Int64 = 0
        var shift: Int64 = 0
        while true {
            let byte = bytes[offset]
            offset += 1
            value |= Int64(byte & 0x7F) << shift
            shift += 7
            if byte & 0x80 == 0 {
                if shift < 64 && byte & 0x40 != 0 { value |= -1 << shift }
                return value
            }
        }
    }
}

extension Array {
    /// Makes room for `extra` more elements, growing by a quarter rather than doubling when full:
    /// the writer's big arrays then leave at most a fifth unused, and hold 2.25 times their size,
    /// not 3, while they move.
    @inline(__always)
    mutating func reserveGrowingByQuarter(_ extra: Int) {
        if count + extra > capacity { reserveCapacity(count + Swift.max(extra, count / 4)) }
    }
}
