/// Writes `value` into `bytes` at `offset` as `width` bytes in the given byte order (forging
/// header fields for hostile-input tests).
func patch(_ bytes: inout [UInt8], at offset: Int, _ value: UInt64, width: Int, littleEndian: Bool = true) {
    for index in 0..<width {
        let shift = littleEndian ? index * 8 : (width - 1 - index) * 8
        bytes[offset + index] = UInt8(truncatingIfNeeded: value >> UInt64(shift))
    }
}

/// Reads a `width`-byte unsigned value from `bytes` at `offset`.
func peek(_ bytes: [UInt8], at offset: Int, width: Int, littleEndian: Bool = true) -> UInt64 {
    var value: UInt64 = 0
    for index in 0..<width {
        let shift = littleEndian ? index * 8 : (width - 1 - index) * 8
        value |= UInt64(bytes[offset + index]) << UInt64(shift)
    }
    return value
}

/// Field offsets of an ELF64 little-endian file header and section header, for forging.
enum ELF64Layout {
    static let phoff = 32, shoff = 40, phnum = 56, shentsize = 58, shnum = 60, shstrndx = 62
    static let shName = 0, shType = 4, shFlags = 8, shOffset = 24, shSize = 32, shLink = 40, shInfo = 44
    static let sectionHeaderSize = 64

    /// File offset of section header `index`.
    static func sectionHeader(_ bytes: [UInt8], _ index: Int) -> Int {
        Int(peek(bytes, at: shoff, width: 8)) + index * sectionHeaderSize
    }
}
