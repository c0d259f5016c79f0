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

/// Appends `value` in lowercase hex without `0x` to `output`.
public func appendHex(_ value: UInt64, to output: inout [UInt8]) {
    if value == 0 { output.append(UInt8(ascii: "0")); return }
    var shift = (63 - value.leadingZeroBitCount) / 4 * 4
    while shift >= 0 {
        output.append(lowercaseHexDigits[Int((value >> UInt64(shift)) & 15)])
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

/// Whether `text` has a byte that a JSON string must escape.
public func needsJSONEscaping(_ text: some Collection<UInt8>) -> Bool {
    text.contains { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
}

private let lowercaseHexDigits: [UInt8] = Array("0123456789abcdef".utf8)
