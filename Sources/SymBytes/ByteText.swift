/// Appends `value` in decimal to `output` (no allocation; every text and JSON writer uses this).
public func appendDecimal(_ value: UInt64, to output: inout [UInt8]) {
    if value < 10 { output.append(UInt8(ascii: "0") + UInt8(value)); return }
    var digits = (0 as UInt64, 0 as UInt64, 0 as UInt64)  // 24 bytes: room for 20 digits
    var count = 0
    var rest = value
    withUnsafeMutableBytes(of: &digits) { buffer in
        while rest > 0 {
            buffer[count] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
            count += 1
        }
        for index in stride(from: count - 1, through: 0, by: -1) { output.append(buffer[index]) }
    }
}

/// Appends `value` in lowercase hex without `0x` or leading zeros to `output` (no table lookup:
/// a shared array's reference count would bounce between the threads that write reports).
public func appendHex(_ value: UInt64, to output: inout [UInt8]) {
    var shift = value == 0 ? 0 : (63 - value.leadingZeroBitCount) / 4 * 4
    while shift >= 0 {
        let nibble = UInt8(truncatingIfNeeded: value >> UInt64(shift)) & 15
        output.append(nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") - 10 + nibble)
        shift -= 4
    }
}

/// Appends `text` as the contents of a JSON string (RFC 8259 §7), escaped the way llvm's
/// `json::OStream` escapes: `\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`, other controls as `\u00XX`.
public func appendJSONEscaped(_ text: some Collection<UInt8>, to output: inout [UInt8]) {
    for byte in text {
        switch byte {
        case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
        case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
        case 0x0a: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
        case 0x0d: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
        case 0x09: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
        case 0x08: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
        case 0x0c: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
        case 0..<0x20:
            output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
            output.append(lowercaseHexDigits[Int(byte >> 4)])
            output.append(lowercaseHexDigits[Int(byte & 15)])
        default: output.append(byte)
        }
    }
}

/// Whether `text` has a byte that a JSON string must escape (a control character, `"` or `\`),
/// checked eight bytes at a time: names and paths are long and almost never need escaping.
public func needsJSONEscaping(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
    let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
    var position = 0
    if let base = text.baseAddress {
        let raw = UnsafeRawPointer(base)
        while position + 8 <= text.count {
            let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: position, as: UInt64.self))
            // A zero byte in `x` sets its high bit in `(x - ones) & ~x & highs` (exact for
            // "some byte is zero"); bytes below 0x20 likewise with `word - 0x20…`.
            let quote = word ^ (ones &* 0x22), backslash = word ^ (ones &* 0x5c)
            let found = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word)
            if found & highs != 0 { return true }
            position += 8
        }
    }
    while position < text.count {
        let byte = text[position]
        if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return true }
        position += 1
    }
    return false
}

/// Whether `text` has a byte that a JSON string must escape (through its contiguous bytes when
/// it has them).
public func needsJSONEscaping(_ text: some Collection<UInt8>) -> Bool {
    text.withContiguousStorageIfAvailable { needsJSONEscaping($0) }
        ?? text.contains { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
}

/// Appends `text` to `output` as a JSON string in quotes: copied whole when nothing needs
/// escaping (the common case), else escaped by `appendJSONEscaped`. Both JSON writers
/// (SymReport's `JSONText`, Symbolication's `JSONWriter`) write every string through it.
public func appendJSONString(_ text: UnsafeBufferPointer<UInt8>, to output: inout [UInt8]) {
    output.append(UInt8(ascii: "\""))
    if needsJSONEscaping(text) {
        appendJSONEscaped(text, to: &output)
    } else {
        output.append(contentsOf: text)
    }
    output.append(UInt8(ascii: "\""))
}

private let lowercaseHexDigits: [UInt8] = Array("0123456789abcdef".utf8)
