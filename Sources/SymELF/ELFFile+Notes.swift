import SymBytes

extension ELFFile {
    /// All notes in `SHT_NOTE` sections that have file contents, in section order.
    public func sectionNotes() throws(FormatError) -> [ELFNote] {
        do {
            let reader = ByteReader(storage.bytes, littleEndian: header.isLittleEndian)
            var notes: [ELFNote] = []
            for section in sections where section.type == ELF.SHT_NOTE {
                notes += try Self.notes(in: section, reader: reader)
            }
            return notes
        } catch {
            throw error.at(path: path)
        }
    }

    /// All notes in `PT_NOTE` segments whose bytes lie inside the file, in program header order.
    public func segmentNotes() throws(FormatError) -> [ELFNote] {
        do {
            let reader = ByteReader(storage.bytes, littleEndian: header.isLittleEndian)
            var notes: [ELFNote] = []
            for segment in programHeaders where segment.type == ELF.PT_NOTE {
                notes += try Self.notes(in: segment, reader: reader) ?? []
            }
            return notes
        } catch {
            throw error.at(path: path)
        }
    }

    /// The notes of one `SHT_NOTE` section (none when it is `SHT_NOBITS`).
    static func notes(in section: ELFSection, reader: ByteReader) throws(FormatError) -> [ELFNote] {
        guard !section.isNoBits else { return [] }
        return try ELFNote.parseAll(try section.fileBytes(in: reader),
                                    littleEndian: reader.littleEndian,
                                    alignment: section.alignment == 8 ? 8 : 4,
                                    fileOffset: section.offset)
    }

    /// The notes of one `PT_NOTE` segment, or nil when its range is not inside the file.
    ///
    /// A separate debug file keeps the original program headers, whose offsets describe the
    /// stripped binary rather than this file, so an out-of-file segment is absent, not broken.
    static func notes(in segment: ProgramHeader, reader: ByteReader) throws(FormatError) -> [ELFNote]? {
        guard segment.offset <= UInt64(reader.count),
              segment.fileSize <= UInt64(reader.count) - segment.offset else { return nil }
        let start = Int(segment.offset)
        return try ELFNote.parseAll(try reader.slice(start, Int(segment.fileSize), "note segment"),
                                    littleEndian: reader.littleEndian,
                                    alignment: segment.alignment == 8 ? 8 : 4,
                                    fileOffset: segment.offset)
    }

    /// The first non-empty `NT_GNU_BUILD_ID` note: sections first, then segments.
    static func findBuildID(reader: ByteReader, sections: [ELFSection],
                            segments: [ProgramHeader]) throws(FormatError) -> [UInt8]? {
        for section in sections where section.type == ELF.SHT_NOTE {
            if let id = buildID(in: try notes(in: section, reader: reader)) { return id }
        }
        for segment in segments where segment.type == ELF.PT_NOTE {
            if let id = buildID(in: try notes(in: segment, reader: reader) ?? []) { return id }
        }
        return nil
    }

    private static func buildID(in notes: [ELFNote]) -> [UInt8]? {
        notes.first(where: { $0.name == "GNU" && $0.type == ELF.NT_GNU_BUILD_ID && !$0.descriptor.isEmpty })?
            .descriptor
    }

    /// The build-id as lowercase hex, the form used in `.build-id/xx/rest.debug` paths and reports.
    public var buildIDHex: String? {
        guard let buildID else { return nil }
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(buildID.count * 2)
        for byte in buildID {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xf)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
