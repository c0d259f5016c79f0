import SymBytes

/// The section header table with names resolved, and the counts that extended numbering hides
/// in section 0 (gABI "Sections": `SHN_XINDEX`, `PN_XNUM`).
struct SectionTable {
    /// The sections in table order.
    var sections: [ELFSection] = []
    /// The real program header count (`e_phnum`, or section 0's `sh_info` for `PN_XNUM`).
    var programHeaderCount: Int

    /// Reads the table, refusing a table that does not fit in the file and name offsets outside
    /// the name table.
    init(reader: ByteReader, header: ELFHeader) throws(FormatError) {
        programHeaderCount = Int(header.programHeaderCount)
        guard header.sectionHeaderOffset != 0 else { return }

        let is64Bit = header.is64Bit
        let start = try ByteReader.int(header.sectionHeaderOffset, "section header offset")
        let entrySize = Int(header.sectionHeaderEntrySize)
        let minimumSize = ELFSection.entrySize(is64Bit: is64Bit)
        guard entrySize >= minimumSize else {
            throw FormatError(.invalidValue, "section header entry size \(entrySize) is below \(minimumSize)")
        }

        var count = Int(header.sectionHeaderCount)
        var nameTableIndex = Int(header.sectionNameTableIndex)
        // Extended numbering: values that do not fit the 16-bit header fields live in section 0.
        let extended = count == 0 || header.sectionNameTableIndex == ELF.SHN_XINDEX
            || header.programHeaderCount == ELF.PN_XNUM
        if extended {
            let first = try ELFSection(reader: reader, at: start, index: 0, is64Bit: is64Bit)
            if count == 0 {
                count = try ByteReader.int(first.size, "section count in section 0")
            }
            if header.sectionNameTableIndex == ELF.SHN_XINDEX {
                nameTableIndex = Int(first.link)
            }
            if header.programHeaderCount == ELF.PN_XNUM {
                programHeaderCount = Int(first.info)
            }
        }
        guard count > 0 else { return }

        // Cap the count by what fits in the file before allocating anything for it.
        let available = reader.count - min(start, reader.count)
        guard count <= available / entrySize else {
            throw FormatError(.truncated,
                              "section header table (\(count) entries of \(entrySize) bytes) extends past the end of the file",
                              offset: UInt64(start))
        }
        sections.reserveCapacity(count)
        for index in 0..<count {
            sections.append(try ELFSection(reader: reader, at: start + index * entrySize,
                                           index: index, is64Bit: is64Bit))
        }

        guard nameTableIndex != Int(ELF.SHN_UNDEF) else { return }
        guard nameTableIndex < count else {
            throw FormatError(.invalidValue,
                              "section name table index \(nameTableIndex) is out of range (\(count) sections)")
        }
        let nameSection = sections[nameTableIndex]
        guard !nameSection.isNoBits else {
            throw FormatError(.invalidValue, "section name table has no file contents")
        }
        let names = StringTable(bytes: try nameSection.fileBytes(in: reader), fileOffset: nameSection.offset)
        for index in sections.indices {
            sections[index].name = try names.string(at: sections[index].nameOffset,
                                                    "name of section \(index)")
        }
    }
}
