import SymBytes
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A growable byte buffer for output hot paths: appends are a capacity check and a copy, with no
/// uniqueness check or reference counting (it cannot be copied, so nothing else shares it).
public struct OutputBytes: ~Copyable {
    private var base: UnsafeMutableRawPointer
    /// Bytes held.
    public private(set) var count = 0
    private var capacity: Int

    /// Creates an empty buffer with room for `capacity` bytes.
    public init(capacity: Int = 1 << 16) {
        self.capacity = max(capacity, 64)
        base = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 16)
    }

    deinit { base.deallocate() }

    /// Makes room for `extra` more bytes.
    @inline(__always)
    public mutating func reserve(_ extra: Int) {
        if capacity - count < extra { grow(extra) }
    }

    private mutating func grow(_ extra: Int) {
        var larger = capacity * 2
        while larger - count < extra { larger *= 2 }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: larger, alignment: 16)
        buffer.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = buffer
        capacity = larger
    }

    /// Appends bytes.
    @inline(__always)
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        let length = bytes.count
        reserve(length)
        let target = base + count
        // Most appends are short (separators, line numbers' neighbours, short names): two
        // overlapping word copies instead of a call to memmove.
        if length >= 8 && length <= 16 {
            target.storeBytes(of: source.loadUnaligned(as: UInt64.self), as: UInt64.self)
            (target + (length - 8)).storeBytes(of: (source + (length - 8)).loadUnaligned(as: UInt64.self), as: UInt64.self)
        } else if length >= 4 && length < 8 {
            target.storeBytes(of: source.loadUnaligned(as: UInt32.self), as: UInt32.self)
            (target + (length - 4)).storeBytes(of: (source + (length - 4)).loadUnaligned(as: UInt32.self), as: UInt32.self)
        } else if length < 4 {
            for offset in 0..<length {
                target.storeBytes(of: source.load(fromByteOffset: offset, as: UInt8.self), toByteOffset: offset, as: UInt8.self)
            }
        } else {
            target.copyMemory(from: source, byteCount: length)
        }
        count += length
    }

    /// Appends the bytes of an array.
    @inline(__always)
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Appends the UTF-8 bytes of a static string.
    @inline(__always)
    public mutating func append(_ text: StaticString) {
        append(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends one byte.
    @inline(__always)
    public mutating func append(_ byte: UInt8) {
        reserve(1)
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    /// Appends `value` in decimal.
    @inline(__always)
    public mutating func appendDecimal(_ value: UInt64) {
        if value < 10 { return append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value)) }
        var digits = 0
        var rest = value
        while rest > 0 { digits += 1; rest /= 10 }
        reserve(digits)
        var position = count + digits
        rest = value
        while rest > 0 {
            position -= 1
            base.storeBytes(of: UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10), toByteOffset: position, as: UInt8.self)
            rest /= 10
        }
        count += digits
    }

    /// Appends `value` in lowercase hex without leading zeros.
    @inline(__always)
    public mutating func appendHex(_ value: UInt64) {
        let digits = max(1, (64 - value.leadingZeroBitCount + 3) / 4)
        reserve(digits)
        var position = count + digits
        var rest = value
        for _ in 0..<digits {
            position -= 1
            let nibble = UInt8(truncatingIfNeeded: rest & 15)
            base.storeBytes(of: nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ (nibble &- 10),
                            toByteOffset: position, as: UInt8.self)
            rest >>= 4
        }
        count += digits
    }

    /// The bytes `range` of the buffer (valid until the next append).
    @inline(__always)
    public func bytes(_ range: Range<Int>) -> UnsafeRawBufferPointer {
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "range out of the buffer")
        return UnsafeRawBufferPointer(start: base + range.lowerBound, count: range.count)
    }

    /// The bytes held (valid until the next append).
    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// Forgets the bytes, keeping the memory.
    public mutating func removeAll() { count = 0 }

    /// Writes the bytes to a file descriptor (retrying short writes and interruptions), then
    /// forgets them; false when the descriptor refuses them.
    @discardableResult
    public mutating func flush(to descriptor: Int32) -> Bool {
        defer { count = 0 }
        return write(0..<count, to: descriptor)
    }

    /// Writes the bytes `range` of the buffer to a file descriptor (retrying short writes and
    /// interruptions), keeping them; false when the descriptor refuses them.
    @discardableResult
    public func write(_ range: Range<Int>, to descriptor: Int32) -> Bool {
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "range out of the buffer")
        return FileIO.writeAll(descriptor, UnsafeRawBufferPointer(start: base + range.lowerBound, count: range.count)) == 0
    }
}

