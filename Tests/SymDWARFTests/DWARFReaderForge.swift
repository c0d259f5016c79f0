/// Hand-made DWARF for cases no compiler emits (hostile input, rare forms): a byte appender with
/// the encodings of DWARF 5 §7.
struct DWARFReaderForge {
    var bytes: [UInt8] = []

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func u16(_ value: UInt16) { append(UInt64(value), width: 2) }
    mutating func u32(_ value: UInt32) { append(UInt64(value), width: 4) }
    mutating func u64(_ value: UInt64) { append(value, width: 8) }

    mutating func append(_ value: UInt64, width: Int) {
        for index in 0..<width { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(8 * index))) }
    }

    mutating func uleb(_ value: UInt64) {
        var rest = value
        repeat {
            var byte = UInt8(rest & 0x7f)
            rest >>= 7
            if rest != 0 { byte |= 0x80 }
            bytes.append(byte)
        } while rest != 0
    }

    mutating func sleb(_ value: Int64) {
        var rest = value
        while true {
            let byte = UInt8(rest & 0x7f)
            rest >>= 7
            if (rest == 0 && byte & 0x40 == 0) || (rest == -1 && byte & 0x40 != 0) {
                bytes.append(byte)
                return
            }
            bytes.append(byte | 0x80)
        }
    }

    mutating func string(_ text: String) {
        bytes += Array(text.utf8)
        bytes.append(0)
    }

    mutating func bytes(_ more: [UInt8]) { bytes += more }

    /// An abbreviation table: (code, tag, has children, [(attribute, form, implicit constant)]).
    static func abbreviations(_ entries: [(code: UInt64, tag: UInt64, children: Bool, attributes: [(UInt64, UInt64, Int64?)])]) -> [UInt8] {
        var forge = DWARFReaderForge()
        for entry in entries {
            forge.uleb(entry.code)
            forge.uleb(entry.tag)
            forge.u8(entry.children ? 1 : 0)
            for (attribute, form, constant) in entry.attributes {
                forge.uleb(attribute)
                forge.uleb(form)
                if let constant { forge.sleb(constant) }
            }
            forge.uleb(0)
            forge.uleb(0)
        }
        forge.uleb(0)
        return forge.bytes
    }

    /// A 32-bit DWARF 2–4 compile unit around `body` (the DIEs).
    static func unit(version: UInt16 = 4, abbreviationOffset: UInt32 = 0, body: [UInt8]) -> [UInt8] {
        var forge = DWARFReaderForge()
        forge.u32(UInt32(2 + 4 + 1 + body.count))
        forge.u16(version)
        forge.u32(abbreviationOffset)
        forge.u8(8)
        forge.bytes(body)
        return forge.bytes
    }

    /// A 32-bit DWARF 5 compile unit around `body`.
    static func unit5(abbreviationOffset: UInt32 = 0, body: [UInt8]) -> [UInt8] {
        var forge = DWARFReaderForge()
        forge.u32(UInt32(2 + 1 + 1 + 4 + body.count))
        forge.u16(5)
        forge.u8(1) // DW_UT_compile
        forge.u8(8)
        forge.u32(abbreviationOffset)
        forge.bytes(body)
        return forge.bytes
    }
}
