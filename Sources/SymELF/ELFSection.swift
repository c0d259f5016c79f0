import SymBytes

/// One section header (`Elf32_Shdr` / `Elf64_Shdr`) with its name resolved, widened to 64 bits.
public struct ELFSection: Sendable, Equatable {
    /// Index in the section header table.
    public let index: Int
    /// Name from the section name string table (empty when the file has none).
    public internal(set) var name: String
    /// Offset of the name in the section name string table (`sh_name`).
    public let nameOffset: UInt32
    /// `sh_type` (`SHT_PROGBITS`, `SHT_NOBITS`, `SHT_SYMTAB`, ...).
    public let type: UInt32
    /// `sh_flags` (`SHF_ALLOC`, `SHF_COMPRESSED`, ...).
    public let flags: UInt64
    /// `sh_addr`.
    public let address: UInt64
    /// `sh_offset`.
    public let offset: UInt64
    /// `sh_size`: bytes in the file, compressed size for compressed sections.
    public let size: UInt64
    /// `sh_link`.
    public let link: UInt32
    /// `sh_info`.
    public let info: UInt32
    /// `sh_addralign`.
    public let alignment: UInt64
    /// `sh_entsize`.
    public let entrySize: UInt64

    /// Whether the contents are compressed: `SHF_COMPRESSED`, or GNU's older `.zdebug_*` naming.
    public var isCompressed: Bool {
        flags & ELF.SHF_COMPRESSED != 0 || name.hasPrefix(".zdebug")
    }

    /// Whether the section occupies no bytes in the file (`SHT_NOBITS`).
    public var isNoBits: Bool { type == ELF.SHT_NOBITS }

    /// The section's bytes in the file (`sh_offset`, `sh_size`), bounds- and overflow-checked.
    func fileBytes(in reader: ByteReader) throws(FormatError) -> UnsafeRawBufferPointer {
        let start = try ByteReader.int(offset, "offset of section \(index)")
        let count = try ByteReader.int(size, "size of section \(index)")
        return try reader.slice(start, count, "section \(index) (\(name))")
    }

    /// Size of one entry for the class: 64 or 40 bytes.
    static func entrySize(is64Bit: Bool) -> Int { is64Bit ? 64 : 40 }

    /// Parses the entry at `offset` (gABI "Sections"); the name is filled in later.
    init(reader: ByteReader, at offset: Int, index: Int, is64Bit: Bool) throws(FormatError) {
        self.index = index
        name = ""
        nameOffset = try reader.u32(at: offset)
        type = try reader.u32(at: offset + 4)
        if is64Bit {
            flags = try reader.u64(at: offset + 8)
            address = try reader.u64(at: offset + 16)
            self.offset = try reader.u64(at: offset + 24)
            size = try reader.u64(at: offset + 32)
            link = try reader.u32(at: offset + 40)
            info = try reader.u32(at: offset + 44)
            alignment = try reader.u64(at: offset + 48)
            entrySize = try reader.u64(at: offset + 56)
        } else {
            flags = UInt64(try reader.u32(at: offset + 8))
            address = UInt64(try reader.u32(at: offset + 12))
            self.offset = UInt64(try reader.u32(at: offset + 16))
            size = UInt64(try reader.u32(at: offset + 20))
            link = try reader.u32(at: offset + 24)
            info = try reader.u32(at: offset + 28)
            alignment = UInt64(try reader.u32(at: offset + 32))
            entrySize = UInt64(try reader.u32(at: offset + 36))
        }
    }
}
