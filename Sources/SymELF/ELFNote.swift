import SymBytes

/// One note (`ElfN_Nhdr` followed by name and descriptor), from a `SHT_NOTE` section or a
/// `PT_NOTE` segment.
public struct ELFNote: Sendable, Equatable {
    /// The owner name without its terminating NUL (`"GNU"`, `"Go"`, ...).
    public let name: String
    /// `n_type`, meaningful per owner (`NT_GNU_BUILD_ID` for `"GNU"`).
    public let type: UInt32
    /// The descriptor bytes.
    public let descriptor: [UInt8]

    /// Parses every note in `bytes` (gABI "Note Section").
    ///
    /// Name and descriptor are padded to `alignment`: 4 in practice for both classes, 8 only for
    /// notes in an 8-aligned section or segment (as readelf and libelf do for
    /// `.note.gnu.property`). A file's last padding may be missing.
    static func parseAll(_ bytes: UnsafeRawBufferPointer, littleEndian: Bool, alignment: Int,
                         fileOffset: UInt64) throws(FormatError) -> [ELFNote] {
        let reader = ByteReader(bytes, littleEndian: littleEndian, baseOffset: fileOffset)
        var notes: [ELFNote] = []
        var offset = 0
        while offset < bytes.count {
            let nameSize = Int(try reader.u32(at: offset))
            let descriptorSize = Int(try reader.u32(at: offset + 4))
            let type = try reader.u32(at: offset + 8)
            // Sizes are below 2^32 and offsets below the buffer size, so these sums cannot
            // overflow a 64-bit Int; `check` then refuses ranges past the end.
            let nameStart = offset + 12
            let nameBytes = try reader.slice(nameStart, nameSize, "note name")
            // Padding aligns the offsets (header + name, then descriptor), not the sizes.
            let descriptorStart = padded(nameStart + nameSize, to: alignment)
            let descriptor = try reader.slice(descriptorStart, descriptorSize, "note descriptor")
            let nameLength = nameBytes.firstIndex(of: 0) ?? nameBytes.count
            notes.append(ELFNote(
                name: String(decoding: UnsafeRawBufferPointer(rebasing: nameBytes[0..<nameLength]), as: UTF8.self),
                type: type,
                descriptor: Array(descriptor)))
            offset = padded(descriptorStart + descriptorSize, to: alignment)
        }
        return notes
    }

    /// `value` rounded up to a multiple of `alignment` (a power of two).
    private static func padded(_ value: Int, to alignment: Int) -> Int {
        (value + alignment - 1) & ~(alignment - 1)
    }
}
