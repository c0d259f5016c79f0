import SymBytes

/// A parsed ELF file of any class, byte order and architecture; immutable after `init`.
///
/// The headers, section table, build-id and debug link are read eagerly and checked against the
/// file size; section contents and symbols are read on request. Every value read from the file is
/// bounds- and overflow-checked, so hostile input throws a `FormatError` rather than trapping.
public final class ELFFile: Sendable {
    /// The file the bytes came from (`"<memory>"` or a caller-chosen label for in-memory input).
    public let path: String
    /// The file header.
    public let header: ELFHeader
    /// The program headers (segments); empty for relocatable objects.
    public let programHeaders: [ProgramHeader]
    /// The section headers in table order, names resolved; empty when the file has no section table.
    public let sections: [ELFSection]
    /// The GNU build-id (`NT_GNU_BUILD_ID`): from `SHT_NOTE` sections, else from `PT_NOTE` segments.
    public let buildID: [UInt8]?
    /// The `.gnu_debuglink` pointer to a separate debug file, when present.
    public let debugLink: DebugLink?
    /// The bytes, kept alive for zero-copy section contents.
    let storage: ByteStorage
    /// What the compressed sections declare they hold once decompressed, all together
    /// (`checkDeclaredSize` holds it to a multiple of the file's size).
    let declaredDecompressedBytes: UInt64

    /// Maps the file at `path` and parses it.
    public convenience init(path: String) throws(FormatError) {
        try self.init(file: MappedFile(path: path))
    }

    /// Parses an already-mapped file; the mapping stays alive as long as this object or any
    /// `SectionContents` taken from it.
    public convenience init(file: MappedFile) throws(FormatError) {
        try self.init(storage: .mapped(file), path: file.path)
    }

    /// Parses a copy of `bytes` (for tests and input that never was a file).
    public convenience init(bytes: [UInt8], path: String = "<memory>") throws(FormatError) {
        // Array.withUnsafeBytes rethrows untyped errors: carry the typed one out in a Result.
        let copy = bytes.withUnsafeBytes { source in
            Result { () throws(FormatError) in try OwnedBuffer(copying: source) }
        }
        do {
            try self.init(storage: .owned(copy.get()), path: path)
        } catch {
            throw error.at(path: path)
        }
    }

    private init(storage: ByteStorage, path: String) throws(FormatError) {
        self.storage = storage
        self.path = path
        do {
            let bytes = storage.bytes
            let header = try ELFHeader(parsing: bytes)
            let reader = ByteReader(bytes, littleEndian: header.isLittleEndian)
            let table = try SectionTable(reader: reader, header: header)
            self.header = header
            programHeaders = try Self.parseProgramHeaders(reader: reader, header: header,
                                                          count: table.programHeaderCount)
            sections = table.sections
            buildID = try Self.findBuildID(reader: reader, sections: sections, segments: programHeaders)
            debugLink = try Self.findDebugLink(reader: reader, sections: sections)
            declaredDecompressedBytes = Self.declaredDecompressedBytes(reader: reader, header: header, sections: sections)
        } catch {
            throw error.at(path: path)
        }
    }

    /// The first section called `name`; asked for `.debug_X`, also finds GNU's compressed `.zdebug_X`.
    public func section(named name: String) -> ELFSection? {
        if let exact = sections.first(where: { $0.name == name }) {
            return exact
        }
        if name.hasPrefix(".debug_") {
            let compressedName = ".z" + name.dropFirst()
            return sections.first(where: { $0.name == compressedName })
        }
        return nil
    }

    /// The contents of `section`: empty for `SHT_NOBITS`, decompressed when compressed, otherwise
    /// a zero-copy view into the file's bytes.
    public func contents(of section: ELFSection) throws(FormatError) -> SectionContents {
        if section.isNoBits {
            return SectionContents(storage: storage, start: 0, count: 0)
        }
        do {
            let reader = ByteReader(storage.bytes, littleEndian: header.isLittleEndian)
            let raw = try section.fileBytes(in: reader)
            if section.isCompressed {
                return try decompressedContents(of: section, raw: raw)
            }
            // Checked to lie inside the file: the offset fits in an Int.
            return SectionContents(storage: storage, start: Int(section.offset), count: raw.count)
        } catch {
            throw error.at(path: path)
        }
    }

    /// `p_vaddr` of the first `PT_LOAD` segment, 0 when there is none (DESIGN.md "Addresses").
    public var loadBias: UInt64 {
        programHeaders.first(where: { $0.type == ELF.PT_LOAD })?.virtualAddress ?? 0
    }

    /// `p_offset` of the first `PT_LOAD` segment, 0 when there is none (for file-offset pcs).
    public var firstLoadFileOffset: UInt64 {
        programHeaders.first(where: { $0.type == ELF.PT_LOAD })?.offset ?? 0
    }

    /// Whether the file carries DWARF: a `.debug_info` (or `.zdebug_info`) section with file contents.
    public var hasDWARF: Bool {
        guard let info = section(named: ".debug_info") else { return false }
        return !info.isNoBits && info.size > 0
    }

    /// Parses the program header table, refusing counts whose table does not fit in the file.
    private static func parseProgramHeaders(reader: ByteReader, header: ELFHeader,
                                            count: Int) throws(FormatError) -> [ProgramHeader] {
        guard count > 0, header.programHeaderOffset != 0 else { return [] }
        let minimumSize = ProgramHeader.entrySize(is64Bit: header.is64Bit)
        let entrySize = Int(header.programHeaderEntrySize)
        guard entrySize >= minimumSize else {
            throw FormatError(.invalidValue, "program header entry size \(entrySize) is below \(minimumSize)")
        }
        let start = try ByteReader.int(header.programHeaderOffset, "program header offset")
        // count < 2^32 and entrySize < 2^16, so the product cannot overflow a 64-bit Int.
        try reader.check(start, count * entrySize, "program header table (\(count) entries)")
        var result: [ProgramHeader] = []
        result.reserveCapacity(count)
        for index in 0..<count {
            result.append(try ProgramHeader(reader: reader, at: start + index * entrySize,
                                            is64Bit: header.is64Bit))
        }
        return result
    }
}
