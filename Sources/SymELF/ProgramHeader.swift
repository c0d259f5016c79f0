import SymBytes

/// One program header (`Elf32_Phdr` / `Elf64_Phdr`): a segment, widened to 64 bits.
public struct ProgramHeader: Sendable, Equatable {
    /// `p_type` (`PT_LOAD`, `PT_NOTE`, ...).
    public let type: UInt32
    /// `p_flags` (`PF_X` 1, `PF_W` 2, `PF_R` 4).
    public let flags: UInt32
    /// `p_offset`: where the segment's bytes start in the file.
    public let offset: UInt64
    /// `p_vaddr`.
    public let virtualAddress: UInt64
    /// `p_paddr`.
    public let physicalAddress: UInt64
    /// `p_filesz`.
    public let fileSize: UInt64
    /// `p_memsz`.
    public let memorySize: UInt64
    /// `p_align`.
    public let alignment: UInt64

    /// Size of one entry for the class: 56 or 32 bytes.
    static func entrySize(is64Bit: Bool) -> Int { is64Bit ? 56 : 32 }

    /// Parses the entry at `offset` (gABI "Program Header"); the two classes order fields differently.
    init(reader: ByteReader, at offset: Int, is64Bit: Bool) throws(FormatError) {
        if is64Bit {
            type = try reader.u32(at: offset)
            flags = try reader.u32(at: offset + 4)
            self.offset = try reader.u64(at: offset + 8)
            virtualAddress = try reader.u64(at: offset + 16)
            physicalAddress = try reader.u64(at: offset + 24)
            fileSize = try reader.u64(at: offset + 32)
            memorySize = try reader.u64(at: offset + 40)
            alignment = try reader.u64(at: offset + 48)
        } else {
            type = try reader.u32(at: offset)
            self.offset = UInt64(try reader.u32(at: offset + 4))
            virtualAddress = UInt64(try reader.u32(at: offset + 8))
            physicalAddress = UInt64(try reader.u32(at: offset + 12))
            fileSize = UInt64(try reader.u32(at: offset + 16))
            memorySize = UInt64(try reader.u32(at: offset + 20))
            flags = try reader.u32(at: offset + 24)
            alignment = UInt64(try reader.u32(at: offset + 28))
        }
    }
}
