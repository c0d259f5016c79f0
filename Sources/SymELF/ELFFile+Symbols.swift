import SymBytes

extension ELFFile {
    /// Every symbol of every `SHT_SYMTAB` and `SHT_DYNSYM` section with file contents, in section
    /// order and table order, without each table's reserved null entry at index 0.
    ///
    /// Throws when a table or its string table lies outside the file, or a name offset is outside
    /// the string table.
    public func symbols() throws(FormatError) -> [ELFSymbol] {
        var result: [ELFSymbol] = []
        try forEachSymbol { result.append($0) }
        return result
    }

    /// Calls `body` with each symbol `symbols()` returns, in the same order, without holding them
    /// all: big C++ and Swift modules have hundreds of thousands of long names.
    public func forEachSymbol(_ body: (ELFSymbol) throws(FormatError) -> Void) throws(FormatError) {
        do {
            let reader = ByteReader(storage.bytes, littleEndian: header.isLittleEndian)
            for table in sections where table.type == ELF.SHT_SYMTAB || table.type == ELF.SHT_DYNSYM {
                try forEachSymbol(of: table, reader: reader, body)
            }
        } catch {
            throw error.at(path: path)
        }
    }

    /// Reads one symbol table (gABI "Symbol Table").
    private func forEachSymbol(of table: ELFSection, reader: ByteReader,
                               _ body: (ELFSymbol) throws(FormatError) -> Void) throws(FormatError) {
        let is64Bit = header.is64Bit
        let standardSize = is64Bit ? 24 : 16
        guard table.entrySize == 0 || table.entrySize == UInt64(standardSize) else {
            throw FormatError(.invalidValue,
                              "symbol table \(table.name) has entry size \(table.entrySize), expected \(standardSize)",
                              offset: table.offset)
        }
        let entries = try table.fileBytes(in: reader)
        let start = Int(table.offset)
        let count = entries.count / standardSize
        guard count > 1 else { return }

        guard Int(table.link) < sections.count else {
            throw FormatError(.invalidValue,
                              "symbol table \(table.name) links to section \(table.link) of \(sections.count)",
                              offset: table.offset)
        }
        let stringSection = sections[Int(table.link)]
        guard !stringSection.isNoBits else {
            throw FormatError(.invalidValue,
                              "string table \(stringSection.name) of \(table.name) has no file contents",
                              offset: table.offset)
        }
        let strings = StringTable(bytes: try stringSection.fileBytes(in: reader),
                                  fileOffset: stringSection.offset)

        let isDynamic = table.type == ELF.SHT_DYNSYM
        for index in 1..<count {
            let entry = start + index * standardSize
            let nameOffset = try reader.u32(at: entry)
            let value, size: UInt64
            let info, other: UInt8
            let sectionIndex: UInt16
            if is64Bit {
                // Elf64_Sym: st_name, st_info, st_other, st_shndx, st_value, st_size.
                info = try reader.u8(at: entry + 4)
                other = try reader.u8(at: entry + 5)
                sectionIndex = try reader.u16(at: entry + 6)
                value = try reader.u64(at: entry + 8)
                size = try reader.u64(at: entry + 16)
            } else {
                // Elf32_Sym: st_name, st_value, st_size, st_info, st_other, st_shndx.
                value = UInt64(try reader.u32(at: entry + 4))
                size = UInt64(try reader.u32(at: entry + 8))
                info = try reader.u8(at: entry + 12)
                other = try reader.u8(at: entry + 13)
                sectionIndex = try reader.u16(at: entry + 14)
            }
            let name = nameOffset == 0 && strings.bytes.isEmpty
                ? "" : try strings.string(at: nameOffset, "name of symbol \(index) in \(table.name)")
            try body(ELFSymbol(name: name, value: value, size: size, type: info & 0xf,
                               binding: info >> 4, other: other, sectionIndex: sectionIndex,
                               isDynamic: isDynamic))
        }
    }
}
