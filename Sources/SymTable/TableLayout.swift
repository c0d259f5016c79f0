import SymBytes

/// Where everything is in one table, read from its header and checked against the table's size.
///
/// Holds plain integers only, so the reader can keep it next to the bytes without parsing
/// anything else on open. Every method takes the table's bytes and bounds-checks each read:
/// the header is trusted for extents only after `init` validated them, record contents never.
struct TableLayout: Sendable {
    /// Offset and size of one section in the table.
    struct Extent: Sendable {
        var offset: Int
        var size: Int
    }

    var flags: UInt16
    var machine: UInt16
    var is64Bit: Bool
    var stringWidth: Int
    var fileWidth: Int
    var lineWidth: Int
    var columnWidth: Int
    var nameWidth: Int
    var scopeWidth: Int
    var callSiteWidth: Int
    var moduleName: UInt32
    var addressBase: UInt64
    var stringCount: Int
    var fileCount: Int
    var nameCount: Int
    var scopeCount: Int
    var callSiteCount: Int
    var rangeCount: Int
    var functionCount: UInt64
    var inlinedScopeCount: UInt64
    var lineRowCount: UInt64
    var symbolCount: UInt64
    /// log2 of the function-name records per block of stored demangled names (0 in version 1).
    var demangledBlockShift: Int
    /// Blocks of stored demangled names: 0 when the table stores none (always in version 1).
    var demangledBlockCount = 0
    // Section extents; named so the hot path touches no array.
    private(set) var buildID = Extent(offset: 0, size: 0)
    private(set) var rangeStarts = Extent(offset: 0, size: 0)
    private(set) var rangeRecords = Extent(offset: 0, size: 0)
    private(set) var scopes = Extent(offset: 0, size: 0)
    private(set) var callSites = Extent(offset: 0, size: 0)
    private(set) var files = Extent(offset: 0, size: 0)
    private(set) var names = Extent(offset: 0, size: 0)
    private(set) var strings = Extent(offset: 0, size: 0)
    /// Empty in version 1.
    private(set) var demangledNames = Extent(offset: 0, size: 0)
    /// Empty before version 3, and when the layout is not known.
    private(set) var moduleLayout = Extent(offset: 0, size: 0)
    /// Empty before version 4, and when the module has no call-frame information.
    private(set) var unwindRulesExtent = Extent(offset: 0, size: 0)
    /// The unwind rules' parts, nil when the table has none.
    private(set) var unwindRules: UnwindRulesLayout?

    /// Whether range starts are `UInt32` deltas from `addressBase`.
    var hasCompactRangeStarts: Bool { flags & TableFormat.Flag.compactRangeStarts != 0 }
    /// Bytes per range start.
    var rangeStartSize: Int { hasCompactRangeStarts ? 4 : 8 }
    /// Bytes per file record.
    var fileRecordSize: Int { 2 * stringWidth }
    /// Bytes per range record: the innermost frame's file, line, column and scope record.
    var rangeRecordSize: Int { fileWidth + lineWidth + columnWidth + scopeWidth }
    /// Bytes per scope record: function name, physical-frame name override and caller.
    var scopeRecordSize: Int { 2 * nameWidth + callSiteWidth }
    /// Bytes per call-site record: file, line, column, function name of the caller, its caller.
    var callSiteRecordSize: Int { fileWidth + lineWidth + columnWidth + nameWidth + callSiteWidth }

    /// Reads and validates the header: magic, version, flags, widths, and that every section lies
    /// inside the table with exactly the size its count and record size imply.
    init(_ reader: ByteReader) throws(FormatError) {
        try reader.check(0, TableFormat.Field.sectionDirectory, "csym header")
        for (index, byte) in TableFormat.magic.enumerated() where try reader.u8(at: index) != byte {
            throw FormatError(.badMagic, "not a csym symbol table (bad magic)", offset: 0)
        }
        let version = try reader.u16(at: TableFormat.Field.version)
        guard TableFormat.readableVersions.contains(version) else {
            throw FormatError(.unsupported, "csym version \(version) is not supported (this reader knows 1 to 5)",
                              offset: UInt64(TableFormat.Field.version))
        }
        let headerSize = TableFormat.headerSize(version: version)
        try reader.check(0, headerSize, "csym v\(version) header")
        flags = try reader.u16(at: TableFormat.Field.flags)
        guard flags & ~TableFormat.Flag.known == 0 else {
            throw FormatError(.unsupported, "unknown csym flags 0x\(String(flags, radix: 16))",
                              offset: UInt64(TableFormat.Field.flags))
        }
        machine = try reader.u16(at: TableFormat.Field.machine)
        let classByte = try reader.u8(at: TableFormat.Field.is64Bit)
        guard classByte <= 1 else {
            throw FormatError(.invalidValue, "is64Bit must be 0 or 1, not \(classByte)",
                              offset: UInt64(TableFormat.Field.is64Bit))
        }
        is64Bit = classByte == 1
        let sectionCount = try reader.u8(at: TableFormat.Field.sectionCount)
        let expectedSections = TableFormat.sectionCount(version: version)
        guard Int(sectionCount) == expectedSections else {
            throw FormatError(.invalidValue, "csym v\(version) has \(expectedSections) sections, header says \(sectionCount)",
                              offset: UInt64(TableFormat.Field.sectionCount))
        }
        func width(_ field: Int) throws(FormatError) -> Int {
            let value = Int(try reader.u8(at: field))
            guard value <= TableFormat.maximumFieldWidth else {
                throw FormatError(.invalidValue, "field width \(value) is over \(TableFormat.maximumFieldWidth)",
                                  offset: UInt64(field))
            }
            return value
        }
        stringWidth = try width(TableFormat.Field.stringWidth)
        fileWidth = try width(TableFormat.Field.fileWidth)
        lineWidth = try width(TableFormat.Field.lineWidth)
        columnWidth = try width(TableFormat.Field.columnWidth)
        nameWidth = try width(TableFormat.Field.nameWidth)
        scopeWidth = try width(TableFormat.Field.scopeWidth)
        callSiteWidth = try width(TableFormat.Field.callSiteWidth)
        let blockShift = try reader.u8(at: TableFormat.Field.demangledBlockShift)
        if version == 1 {
            guard blockShift == 0 else {
                throw FormatError(.invalidValue, "reserved header byte is not zero",
                                  offset: UInt64(TableFormat.Field.demangledBlockShift))
            }
        } else {
            guard (1...TableFormat.maximumDemangledBlockShift).contains(blockShift) else {
                throw FormatError(.invalidValue, "demangled-name block shift \(blockShift) is not in 1...\(TableFormat.maximumDemangledBlockShift)",
                                  offset: UInt64(TableFormat.Field.demangledBlockShift))
            }
        }
        demangledBlockShift = Int(blockShift)
        moduleName = try reader.u32(at: TableFormat.Field.moduleName)
        addressBase = try reader.u64(at: TableFormat.Field.addressBase)
        stringCount = Int(try reader.u32(at: TableFormat.Field.stringCount))
        fileCount = Int(try reader.u32(at: TableFormat.Field.fileCount))
        nameCount = Int(try reader.u32(at: TableFormat.Field.nameCount))
        scopeCount = Int(try reader.u32(at: TableFormat.Field.scopeCount))
        callSiteCount = Int(try reader.u32(at: TableFormat.Field.callSiteCount))
        rangeCount = Int(try reader.u32(at: TableFormat.Field.rangeCount))
        functionCount = try reader.u64(at: TableFormat.Field.functionCount)
        inlinedScopeCount = try reader.u64(at: TableFormat.Field.inlinedScopeCount)
        lineRowCount = try reader.u64(at: TableFormat.Field.lineRowCount)
        symbolCount = try reader.u64(at: TableFormat.Field.symbolCount)

        for section in TableFormat.Section.allCases.prefix(expectedSections) {
            let entry = TableFormat.Field.sectionDirectory + section.rawValue * TableFormat.directoryEntrySize
            let offset = try ByteReader.int(try reader.u64(at: entry), "\(section.name) section offset")
            let size = try ByteReader.int(try reader.u64(at: entry + 8), "\(section.name) section size")
            guard offset >= headerSize else {
                throw FormatError(.invalidValue, "\(section.name) section overlaps the header", offset: UInt64(entry))
            }
            try reader.check(offset, size, "\(section.name) section")
            self[section] = Extent(offset: offset, size: size)
        }
        // Counts are at most UInt32.max and record sizes at most 20 bytes: no product overflows Int.
        try expectSize(.rangeStarts, rangeCount * rangeStartSize)
        try expectSize(.rangeRecords, rangeCount * rangeRecordSize)
        try expectSize(.scopes, scopeCount * scopeRecordSize)
        try expectSize(.callSites, callSiteCount * callSiteRecordSize)
        try expectSize(.files, fileCount * fileRecordSize)
        try expectSize(.names, nameCount * stringWidth)
        guard self[.strings].size <= Int(UInt32.max) else {
            throw FormatError(.limitExceeded, "string data over 4 GiB", offset: UInt64(TableFormat.Field.sectionDirectory))
        }
        if version >= 2 { try validateDemangledNames(reader) }
        unwindRules = try UnwindRulesLayout(reader, offset: unwindRulesExtent.offset, size: unwindRulesExtent.size,
                                            expressions: version >= 5)
    }

    /// The extent of `section`.
    subscript(section: TableFormat.Section) -> Extent {
        get {
            switch section {
            case .buildID: buildID
            case .rangeStarts: rangeStarts
            case .rangeRecords: rangeRecords
            case .scopes: scopes
            case .callSites: callSites
            case .files: files
            case .names: names
            case .strings: strings
            case .demangledNames: demangledNames
            case .moduleLayout: moduleLayout
            case .unwindRules: unwindRulesExtent
            }
        }
        set {
            switch section {
            case .buildID: buildID = newValue
            case .rangeStarts: rangeStarts = newValue
            case .rangeRecords: rangeRecords = newValue
            case .scopes: scopes = newValue
            case .callSites: callSites = newValue
            case .files: files = newValue
            case .names: names = newValue
            case .strings: strings = newValue
            case .demangledNames: demangledNames = newValue
            case .moduleLayout: moduleLayout = newValue
            case .unwindRules: unwindRulesExtent = newValue
            }
        }
    }

    private func expectSize(_ section: TableFormat.Section, _ expected: Int) throws(FormatError) {
        guard self[section].size == expected else {
            throw FormatError(.invalidValue, "\(section.name) section is \(self[section].size) bytes, counts imply \(expected)",
                              offset: UInt64(TableFormat.Field.sectionDirectory + section.rawValue * TableFormat.directoryEntrySize))
        }
    }
}

/// One frame's record as stored: table indices, not yet resolved to strings.
///
/// Range records have no name or caller of their own (their scope record holds them); scope
/// records have no file, line or column (the range holds them).
struct FrameRecord: Hashable {
    /// Index into the files section.
    var file: UInt32 = 0
    var line: UInt32 = 0
    var column: UInt32 = 0
    /// Index into the function-names section.
    var name: UInt32 = 0
    /// Scope records only: 0, or the function-name index + 1 that replaces the name of the chain's
    /// physical frame (the ELF symbol covering the range).
    var physicalName: UInt32 = 0
    /// `TableFormat.callerNone`, `TableFormat.callerSymbolOnly`, or call-site index + `TableFormat.callerBias`.
    var caller: UInt32 = TableFormat.callerNone
}

extension TableLayout {
    /// Reads an unsigned little-endian field of `width` (0...4) bytes.
    func field(_ reader: ByteReader, at offset: Int, width: Int) throws(FormatError) -> UInt32 {
        switch width {
        case 0: return 0
        case 1: return UInt32(try reader.u8(at: offset))
        case 2: return UInt32(try reader.u16(at: offset))
        case 3: return UInt32(try reader.u16(at: offset)) | UInt32(try reader.u8(at: offset + 2)) << 16
        default: return try reader.u32(at: offset)
        }
    }

    /// The index of the range containing `address` (the last with start <= address), if any.
    ///
    /// Binary search over the starts; an unsorted (hostile) array still ends after log2(n) probes.
    func rangeIndex(_ reader: ByteReader, containing address: UInt64) throws(FormatError) -> Int? {
        guard rangeCount > 0, address >= addressBase || !hasCompactRangeStarts else { return nil }
        // One bounds check for the whole array; every probe below is at an index < rangeCount.
        let starts = try reader.slice(rangeStarts.offset, rangeCount * rangeStartSize, "range starts")
        var low = 0
        var high = rangeCount  // the first start above the address lies in low...high
        if hasCompactRangeStarts {
            // Compare in delta space, so deltas never need adding to the base.
            let key = address - addressBase
            while low < high {
                let middle = low + (high - low) / 2
                let start = UInt32(littleEndian: starts.loadUnaligned(fromByteOffset: middle * 4, as: UInt32.self))
                if UInt64(start) <= key { low = middle + 1 } else { high = middle }
            }
        } else {
            while low < high {
                let middle = low + (high - low) / 2
                let start = UInt64(littleEndian: starts.loadUnaligned(fromByteOffset: middle * 8, as: UInt64.self))
                if start <= address { low = middle + 1 } else { high = middle }
            }
        }
        return low == 0 ? nil : low - 1
    }

    /// The start address of range `index` (bounds-checked; wraps rather than traps on a hostile base).
    func rangeStart(_ reader: ByteReader, _ index: Int) throws(FormatError) -> UInt64 {
        guard index >= 0, index < rangeCount else {
            throw FormatError(.invalidValue, "range index \(index) out of bounds")
        }
        return hasCompactRangeStarts
            ? addressBase &+ UInt64(try reader.u32(at: rangeStarts.offset + index * 4))
            : try reader.u64(at: rangeStarts.offset + index * 8)
    }

    /// Resolves the string whose length prefix is at `offset` in the string data.
    ///
    /// Strings are a ULEB128 byte count followed by that many UTF-8 bytes.
    func string(_ reader: ByteReader, at offset: UInt32) throws(FormatError) -> StringRef {
        var position = Int(offset)
        var length: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard position < strings.size else {
                throw FormatError(.truncated, "string at \(offset) runs past the string data",
                                  offset: UInt64(strings.offset) + UInt64(offset))
            }
            let byte = try reader.u8(at: strings.offset + position)
            position += 1
            length |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { break }
            shift += 7
            guard shift < 35 else {
                throw FormatError(.invalidValue, "string length at \(offset) is too long an LEB128",
                                  offset: UInt64(strings.offset) + UInt64(offset))
            }
        }
        guard length <= UInt64(strings.size - position) else {
            throw FormatError(.truncated, "string at \(offset) (\(length) bytes) runs past the string data",
                              offset: UInt64(strings.offset) + UInt64(offset))
        }
        return StringRef(offset: UInt32(position), length: UInt32(length))
    }

    /// The string-offset field at `offset`, resolved.
    func stringField(_ reader: ByteReader, at offset: Int) throws(FormatError) -> StringRef {
        try string(reader, at: try field(reader, at: offset, width: stringWidth))
    }

    /// The name of function-name record `index`.
    func functionName(_ reader: ByteReader, _ index: UInt32) throws(FormatError) -> StringRef {
        guard Int(index) < nameCount else {
            throw FormatError(.invalidValue, "function name \(index) out of bounds (\(nameCount) names)")
        }
        return try stringField(reader, at: names.offset + Int(index) * stringWidth)
    }

    /// The directory and name of file record `index`.
    func file(_ reader: ByteReader, _ index: UInt32) throws(FormatError) -> (directory: StringRef, name: StringRef) {
        guard Int(index) < fileCount else {
            throw FormatError(.invalidValue, "file \(index) out of bounds (\(fileCount) files)")
        }
        let offset = files.offset + Int(index) * fileRecordSize
        return (try stringField(reader, at: offset), try stringField(reader, at: offset + stringWidth))
    }

    /// Whether `ref` lies inside the string data.
    func contains(_ ref: StringRef) -> Bool {
        UInt64(ref.offset) + UInt64(ref.length) <= UInt64(strings.size)
    }
}
