import SymBytes

extension ELFFile {
    /// The `.gnu_debuglink` section, parsed; nil when there is none (or it has no file contents).
    static func findDebugLink(reader: ByteReader, sections: [ELFSection]) throws(FormatError) -> DebugLink? {
        guard let section = sections.first(where: { $0.name == ".gnu_debuglink" }), !section.isNoBits else {
            return nil
        }
        let start = try ByteReader.int(section.offset, "offset of .gnu_debuglink")
        let count = try ByteReader.int(section.size, "size of .gnu_debuglink")
        return try DebugLink(parsing: reader.slice(start, count, ".gnu_debuglink"),
                             littleEndian: reader.littleEndian, fileOffset: section.offset)
    }
}
