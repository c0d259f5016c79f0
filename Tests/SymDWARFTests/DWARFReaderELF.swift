import SymBytes
import SymDWARF

/// Test scaffolding until SymELF lands here: the uncompressed DWARF sections of an ELF file
/// (32- or 64-bit, either byte order), read from its section headers (ELF gABI "Sections").
enum DWARFReaderELF {
    /// A failure to read the file as ELF with uncompressed debug sections.
    struct Unreadable: Error, CustomStringConvertible {
        let description: String
    }

    /// What the section table says.
    struct Layout {
        var isLittleEndian: Bool
        var is64Bit: Bool
        var machine: UInt16
        var sections: [String: Range<Int>]
    }

    /// The DWARF sections of the file at `path`; the mapping is kept alive by the result.
    static func sections(of path: String) throws -> DWARFSections {
        let file = try MappedFile(path: path)
        let layout = try layout(file.bytes, path: path)
        var sections = DWARFSections(isLittleEndian: layout.isLittleEndian, is64Bit: layout.is64Bit,
                                     machine: layout.machine)
        for (name, range) in layout.sections {
            sections.sections[name] = UnsafeRawBufferPointer(rebasing: file.bytes[range])
        }
        sections.owners.append(file)
        return sections
    }

    /// The DWARF sections of the (little-endian) file at `path`, copied out as byte arrays.
    static func sectionBytes(of path: String) throws -> (machine: UInt16, sections: [String: [UInt8]]) {
        let file = try MappedFile(path: path)
        let layout = try layout(file.bytes, path: path)
        var copies: [String: [UInt8]] = [:]
        for (name, range) in layout.sections { copies[name] = Array(file.bytes[range]) }
        return (layout.machine, copies)
    }

    /// Calls `body` with a little-endian 64-bit section set over `sections` (the arrays stay alive
    /// for the call).
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

    /// Byte order, class, machine and the byte ranges of the wanted DWARF sections.
    private static func layout(_ bytes: UnsafeRawBufferPointer, path: String) throws -> Layout {
        guard bytes.count >= 52, bytes[0] == 0x7f, bytes[1] == 0x45, bytes[2] == 0x4c, bytes[3] == 0x46,
              bytes[4] == 1 || bytes[4] == 2, bytes[5] == 1 || bytes[5] == 2 else {
            throw Unreadable(description: "\(path): not an ELF file")
        }
        let is64Bit = bytes[4] == 2
        let littleEndian = bytes[5] == 1
        func value(_ offset: Int, _ width: Int) throws -> Int {
            guard offset >= 0, offset + width <= bytes.count else { throw Unreadable(description: "\(path): truncated") }
            var result = 0
            for index in 0..<width {
                result |= Int(bytes[offset + index]) << (8 * (littleEndian ? index : width - 1 - index))
            }
            return result
        }
        // Field offsets and sizes of the file header and section header per class.
        let word = is64Bit ? 8 : 4
        let machine = UInt16(try value(18, 2))
        let sectionHeaders = try value(is64Bit ? 40 : 32, word)
        let entrySize = try value(is64Bit ? 58 : 46, 2)
        let count = try value(is64Bit ? 60 : 48, 2)
        let namesIndex = try value(is64Bit ? 62 : 50, 2)
        let (offsetField, sizeField) = is64Bit ? (24, 32) : (16, 20)
        let namesOffset = try value(sectionHeaders + namesIndex * entrySize + offsetField, word)
        var sections: [String: Range<Int>] = [:]
        for index in 0..<count {
            let header = sectionHeaders + index * entrySize
            let type = try value(header + 4, 4)
            let flags = try value(header + 8, word)
            let offset = try value(header + offsetField, word)
            let size = try value(header + sizeField, word)
            var nameEnd = namesOffset + (try value(header, 4))
            let nameStart = nameEnd
            while nameEnd < bytes.count && bytes[nameEnd] != 0 { nameEnd += 1 }
            let name = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[nameStart..<nameEnd]), as: UTF8.self)
            guard DWARFSections.wantedNames.contains(name), type != 8 /* SHT_NOBITS */ else { continue }
            guard flags & 0x800 == 0 else { throw Unreadable(description: "\(path): \(name) is compressed") }
            guard offset + size <= bytes.count else { throw Unreadable(description: "\(path): \(name) is truncated") }
            sections[name] = offset..<(offset + size)
        }
        return Layout(isLittleEndian: littleEndian, is64Bit: is64Bit, machine: machine, sections: sections)
    }
}
