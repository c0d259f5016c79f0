#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A read position inside one line of a text report: small checked steps (literals, hex and
/// decimal numbers, spans up to a delimiter) that never trap, whatever the line holds.
struct LineCursor {
    /// The line's bytes (only `init(_:reusing:)` and `returnStorage(to:)` change them).
    private(set) var bytes: [UInt8]
    var index: Int

    init(_ line: Substring, at index: Int = 0) {
        // A contiguous copy (memcpy) when the text is native UTF-8, which it is for parsed reports.
        bytes = line.utf8.withContiguousStorageIfAvailable { Array($0) } ?? Array(line.utf8)
        self.index = index
    }

    /// A cursor at the start of `line`, its bytes copied into `storage`'s buffer (taken; give it
    /// back with `returnStorage(to:)`): a parser reading line after line allocates once.
    init(_ line: Substring, reusing storage: inout [UInt8]) {
        var buffer: [UInt8] = []
        swap(&buffer, &storage)
        buffer.removeAll(keepingCapacity: true)
        if line.utf8.withContiguousStorageIfAvailable({ buffer.append(contentsOf: $0) }) == nil {
            buffer.append(contentsOf: line.utf8)
        }
        bytes = buffer
        index = 0
    }

    /// Hands the bytes' buffer back to `storage` for the next line (the cursor is empty after).
    mutating func returnStorage(to storage: inout [UInt8]) {
        swap(&bytes, &storage)
        bytes = []
        index = 0
    }

    var atEnd: Bool { index >= bytes.count }

    var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    /// Skips spaces and tabs; returns how many.
    @discardableResult
    mutating func skipSpaces() -> Int {
        let start = index
        while index < bytes.count && (bytes[index] == 0x20 || bytes[index] == 0x09) { index += 1 }
        return index - start
    }

    /// Whether `literal` is at the cursor (without moving).
    func looking(at literal: String) -> Bool {
        var position = index
        for byte in literal.utf8 {
            guard position < bytes.count, bytes[position] == byte else { return false }
            position += 1
        }
        return true
    }

    /// Consumes `literal` when it is at the cursor.
    mutating func skip(_ literal: String) -> Bool {
        guard looking(at: literal) else { return false }
        index += literal.utf8.count
        return true
    }

    /// Reads hex digits (no prefix); nil when there is none or more than 16.
    mutating func hexDigits() -> UInt64? {
        var value: UInt64 = 0
        var count = 0
        while let byte = current, let digit = Self.hexValue(byte) {
            guard count < 16 else { return nil }
            value = value << 4 | UInt64(digit)
            count += 1
            index += 1
        }
        return count == 0 ? nil : value
    }

    /// Reads `0x` and hex digits; nil (cursor unchanged) when absent or too long.
    mutating func hexNumber() -> UInt64? {
        let start = index
        guard skip("0x") || skip("0X"), let value = hexDigits() else { index = start; return nil }
        return value
    }

    /// Reads decimal digits; nil when there is none or the value exceeds `Int.max`.
    mutating func decimal() -> Int? {
        var value = 0
        var count = 0
        while let byte = current, byte >= 0x30 && byte <= 0x39 {
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(Int(byte - 0x30))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
            count += 1
            index += 1
        }
        return count == 0 ? nil : value
    }

    /// The text from the cursor up to (not including) the first `byte`, moving past the text;
    /// nil (cursor unchanged) when `byte` does not occur.
    mutating func take(until byte: UInt8) -> String? {
        guard let end = bytes[index...].firstIndex(of: byte) else { return nil }
        let text = String(decoding: bytes[index..<end], as: UTF8.self)
        index = end
        return text
    }

    /// The rest of the line.
    mutating func rest() -> String {
        let text = String(decoding: bytes[min(index, bytes.count)...], as: UTF8.self)
        index = bytes.count
        return text
    }

    /// The first position at or after the cursor where `literal` starts.
    func find(_ literal: String, from start: Int? = nil) -> Int? {
        var literal = literal
        return literal.withUTF8 { Self.find($0, in: bytes, from: start ?? index) }
    }

    /// The last position where `literal` starts.
    func findLast(_ literal: String) -> Int? {
        var literal = literal
        return literal.withUTF8 { needle -> Int? in
            guard !needle.isEmpty, bytes.count >= needle.count else { return nil }
            return bytes.withUnsafeBufferPointer { haystack -> Int? in
                var position = haystack.count - needle.count
                while position >= 0 {
                    if haystack[position] == needle[0] && memoryEqual(haystack, position, needle) { return position }
                    position -= 1
                }
                return nil
            }
        }
    }

    static func find(_ needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        needle.withUnsafeBufferPointer { find($0, in: bytes, from: start) }
    }

    static func find(_ needle: UnsafeBufferPointer<UInt8>, in bytes: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, start >= 0, bytes.count >= needle.count else { return nil }
        return bytes.withUnsafeBufferPointer { haystack -> Int? in
            var position = start
            let first = needle[0]
            while position <= haystack.count - needle.count {
                if haystack[position] == first && memoryEqual(haystack, position, needle) { return position }
                position += 1
            }
            return nil
        }
    }

    /// Whether the bytes at `range` equal `other` (one comparison, no copy).
    func bytes(_ range: Range<Int>, equal other: [UInt8]) -> Bool {
        guard range.lowerBound >= 0, range.upperBound <= bytes.count, range.count == other.count else { return false }
        return bytes.withUnsafeBufferPointer { haystack in
            other.withUnsafeBufferPointer { memoryEqual(haystack, range.lowerBound, $0) }
        }
    }

    func text(_ range: Range<Int>) -> String {
        let lower = max(0, min(range.lowerBound, bytes.count)), upper = max(lower, min(range.upperBound, bytes.count))
        return String(decoding: bytes[lower..<upper], as: UTF8.self)
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x61...0x66: byte - 0x61 + 10
        case 0x41...0x46: byte - 0x41 + 10
        default: nil
        }
    }

    /// Whether `text` is a plausible GNU build-id: even-length hex, 2 to 64 bytes.
    static func isBuildID(_ text: String) -> Bool {
        let count = text.utf8.count
        return count >= 4 && count <= 128 && count % 2 == 0 && text.utf8.allSatisfy { hexValue($0) != nil }
    }

    /// Whether `bytes` are a plausible GNU build-id (see `isBuildID(_:)`), without a `String`.
    static func isBuildID(_ bytes: ArraySlice<UInt8>) -> Bool {
        let count = bytes.count
        guard count >= 4 && count <= 128 && count % 2 == 0 else { return false }
        for byte in bytes where hexValue(byte) == nil { return false }
        return true
    }

    /// A build-id in lowercase (copied only when it has uppercase digits).
    static func lowercaseHex(_ text: String) -> String {
        text.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x46 }) ? text.lowercased() : text
    }
}

extension String {
    /// The string without leading and trailing spaces, tabs and carriage returns.
    var trimmed: String {
        let utf8 = Array(self.utf8)
        var start = 0, end = utf8.count
        while start < end && (utf8[start] == 0x20 || utf8[start] == 0x09 || utf8[start] == 0x0d) { start += 1 }
        while end > start && (utf8[end - 1] == 0x20 || utf8[end - 1] == 0x09 || utf8[end - 1] == 0x0d) { end -= 1 }
        return String(decoding: utf8[start..<end], as: UTF8.self)
    }
}

/// Whether `haystack[position...]` starts with `needle` (the caller checked it fits).
private func memoryEqual(_ haystack: UnsafeBufferPointer<UInt8>, _ position: Int, _ needle: UnsafeBufferPointer<UInt8>) -> Bool {
    guard position >= 0, position + needle.count <= haystack.count else { return false }
    if needle.isEmpty { return true }
    return memcmp(haystack.baseAddress! + position, needle.baseAddress!, needle.count) == 0
}

/// Lowercase hex of a value, with `0x`.
func hex(_ value: UInt64) -> String { "0x" + String(value, radix: 16) }

extension StringProtocol {
    /// The first range of `needle`, found by a byte search (StringProcessing's `firstRange`
    /// costs microseconds per call, too much per frame line).
    func byteRange(of needle: String) -> Range<Index>? {
        let pattern = Array(needle.utf8)
        guard let first = pattern.first else { return nil }
        let view = utf8
        var position = view.startIndex
        while let candidate = view[position...].firstIndex(of: first) {
            var probe = candidate
            var matched = 0
            while matched < pattern.count && probe < view.endIndex && view[probe] == pattern[matched] {
                probe = view.index(after: probe)
                matched += 1
            }
            if matched == pattern.count { return candidate..<probe }
            position = view.index(after: candidate)
        }
        return nil
    }
}
