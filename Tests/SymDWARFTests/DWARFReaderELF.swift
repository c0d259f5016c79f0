import SymBytes
import SymDWARF

/// Test scaffolding until SymELF lands here: the uncompressed DWARF sections of an ELF64
/// little-endian file, read from its section headers (ELF gABI "Sections").
enum DWARFReaderELF {
    /// A failure to read the file as ELF64 LE with uncompressed debug sections.
    struct Unreadable: Error, CustomStringConvertible {
        let description: String
    }

    /// The DWARF sections of the file at `path`; the mapping is kept alive by the result.
    static func sections(of path: String) throws -> DWARFSections {
        let file = try MappedFile(path: path)
        let table = try sectionTable(file.bytes, path: path)
        var sections = DWARFSections(isLittleEndian: true, is64Bit: true, machine: table.machine)
        for (name, range) in table.sections {
            sections.sections[name] = UnsafeRawBufferPointer(rebasing: file.bytes[range])
        }
        sections.owners.append(file)
        return sections
    }

    /// The DWARF sections of the file at `path`, copied out as byte arrays (for mutation).
    static func sectionBytes(of path: String) throws -> (machine: UInt16, sections: [String: [UInt8]]) {
        let file = try MappedFile(path: path)
        let table = try sectionTable(file.bytes, path: path)
        var copies: [String: [UInt8]] = [:]
        for (name, range) in table.sections { copies[name] = Array(file.bytes[range]) }
        return (table.machine, copies)
    }

    /// Calls `body` with a section set over `sections` (the arrays stay alive for the call).
    static func withSections<R>(_ sections: [String: [UInt8]], machine: UInt16 = 62,
                                _ body: (DWARFSections) throws -> R) rethrows -> R {
        // One contiguous buffer, so a single closure keeps every section's bytes alive.
        let names = sections.keys.sorted()
        var blob: [UInt8] = []
        var ranges: [String: Range<Int>] = [:]
        for name in names {
            let start = blob.count
            blob += sections[name]!
            ranges[name] = start..<blob.count
        }
        return try blob.withUnsafeBytes { buffer in
            var set = DWARFSections(isLittleEndian: true, is64Bit: true, machine: machine)
            for name in names { set.sections[name] = UnsafeRawBufferPointer(rebasing: buffer[ranges[name]!]) }
            return try body(set)
        }
    }

    /// The machine and the byte ranges of the wanted DWARF sections.
    private static func sectionTable(_ bytes: UnsafeRawBufferPointer,
                                     path: String) throws -> (machine: UInt16, sections: [String: Range<Int>]) {
        func value(_ offset: Int, _ width: Int) throws -> Int {
            guard offset >= 0, offset + width <= bytes.count else { throw Unreadable(description: "\(path): truncated") }
            var result = 0
            for index in 0..<width { result |= Int(bytes[offset + index]) << (8 * index) }
            return result
        }
        guard bytes.count >= 64, bytes[0] == 0x7f, bytes[1] == 0x45, bytes[2] == 0x4c, bytes[3] == 0x46,
              bytes[4] == 2, bytes[5] == 1 else {
            throw Unreadable(description: "\(path): not an ELF64 little-endian file")
        }
        let machine = UInt16(try value(18, 2))
        let sectionHeaders = try value(40, 8)
        let entrySize = try value(58, 2)
        let count = try value(60, 2)
        let namesIndex = try value(62, 2)
        let namesHeader = sectionHeaders + namesIndex * entrySize
        let namesOffset = try value(namesHeader + 24, 8)
        var sections: [String: Range<Int>] = [:]
        for index in 0..<count {
            let header = sectionHeaders + index * entrySize
            let type = try value(header + 4, 4)
            let flags = try value(header + 8, 8)
            let offset = try value(header + 24, 8)
            let size = try value(header + 32, 8)
            var nameEnd = namesOffset + (try value(header, 4))
            let nameStart = nameEnd
            while nameEnd < bytes.count && bytes[nameEnd] != 0 { nameEnd += 1 }
            let name = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[nameStart..<nameEnd]), as: UTF8.self)
            guard DWARFSections.wantedNames.contains(name), type != 8 /* SHT_NOBITS */ else { continue }
            guard flags & 0x800 == 0 else { throw Unreadable(description: "\(path): \(name) is compressed") }
            guard offset + size <= bytes.count else { throw Unreadable(description: "\(path): \(name) is truncated") }
            sections[name] = offset..<(offset + size)
        }
        return (machine, sections)
    }
}
