import SymBytes

/// The ELF file header (`Elf32_Ehdr` / `Elf64_Ehdr`), widened to 64 bits.
public struct ELFHeader: Sendable, Equatable {
    /// Whether the file is `ELFCLASS64`.
    public let is64Bit: Bool
    /// Whether the file is `ELFDATA2LSB`.
    public let isLittleEndian: Bool
    /// `EI_OSABI`.
    public let osABI: UInt8
    /// `EI_ABIVERSION`.
    public let abiVersion: UInt8
    /// `e_type` (`ET_REL`, `ET_EXEC`, `ET_DYN`, `ET_CORE`, ...).
    public let type: UInt16
    /// `e_machine` (`EM_*`).
    public let machine: UInt16
    /// `e_entry`.
    public let entry: UInt64
    /// `e_flags` (processor-specific: ARM EABI version, RISC-V float ABI, PPC64 ELFv2, ...).
    public let flags: UInt32
    /// `e_phoff`.
    public let programHeaderOffset: UInt64
    /// `e_shoff`.
    public let sectionHeaderOffset: UInt64
    /// `e_phentsize`.
    public let programHeaderEntrySize: UInt16
    /// `e_phnum` as stored (`PN_XNUM` means "see section 0").
    public let programHeaderCount: UInt16
    /// `e_shentsize`.
    public let sectionHeaderEntrySize: UInt16
    /// `e_shnum` as stored (0 with a section table means "see section 0").
    public let sectionHeaderCount: UInt16
    /// `e_shstrndx` as stored (`SHN_XINDEX` means "see section 0").
    public let sectionNameTableIndex: UInt16

    /// Size of the header for this class: 64 or 52 bytes.
    var size: Int { is64Bit ? 64 : 52 }

    /// Parses the header at the start of `bytes` (gABI "ELF Header").
    init(parsing bytes: UnsafeRawBufferPointer) throws(FormatError) {
        let ident = ByteReader(bytes)
        try ident.check(0, 16, "ELF identification")
        guard ELF.hasMagic(bytes) else {
            throw FormatError(.badMagic, "not an ELF file", offset: 0)
        }
        switch bytes[4] {
        case ELF.ELFCLASS32: is64Bit = false
        case ELF.ELFCLASS64: is64Bit = true
        default: throw FormatError(.invalidValue, "unknown ELF class \(bytes[4])", offset: 4)
        }
        switch bytes[5] {
        case ELF.ELFDATA2LSB: isLittleEndian = true
        case ELF.ELFDATA2MSB: isLittleEndian = false
        default: throw FormatError(.invalidValue, "unknown ELF data encoding \(bytes[5])", offset: 5)
        }
        guard bytes[6] == ELF.EV_CURRENT else {
            throw FormatError(.unsupported, "unknown ELF version \(bytes[6])", offset: 6)
        }
        osABI = bytes[7]
        abiVersion = bytes[8]

        let reader = ByteReader(bytes, littleEndian: isLittleEndian)
        try reader.check(0, is64Bit ? 64 : 52, "ELF header")
        type = try reader.u16(at: 16)
        machine = try reader.u16(at: 18)
        // Offsets differ by class only from e_entry on: 8-byte words in ELF64, 4-byte in ELF32.
        let word = is64Bit ? 8 : 4
        entry = try reader.word(at: 24, is64Bit: is64Bit)
        programHeaderOffset = try reader.word(at: 24 + word, is64Bit: is64Bit)
        sectionHeaderOffset = try reader.word(at: 24 + 2 * word, is64Bit: is64Bit)
        let rest = 24 + 3 * word
        flags = try reader.u32(at: rest)
        // rest + 4 is e_ehsize, which readers do not need.
        programHeaderEntrySize = try reader.u16(at: rest + 6)
        programHeaderCount = try reader.u16(at: rest + 8)
        sectionHeaderEntrySize = try reader.u16(at: rest + 10)
        sectionHeaderCount = try reader.u16(at: rest + 12)
        sectionNameTableIndex = try reader.u16(at: rest + 14)
    }
}
