/// Lowercase hexadecimal text of `bytes` (build-ids are printed this way everywhere).
public func hexString(_ bytes: some Collection<UInt8>) -> String {
    let digits: [UInt8] = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    out.reserveCapacity(bytes.count * 2)
    for byte in bytes {
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 15)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// Parses hexadecimal text (even length, no prefix) into bytes; nil when it is not hex.
public func bytes(fromHex text: some StringProtocol) -> [UInt8]? {
    let utf8 = Array(text.utf8)
    guard utf8.count % 2 == 0 else { return nil }
    func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
    var out = [UInt8]()
    out.reserveCapacity(utf8.count / 2)
    var index = 0
    while index < utf8.count {
        guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
        out.append(high << 4 | low)
        index += 2
    }
    return out
}
