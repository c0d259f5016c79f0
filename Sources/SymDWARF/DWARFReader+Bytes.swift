#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import SymBytes

extension DWARFReader {
    /// One section's bytes, read at explicit offsets against an explicit limit (the end of the
    /// unit, list or header being read), so a structure can never read into its neighbour.
    ///
    /// Every read checks `offset < limit` (callers keep `limit <= count`) and throws instead of
    /// trapping; multi-byte values are read unaligned in the file's byte order. Errors carry the
    /// section-relative offset.
    struct Bytes {
        /// First byte; a dangling non-nil pointer for an empty section (never dereferenced, because
        /// every read is checked against `count == 0` first).
        let base: UnsafeRawPointer
        /// Number of bytes.
        let count: Int
        /// Whether multi-byte values are big-endian.
        let bigEndian: Bool
        /// Section name for error messages.
        let section: StaticString

        /// Wraps a section's bytes.
        init(_ buffer: UnsafeRawBufferPointer, bigEndian: Bool, section: StaticString) {
            // An empty buffer may have no address; any non-nil pointer works as nothing is read.
            base = buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 0x10)!
            count = buffer.count
            self.bigEndian = bigEndian
            self.section = section
        }

        /// The error for a read of `length` bytes at `offset` that crosses `limit`.
        func truncated(_ offset: Int, _ what: StaticString = "data") -> FormatError {
            FormatError(.truncated, "\(what) extends past its end in \(section)",
                        offset: UInt64(clamping: max(0, offset)))
        }

        /// An invalid-value error at `offset`.
        func invalid(_ offset: Int, _ message: String) -> FormatError {
            FormatError(.invalidValue, "\(message) in \(section)", offset: UInt64(clamping: max(0, offset)))
        }

        /// Throws unless `length` bytes are readable at `offset` below `limit`.
        @inline(__always)
        func need(_ offset: Int, _ length: Int, _ limit: Int) throws(FormatError) {
            guard offset >= 0, length <= limit &- offset else { throw truncated(offset) }
        }

        /// Reads one byte and advances.
        @inline(__always)
        func u8(_ offset: inout Int, _ limit: Int) throws(FormatError) -> UInt8 {
            guard offset >= 0, offset < limit else { throw truncated(offset) }
            let value = base.load(fromByteOffset: offset, as: UInt8.self)
            offset &+= 1
            return value
        }

        /// Reads an unsigned 16-bit value and advances.
        @inline(__always)
        func u16(_ offset: inout Int, _ limit: Int) throws(FormatError) -> UInt16 {
            try need(offset, 2, limit)
            let raw = base.loadUnaligned(fromByteOffset: offset, as: UInt16.self)
            offset &+= 2
            return bigEndian ? UInt16(bigEndian: raw) : UInt16(littleEndian: raw)
        }

        /// Reads an unsigned 24-bit value (DW_FORM_strx3/addrx3) and advances.
        @inline(__always)
        func u24(_ offset: inout Int, _ limit: Int) throws(FormatError) -> UInt32 {
            try need(offset, 3, limit)
            let b0 = UInt32(base.load(fromByteOffset: offset, as: UInt8.self))
            let b1 = UInt32(base.load(fromByteOffset: offset + 1, as: UInt8.self))
            let b2 = UInt32(base.load(fromByteOffset: offset + 2, as: UInt8.self))
            offset &+= 3
            return bigEndian ? (b0 << 16 | b1 << 8 | b2) : (b2 << 16 | b1 << 8 | b0)
        }

        /// Reads an unsigned 32-bit value and advances.
        @inline(__always)
        func u32(_ offset: inout Int, _ limit: Int) throws(FormatError) -> UInt32 {
            try need(offset, 4, limit)
            let raw = base.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
            offset &+= 4
            return bigEndian ? UInt32(bigEndian: raw) : UInt32(littleEndian: raw)
        }

        /// Reads an unsigned 64-bit value and advances.
        @inline(__always)
        func u64(_ offset: inout Int, _ limit: Int) throws(FormatError) -> UInt64 {
            try need(offset, 8, limit)
            let raw = base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            offset &+= 8
            return bigEndian ? UInt64(bigEndian: raw) : UInt64(littleEndian: raw)
        }

        /// Reads a section offset of the unit's format (4 bytes in 32-bit DWARF, 8 in 64-bit).
        @inline(__always)
        func offsetValue(_ offset: inout Int, _ limit: Int, is64: Bool) throws(FormatError) -> UInt64 {
            is64 ? try u64(&offset, limit) : UInt64(try u32(&offset, limit))
        }

        /// Reads an address of `size` bytes (1, 2, 4 or 8; validated where the size is read).
        @inline(__always)
        func address(_ offset: inout Int, _ limit: Int, size: Int) throws(FormatError) -> UInt64 {
            switch size {
            case 8: return try u64(&offset, limit)
            case 4: return UInt64(try u32(&offset, limit))
            case 2: return UInt64(try u16(&offset, limit))
            default: return UInt64(try u8(&offset, limit))
            }
        }

        /// Reads an unsigned LEB128 value (DWARF 5 §7.6); bits beyond 64 must be zero.
        @inline(__always)
        func uleb(_ offset: inout Int, _ limit: Int) throws(FormatError) -> UInt64 {
            guard offset >= 0, offset < limit else { throw truncated(offset, "LEB128 value") }
            let first = base.load(fromByteOffset: offset, as: UInt8.self)
            if first < 0x80 {
                offset &+= 1
                return UInt64(first)
            }
            return try ulebTail(&offset, limit)
        }

        /// The multi-byte case of `uleb`.
        func ulebTail(_ offset: inout Int, _ limit: Int) throws(FormatError) -> UInt64 {
            let start = offset
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard offset < limit else { throw truncated(start, "LEB128 value") }
                let byte = base.load(fromByteOffset: offset, as: UInt8.self)
                offset &+= 1
                let bits = UInt64(byte & 0x7f)
                if shift < 64 {
                    // Bits shifted out past bit 63 must be zero.
                    if shift > 57 && (bits >> (64 - shift)) != 0 { throw invalid(start, "LEB128 value overflows 64 bits") }
                    result |= bits << shift
                } else if bits != 0 {
                    throw invalid(start, "LEB128 value overflows 64 bits")
                }
                if byte < 0x80 { return result }
                shift &+= 7
            }
        }

        /// Skips a LEB128 value of any length and signedness without decoding it.
        @inline(__always)
        func skipLEB(_ offset: inout Int, _ limit: Int) throws(FormatError) {
            let start = offset
            while true {
                guard offset >= 0, offset < limit else { throw truncated(start, "LEB128 value") }
                let byte = base.load(fromByteOffset: offset, as: UInt8.self)
                offset &+= 1
                if byte < 0x80 { return }
            }
        }

        /// Reads a signed LEB128 value (DWARF 5 §7.6), sign-extended to 64 bits.
        @inline(__always)
        func sleb(_ offset: inout Int, _ limit: Int) throws(FormatError) -> Int64 {
            guard offset >= 0, offset < limit else { throw truncated(offset, "LEB128 value") }
            let first = base.load(fromByteOffset: offset, as: UInt8.self)
            if first < 0x80 {
                offset &+= 1
                // Bit 6 is the sign: shift it into bit 7 and back arithmetically.
                return Int64(Int8(bitPattern: first << 1) >> 1)
            }
            return try slebTail(&offset, limit)
        }

        /// The multi-byte case of `sleb`. Overlong encodings are accepted; bits past 64 are dropped
        /// (a signed value's high bits are copies of its sign).
        func slebTail(_ offset: inout Int, _ limit: Int) throws(FormatError) -> Int64 {
            let start = offset
            var result: UInt64 = 0
            var shift: UInt64 = 0
            var byte: UInt8 = 0
            repeat {
                guard offset < limit else { throw truncated(start, "LEB128 value") }
                byte = base.load(fromByteOffset: offset, as: UInt8.self)
                offset &+= 1
                if shift < 64 { result |= UInt64(byte & 0x7f) << shift }
                shift &+= 7
            } while byte >= 0x80
            if shift < 64 && (byte & 0x40) != 0 { result |= ~0 << shift }
            return Int64(bitPattern: result)
        }

        /// Skips a NUL-terminated string that must end before `limit`.
        @inline(__always)
        func skipString(_ offset: inout Int, _ limit: Int) throws(FormatError) {
            guard offset >= 0, offset < limit else { throw truncated(offset, "string") }
            guard let nul = memchr(base + offset, 0, limit - offset) else { throw truncated(offset, "string") }
            offset = (UnsafeRawPointer(nul) - base) + 1
        }

        /// Length of the NUL-terminated string at `offset`, whose terminator must lie within the
        /// section and within `maximum` bytes (the caller's remaining work budget).
        func stringLength(at offset: Int, maximum: Int) throws(FormatError) -> Int {
            guard offset >= 0, offset < count else { throw truncated(offset, "string") }
            let scan = min(count - offset, max(0, maximum) + 1)
            guard let nul = memchr(base + offset, 0, scan) else {
                if scan < count - offset {
                    throw FormatError(.limitExceeded, "string longer than the work budget allows in \(section)",
                                      offset: UInt64(offset))
                }
                throw truncated(offset, "string")
            }
            return UnsafeRawPointer(nul) - (base + offset)
        }

        /// The NUL-terminated string at `offset`, decoded as UTF-8 (invalid bytes repaired).
        func string(at offset: Int, length: Int) -> String {
            String(decoding: UnsafeRawBufferPointer(start: base + offset, count: length), as: UTF8.self)
        }
    }
}
