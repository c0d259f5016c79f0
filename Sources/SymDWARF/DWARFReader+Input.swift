#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import SymBytes
import SymELF

extension DWARFReader {
    /// Everything the unit walkers share and only read: the sections, every unit with its unit DIE
    /// decoded, and every abbreviation table. Built once on the calling thread, so that limits
    /// protecting against hostile input trip the same way whatever the thread count.
    struct Input {
        let info: Bytes
        let str: Bytes
        let lineStr: Bytes
        let strOffsets: Bytes
        let addr: Bytes
        let ranges: Bytes
        let rnglists: Bytes
        let line: Bytes
        /// Whether `.debug_info` and `.debug_line` are views of a file mapping, whose pages the
        /// walkers give back once past them (`FileMappedPages.release`).
        let infoIsFileMapped: Bool
        let lineIsFileMapped: Bool
        /// The file-mapped sections read out of order (strings, string offsets, addresses, range
        /// lists): the walkers give back all their pages now and then, and read in again what
        /// they still need.
        let scatteredFileMapped: [Bytes]
        /// All units of `.debug_info` in section order (extracted or not: references may lead anywhere).
        private(set) var units: [Unit] = []
        /// Decoded abbreviation tables, indexed by `Unit.table`.
        private(set) var tables: [AbbreviationTable] = []
        /// The abbreviations the tables map codes to.
        private(set) var abbreviations = Abbreviations()
        /// `.debug_info` when the walk decompresses it again as it goes (`SectionStream`): the scan
        /// of the units read it once, giving it back behind itself. Nil when the section is all in
        /// memory for the walk: stored uncompressed, or decompressed whole because several walkers
        /// may split the units or because the units refer to each other.
        private(set) var streamedInfo: SectionStream?
        /// `.debug_line` when the walk decompresses it again as it goes, as `streamedInfo`; also
        /// nil when the extracted units' line tables are not in section order.
        private(set) var streamedLine: SectionStream?
        /// Whether an extracted unit may refer to DIEs of other units (`DW_FORM_ref_addr`, or
        /// `DW_FORM_indirect` which may name it). Without such references a walk reads each unit's
        /// bytes only while it walks that unit, and a streamed section need only hold one.
        private(set) var unitsReferToOtherUnits = false

        /// Kinds of string references (see `stringReference`).
        enum StringSection: UInt64 {
            case str = 1, lineStr, info, line
        }

        /// Reads all unit headers, abbreviation tables and unit DIEs, and notes the size of each
        /// unit's line table. Compressed sections given as streams are decompressed as the scan
        /// goes, on a thread of their own when there is a `spareCore`. With `streaming` (one
        /// walker will take all units, and there is a spare core for the second decompression)
        /// `.debug_info` stays streamed for the walk unless a unit refers to another, and
        /// `.debug_line` unless the tables are out of section order; otherwise they are
        /// decompressed whole.
        init(_ sections: DWARFSections, streaming: Bool, spareCore: Bool) throws(FormatError) {
            let bigEndian = !sections.isLittleEndian
            info = Bytes(sections[".debug_info"], bigEndian: bigEndian, section: ".debug_info")
            // Read only here, while the tables are decoded: the walk drops the section afterwards.
            let abbrev = Bytes(sections[".debug_abbrev"], bigEndian: bigEndian, section: ".debug_abbrev")
            str = Bytes(sections[".debug_str"], bigEndian: bigEndian, section: ".debug_str")
            lineStr = Bytes(sections[".debug_line_str"], bigEndian: bigEndian, section: ".debug_line_str")
            strOffsets = Bytes(sections[".debug_str_offsets"], bigEndian: bigEndian, section: ".debug_str_offsets")
            addr = Bytes(sections[".debug_addr"], bigEndian: bigEndian, section: ".debug_addr")
            ranges = Bytes(sections[".debug_ranges"], bigEndian: bigEndian, section: ".debug_ranges")
            rnglists = Bytes(sections[".debug_rnglists"], bigEndian: bigEndian, section: ".debug_rnglists")
            line = Bytes(sections[".debug_line"], bigEndian: bigEndian, section: ".debug_line")
            infoIsFileMapped = sections.fileMapped.contains(".debug_info")
            lineIsFileMapped = sections.fileMapped.contains(".debug_line")
            var scattered: [Bytes] = []
            for (name, bytes) in [(".debug_str", str), (".debug_line_str", lineStr), (".debug_str_offsets", strOffsets),
                                  (".debug_addr", addr), (".debug_ranges", ranges), (".debug_rnglists", rnglists)]
            where sections.fileMapped.contains(name) && bytes.count > 0 {
                scattered.append(bytes)
            }
            scatteredFileMapped = scattered

            // Reading a header faults in the pages around it too (fault-around): with units a few
            // kilobytes apart, the whole section would be resident. The pages behind go back as
            // the scan advances (file mappings only), as the walkers do later. A streamed section
            // is decompressed as the scan goes and given back behind it.
            //
            // Each abbreviation table is decoded once per encoding; hostile files may point units
            // into the middle of other tables, so the bytes decoded in all are bounded.
            var budget = 2 * abbrev.count + 65536
            var tableIndex: [TableKey: Int] = [:]
            // Tables with the same bytes decode the same: one copy serves all (gcc writes one table
            // per unit, and libc's 2,063 hold 1,507 distinct ones). Keyed by a hash of the bytes and
            // the encoding, confirmed by comparing the bytes.
            var tablesByContent: [ContentKey: [(offset: Int, table: Int)]] = [:]
            var released = 0
            var offset = 0
            // The stream is decompressed on the other core as the scan goes: a unit or so ahead
            // of it and given back behind it, or all of it when the walk will need it whole.
            // `.debug_line` likewise, as long as the tables come in section order.
            let stream = sections.streams[".debug_info"]
            let lineStream = sections.streams[".debug_line"]
            var infoStreaming = streaming
            var lineStreaming = streaming
            var lastLineTable = 0
            for started in [stream, lineStream].compactMap({ $0 }) where spareCore {
                started.startReadingAhead(lead: streaming ? DWARFReader.streamLead : started.bytes.count)
            }
            defer { for started in [stream, lineStream] { started?.stopReadingAhead() } }
            while offset < info.count {
                try stream?.fill(upTo: offset + Self.longestUnitHeader)
                var unit = try Unit(info, at: offset)
                try stream?.fill(upTo: unit.end)
                let key = TableKey(offset: unit.abbreviationOffset, encoding: unit.encoding)
                if let existing = tableIndex[key] {
                    unit.table = existing
                } else {
                    let table = try AbbreviationTable(abbrev, at: key.offset, encoding: key.encoding, budget: &budget,
                                                      into: &abbreviations)
                    let bytes = UnsafeRawBufferPointer(start: abbrev.base + key.offset, count: table.byteCount)
                    let contentKey = ContentKey(hash: Self.hash(bytes), count: bytes.count, encoding: key.encoding)
                    let candidates = tablesByContent[contentKey, default: []]
                    if let same = candidates.first(where: {
                        memcmp(abbrev.base + $0.offset, abbrev.base + key.offset, bytes.count) == 0
                    }) {
                        unit.table = same.table
                    } else {
                        tables.append(table)
                        unit.table = tables.count - 1
                        tablesByContent[contentKey, default: []].append((key.offset, tables.count - 1))
                    }
                    tableIndex[key] = unit.table
                }
                try readUnitDIE(&unit)
                if unit.isExtracted && tables[unit.table].mayReferToOtherUnits {
                    unitsReferToOtherUnits = true
                    // The walk will need the section whole: decompress it whole from here on.
                    if let stream, infoStreaming {
                        infoStreaming = false
                        try stream.restartWhole()
                    }
                }
                if unit.isExtracted && unit.lineTableOffset >= 0 && unit.lineTableOffset < line.count {
                    if let lineStream, lineStreaming {
                        if unit.lineTableOffset < lastLineTable {
                            // Out of order: the walk will need the section whole.
                            lineStreaming = false
                            try lineStream.restartWhole()
                        } else {
                            lineStream.release(below: unit.lineTableOffset)
                            lastLineTable = unit.lineTableOffset
                        }
                    }
                    try lineStream?.fill(upTo: unit.lineTableOffset + Self.longestLineTableLength)
                    unit.lineTableSize = lineTableSize(at: unit.lineTableOffset)
                }
                units.append(unit)
                offset = unit.end
                if infoStreaming { stream?.release(below: offset) }
                if infoIsFileMapped && offset - released >= Self.scanReleaseInterval {
                    released = FileMappedPages.release(of: info.base, count: info.count, released..<offset)
                }
                if units.count % Self.unitsPerScanRelease == 0 { releaseScannedPages() }
            }
            abbreviations.finish()
            streamedInfo = infoStreaming ? stream : nil
            // The rest of `.debug_line` is decompressed too, so that a corrupt stream is found here.
            if let lineStream {
                try lineStream.fill(upTo: line.count)
                if lineStreaming { lineStream.release(below: line.count) }
            }
            streamedLine = lineStreaming ? lineStream : nil
            releaseScannedPages()
            try checkLineTablesDoNotOverlap()
        }

        /// The sections the walk decompresses again as it goes (`streamedInfo`, `streamedLine`).
        var streams: [SectionStream] { [streamedInfo, streamedLine].compactMap { $0 } }

        /// Decompresses the streamed sections whole and keeps them for the walk, no longer
        /// streamed (for units split between walkers after all).
        mutating func decompressStreamsWhole() throws(FormatError) {
            for stream in streams {
                try stream.rewind()
                try stream.fill(upTo: stream.bytes.count)
            }
            streamedInfo = nil
            streamedLine = nil
        }

        /// The longest unit header (DWARF 5 §7.5.1.3, 64-bit type unit: 12 + 2 + 1 + 1 + 8 + 8 + 8 bytes).
        static let longestUnitHeader = 40
        /// The longest line table length field (DWARF 5 §6.2.4: 64-bit DWARF, 4 + 8 bytes).
        static let longestLineTableLength = 12
        /// Bytes of unit headers scanned between two releases of `.debug_info`'s pages.
        static let scanReleaseInterval = 1 << 20
        /// Unit DIEs (and line table headers) read between two releases of the sections' pages.
        static let unitsPerScanRelease = 256

        /// Gives back the pages of the file-mapped sections the scans of unit DIEs and line table
        /// headers read.
        private func releaseScannedPages() {
            var sections = scatteredFileMapped
            if infoIsFileMapped { sections.append(info) }
            if lineIsFileMapped { sections.append(line) }
            for section in sections {
                FileMappedPages.release(of: section.base, count: section.count, 0..<section.count)
            }
        }

        /// Identifies the bytes of an abbreviation table, up to hash collisions.
        private struct ContentKey: Hashable {
            var hash: Int
            var count: Int
            var encoding: Encoding
        }

        /// A hash of `bytes`.
        private static func hash(_ bytes: UnsafeRawBufferPointer) -> Int {
            var hasher = Hasher()
            hasher.combine(bytes: bytes)
            return hasher.finalize()
        }

        /// Identifies a decoded abbreviation table.
        private struct TableKey: Hashable {
            var offset: Int
            var encoding: Encoding
        }

        /// Reads what the unit DIE says about the unit.
        private func readUnitDIE(_ unit: inout Unit) throws(FormatError) {
            let table = tables[unit.table]
            var cursor = unit.dieOffset
            let code = try info.uleb(&cursor, unit.end)
            guard code != 0 else {
                // A unit without a DIE holds nothing.
                unit.childrenOffset = cursor
                return
            }
            let entryIndex = table.index(of: code)
            guard entryIndex >= 0 else { throw info.invalid(unit.dieOffset, "unknown abbreviation code \(code)") }
            let entry = abbreviations.entries[entryIndex]
            let attributes = try DIEAttributes(info, entry, abbreviations, &cursor, unit)
            unit.childrenOffset = cursor
            unit.hasChildren = entry.hasChildren
            let skipped = unit.unitType == UnitType.type || unit.unitType == UnitType.splitType
                || unit.unitType == UnitType.skeleton || entry.tag == Tag.skeletonUnit || entry.tag == Tag.typeUnit
                || attributes.isSplitUnit
            unit.isExtracted = !skipped
            // DWARF 5 §7.26–7.28: bases point past the contribution headers; without the attribute,
            // assume the first contribution.
            let headerSize = unit.encoding.version >= 5 ? (unit.encoding.is64 ? 16 : 8) : 0
            unit.stringOffsetsBase = try ByteReader.int(attributes.stringOffsetsBase ?? UInt64(headerSize),
                                                        "DW_AT_str_offsets_base")
            unit.addressBase = try ByteReader.int(attributes.addressBase ?? UInt64(headerSize), "DW_AT_addr_base")
            unit.rangeListsBase = try ByteReader.int(
                attributes.rangeListsBase ?? UInt64(unit.encoding.version >= 5 ? (unit.encoding.is64 ? 20 : 12) : 0),
                "DW_AT_rnglists_base")
            if FormClass.isAddress(attributes.lowPCForm) {
                unit.baseAddress = try address(form: attributes.lowPCForm, value: attributes.lowPC, unit: unit)
            }
            if attributes.compilationDirectoryForm != 0 {
                unit.compilationDirectory = try stringReference(form: attributes.compilationDirectoryForm,
                                                                value: attributes.compilationDirectory, unit: unit)
            }
            if attributes.hasLineTable {
                unit.lineTableOffset = try ByteReader.int(attributes.lineTableOffset, "DW_AT_stmt_list")
            }
        }

        /// The bytes the line table at `offset` (inside `.debug_line`) takes by its length field,
        /// cut at the section's end; 0 when the length cannot be read (the walker reports it).
        private func lineTableSize(at offset: Int) -> Int {
            var cursor = offset
            guard let length = try? line.u32(&cursor, line.count) else { return 0 }
            var extent = UInt64(length) + 4
            if length == 0xffff_ffff, let long = try? line.u64(&cursor, line.count) {
                extent = long.addingReportingOverflow(12).overflow ? .max : long + 12
            }
            return Int(min(extent, UInt64(line.count - offset)))
        }

        /// Line tables are decoded once per offset; distinct offsets must not overlap, or a small
        /// hostile file could make the decoder go over the same bytes once per unit.
        private func checkLineTablesDoNotOverlap() throws(FormatError) {
            var offsets = Set<Int>()
            var total = 0
            for unit in units where unit.isExtracted && unit.lineTableOffset >= 0 {
                guard offsets.insert(unit.lineTableOffset).inserted else { continue }
                total += unit.lineTableSize
                guard total <= line.count else {
                    throw FormatError(.limitExceeded, "line tables referenced by the units overlap in .debug_line",
                                      offset: UInt64(unit.lineTableOffset))
                }
            }
        }

        // MARK: Values

        /// An address attribute's value: direct, or looked up in `.debug_addr` (DWARF 5 §7.27).
        @inline(__always)
        func address(form: UInt16, value: UInt64, unit: Unit) throws(FormatError) -> UInt64 {
            FormClass.isAddressIndex(form) ? try indexedAddress(value, unit: unit) : value
        }

        /// Entry `index` of the unit's `.debug_addr` contribution.
        func indexedAddress(_ index: UInt64, unit: Unit) throws(FormatError) -> UInt64 {
            let size = unit.encoding.addressSize
            guard index < UInt64(addr.count / size) else {
                throw addr.invalid(unit.addressBase, "address index \(index) is outside the section")
            }
            // A hostile base may wrap; the read below rejects any offset outside the section.
            var cursor = unit.addressBase &+ Int(index) * size
            return try addr.address(&cursor, addr.count, size: size)
        }

        /// A string attribute as a reference `section << 56 | offset`, resolving string indices
        /// through `.debug_str_offsets` (DWARF 5 §7.26); 0 for strings in other files and other forms.
        func stringReference(form: UInt16, value: UInt64, unit: Unit) throws(FormatError) -> UInt64 {
            switch form {
            case Form.string:
                return StringSection.info.rawValue << 56 | value
            case Form.strp:
                return StringSection.str.rawValue << 56 | value
            case Form.lineStrp:
                return StringSection.lineStr.rawValue << 56 | value
            case Form.strx, Form.strx1, Form.strx2, Form.strx3, Form.strx4, Form.gnuStrIndex:
                let size = unit.encoding.offsetSize
                guard value < UInt64(strOffsets.count / size) else {
                    throw strOffsets.invalid(unit.stringOffsetsBase, "string index \(value) is outside the section")
                }
                var cursor = unit.stringOffsetsBase &+ Int(value) * size
                let offset = try strOffsets.offsetValue(&cursor, strOffsets.count, is64: size == 8)
                return StringSection.str.rawValue << 56 | offset
            default:
                return 0
            }
        }

        /// The section and offset a string reference points at.
        @inline(__always)
        func bytes(of reference: UInt64) -> (Bytes, Int) {
            let offset = Int(truncatingIfNeeded: reference & 0x00ff_ffff_ffff_ffff)
            switch reference >> 56 {
            case StringSection.lineStr.rawValue: return (lineStr, offset)
            case StringSection.info.rawValue: return (info, offset)
            case StringSection.line.rawValue: return (line, offset)
            default: return (str, offset)
            }
        }

        /// Index of the unit whose DIEs include `offset`, or nil.
        func unitIndex(containing offset: Int) -> Int? {
            var low = 0
            var high = units.count
            while low < high {
                let middle = (low + high) / 2
                if units[middle].end <= offset { low = middle + 1 } else { high = middle }
            }
            return low < units.count && units[low].contains(die: offset) ? low : nil
        }
    }
}
