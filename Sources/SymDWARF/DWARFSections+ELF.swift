import SymBytes
import SymELF

extension DWARFSections {
    /// Collects (and decompresses) the DWARF sections of `elf`. Sections of type `SHT_NOBITS`
    /// (moved into a separate debug file) are left out. Compressed sections named in `streaming`
    /// are not decompressed here but as they are read (`streams`); only `DWARFReader` reads them so.
    public init(elf: ELFFile, streaming: Set<String> = []) throws(FormatError) {
        self.init(isLittleEndian: elf.header.isLittleEndian, is64Bit: elf.header.is64Bit,
                  machine: elf.header.machine)
        for name in Self.wantedNames {
            guard let section = elf.section(named: name), section.type != 8 /* SHT_NOBITS */ else { continue }
            if streaming.contains(name), let stream = try elf.streamedContents(of: section) {
                owners.append(stream)
                sections[name] = stream.bytes
                streams[name] = stream
                continue
            }
            let contents = try elf.contents(of: section)
            owners.append(contents)
            sections[name] = contents.bytes
            if contents.isFileMapping { fileMapped.insert(name) }
        }
    }
}
