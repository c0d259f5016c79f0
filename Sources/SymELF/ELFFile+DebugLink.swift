import SymBytes

extension ELFFile {
    /// The `.gnu_debuglink` section, parsed; nil when there is none (or it has no file contents).
    static func findDebugLink(reader: ByteReader, sections: [ELFSection]) throws(FormatError) -> DebugLink? {
        guard let section = sections.first(where: { $0.name == ".gnu_debuglink" }), !section.isNoBits else {
            return nil
        }
        return try DebugLink(parsing: section.fileBytes(in: reader),
                             littleEndian: reader.littleEndian, fileOffset: section.offset)
    }
}
