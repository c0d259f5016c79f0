import SymBytes

/// Collects a table's records (deduplicated strings, files, function names, scope and call-site
/// records; merged ranges) while the writer flattens a model, then encodes them in the `.csym` v1 layout.
struct TableBuilder {
    /// String data: ULEB128 length + UTF-8 bytes per string; offset 0 is the empty string.
    private(set) var stringData: [UInt8] = [0]
    /// String offsets by their bytes (compared byte for byte, so canonically equal but differently
    /// encoded strings stay distinct: the table must return the bytes it was given).
    private var stringOffsets = IDTable()
    /// Number of distinct strings, the empty one included.
    private(set) var stringCount = 1
    /// Offsets of strings referenced by records (the module name is not one).
    private var largestRecordStringOffset: UInt32 = 0

    /// (directory offset, name offset) per file record.
    private(set) var files: [(directory: UInt32, name: UInt32)] = []
    private var fileIDs: [UInt64: UInt32] = [:]

    /// String offset per function-name record.
    private(set) var names: [UInt32] = []
    private var nameIDs: [UInt32: UInt32] = [:]

    /// Scope records (name, physical-frame override, caller field) of innermost frames.
    private(set) var scopes: [ScopeRecord] = []
    private var scopeIDs = IDTable()

    /// Call-site records; a record's caller always precedes it.
    private(set) var callSites: [CallSiteRecord] = []
    private var callSiteIDs = IDTable()

    /// Ranges (start, then file, line, column of the innermost frame and the scope field:
    /// 0 = no frames, else scope record index + 1), in address order; see `RangeList`.
    private(set) var ranges = RangeList()

    /// Interns `text`, returning its offset in the string data.
    mutating func string(_ text: String) throws(FormatError) -> UInt32 {
        var text = text
        // `withUTF8` only rethrows untyped errors: carry the typed one out in a Result.
        var result: Result<UInt32, FormatError> = .success(0)
        text.withUTF8 { utf8 in
            result = Result { () throws(FormatError) -> UInt32 in try string(UnsafeRawBufferPointer(utf8)) }
        }
        return try result.get()
    }

    /// Interns the UTF-8 `bytes`, returning their offset in the string data.
    mutating func string(_ bytes: UnsafeRawBufferPointer) throws(FormatError) -> UInt32 {
        if bytes.isEmpty { return 0 }
        let hash = IDTable.hash(bytes)
        let found = stringData.withUnsafeBytes { data in
            stringOffsets.find(hash: hash) { offset in Self.bytes(at: Int(offset), in: data).elementsEqual(bytes) }
        }
        if let found { return found }
        guard let offset = UInt32(exactly: stringData.count), offset < UInt32.max else {
            throw FormatError(.limitExceeded, "string data over 4 GiB")
        }
        LEB128Coding.appendUnsigned(UInt64(bytes.count), to: &stringData)
        stringData.append(contentsOf: bytes)
        stringOffsets.insert(offset, hash: hash)
        stringCount += 1
        return offset
    }

    /// The bytes of the string written at `offset` of the string data (ULEB128 length first).
    private static func bytes(at offset: Int, in data: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        var position = offset
        var length = 0
        var shift = 0
        while true {
            let byte = data[position]
            position += 1
            length |= Int(byte & 0x7F) << shift
            if byte & 0x80 == 0 { break }
            shift += 7
        }
        return UnsafeRawBufferPointer(rebasing: data[position..<(position + length)])
    }

    /// The file record for (directory, name) string offsets.
    /// Makes room, in one allocation each, for `stringBytes` more bytes of string data,
    /// `callSites` more call-site records and `rangeBytes` of coded ranges: upper bounds the
    /// flattener knows (an estimate for the ranges), so the arrays are never
    /// copied as they grow (each copy holds the old and the new array at once), and the room never
    /// used costs no memory (big arrays are mapped, their pages resident only once written).
    mutating func reserveCapacity(stringBytes: Int, callSites: Int, rangeBytes: Int = 0) {
        ranges.reserveCapacity(bytes: rangeBytes)
        stringData.reserveCapacity(stringData.count + stringBytes)
        self.callSites.reserveCapacity(self.callSites.count + callSites)
    }

    mutating func file(directory: UInt32, name: UInt32) throws(FormatError) -> UInt32 {
        let key = UInt64(directory) << 32 | UInt64(name)
        if let id = fileIDs[key] { return id }
        let id = try Self.nextID(files.count, "files")
        files.append((directory, name))
        fileIDs[key] = id
        largestRecordStringOffset = max(largestRecordStringOffset, directory, name)
        return id
    }

    /// The function-name record for a string offset.
    mutating func name(_ string: UInt32) throws(FormatError) -> UInt32 {
        if let id = nameIDs[string] { return id }
        let id = try Self.nextID(names.count, "function names")
        names.append(string)
        nameIDs[string] = id
        largestRecordStringOffset = max(largestRecordStringOffset, string)
        return id
    }

    /// The index of scope record (`name`, `physicalName`, `caller`), added when new.
    mutating func scope(name: UInt32, physicalName: UInt32, caller: UInt32) throws(FormatError) -> UInt32 {
        let record = ScopeRecord(name: name, physicalName: physicalName, caller: caller)
        let hash = FrameRecord(name: name, physicalName: physicalName, caller: caller).tableHash
        if let id = scopeIDs.find(hash: hash, { scopes[Int($0)] == record }) { return id }
        // The scope field stores index + 1.
        let id = try Self.nextID(scopes.count, "scope records")
        scopes.append(record)
        scopeIDs.insert(id, hash: hash)
        return id
    }

    /// The index of call-site `record`, added when new.
    mutating func callSite(_ frame: FrameRecord) throws(FormatError) -> UInt32 {
        let hash = frame.tableHash
        let record = CallSiteRecord(file: frame.file, line: frame.line, column: frame.column, name: frame.name,
                                    caller: frame.caller)
        if let id = callSiteIDs.find(hash: hash, { callSites[Int($0)] == record }) { return id }
        // The largest caller field is count + 1, so one id fewer than the field can hold.
        guard callSites.count < Int(UInt32.max) - 1 else {
            throw FormatError(.limitExceeded, "more than 2^32 - 2 call-site records")
        }
        let id = UInt32(callSites.count)
        callSites.append(record)
        callSiteIDs.insert(id, hash: hash)
        return id
    }

    /// Starts a range at `start` with `record` (its `name` is the scope field), unless it
    /// continues the last range.
    mutating func range(start: UInt64, record frame: FrameRecord) throws(FormatError) {
        let record = RangeList.Record(file: frame.file, line: frame.line, column: frame.column, scope: frame.name)
        if let last = ranges.last, last == record { return }
        // Leading gaps are implicit: addresses before the first range have no frames.
        if ranges.isEmpty, record.scope == 0 { return }
        guard ranges.count < Int(UInt32.max) else {
            throw FormatError(.limitExceeded, "more than 2^32 - 1 address ranges")
        }
        ranges.append(start: start, record)
    }

    /// A scope record as collected: 12 bytes (a `FrameRecord` is 24); big modules have hundreds
    /// of thousands.
    struct ScopeRecord: Equatable {
        var name: UInt32
        var physicalName: UInt32
        var caller: UInt32
    }

    /// A call-site record as collected: 20 bytes.
    struct CallSiteRecord: Equatable {
        var file: UInt32
        var line: UInt32
        var column: UInt32
        var name: UInt32
        var caller: UInt32
    }

    private static func nextID(_ count: Int, _ what: String) throws(FormatError) -> UInt32 {
        guard let id = UInt32(exactly: count), id < UInt32.max else {
            throw FormatError(.limitExceeded, "more than 2^32 - 1 \(what)")
        }
        return id
    }
}

extension TableBuilder {
    /// Model counts recorded in the header for statistics.
    struct Counts {
        var functions: UInt64
        var inlinedScopes: UInt64
        var lineRows: UInt64
        var symbols: UInt64
    }

    /// Encodes the collected records as a `.csym` v1 table (layout in `docs/csym-format.md`).
    mutating func encode(module: ModuleIdentity, counts: Counts) throws(FormatError) -> [UInt8] {
        let moduleName = try string(module.name)
        // Nothing is added from here on: the lookup tables go before the output is allocated (the
        // string keys would otherwise keep every model string alive).
        stringOffsets = IDTable()
        fileIDs = [:]
        nameIDs = [:]
        scopeIDs = IDTable()
        callSiteIDs = IDTable()
        let compact = ranges.isEmpty || ranges.lastStart - ranges.firstStart <= UInt64(UInt32.max)
        let addressBase = compact ? ranges.firstStart : 0

        let stringWidth = TableFormat.width(for: largestRecordStringOffset)
        let fileWidth = TableFormat.width(for: UInt32(max(files.count, 1) - 1))
        var largestName = UInt32(max(names.count, 1) - 1)
        for record in scopes { largestName = max(largestName, record.physicalName) }
        let nameWidth = TableFormat.width(for: largestName)
        var largestLine = ranges.largest.line
        var largestColumn = ranges.largest.column
        let largestScopeField = ranges.largest.scope
        var largestCaller: UInt32 = 0
        for record in callSites {
            largestLine = max(largestLine, record.line)
            largestColumn = max(largestColumn, record.column)
            largestCaller = max(largestCaller, record.caller)
        }
        for record in scopes { largestCaller = max(largestCaller, record.caller) }
        let lineWidth = TableFormat.width(for: largestLine)
        let columnWidth = TableFormat.width(for: largestColumn)
        let scopeWidth = TableFormat.width(for: largestScopeField)
        let callSiteWidth = TableFormat.width(for: largestCaller)

        let sizes: [TableFormat.Section: Int] = [
            .buildID: module.buildID.count,
            .rangeStarts: ranges.count * (compact ? 4 : 8),
            .rangeRecords: ranges.count * (fileWidth + lineWidth + columnWidth + scopeWidth),
            .scopes: scopes.count * (2 * nameWidth + callSiteWidth),
            .callSites: callSites.count * (fileWidth + lineWidth + columnWidth + nameWidth + callSiteWidth),
            .files: files.count * 2 * stringWidth,
            .names: names.count * stringWidth,
            .strings: stringData.count,
        ]
        let total = TableFormat.headerSize + sizes.values.reduce(0, +)

        var out: [UInt8] = []
        out.reserveCapacity(total)
        out.append(contentsOf: TableFormat.magic)
        out.appendLittleEndian(TableFormat.version)
        out.appendLittleEndian(compact ? TableFormat.Flag.compactRangeStarts : 0)
        out.appendLittleEndian(module.machine)
        out.append(module.is64Bit ? 1 : 0)
        out.append(UInt8(TableFormat.Section.allCases.count))
        for width in [stringWidth, fileWidth, lineWidth, columnWidth, nameWidth, scopeWidth, callSiteWidth] {
            out.append(UInt8(width))
        }
        out.append(0)
        out.appendLittleEndian(moduleName)
        out.appendLittleEndian(addressBase)
        for count in [stringCount, files.count, names.count, scopes.count, callSites.count, ranges.count] {
            out.appendLittleEndian(UInt32(count))
        }
        for count in [counts.functions, counts.inlinedScopes, counts.lineRows, counts.symbols] {
            out.appendLittleEndian(count)
        }
        var offset = TableFormat.headerSize
        for section in TableFormat.Section.allCases {
            let size = sizes[section] ?? 0
            out.appendLittleEndian(UInt64(offset))
            out.appendLittleEndian(UInt64(size))
            offset += size
        }
        precondition(out.count == TableFormat.headerSize, "header layout out of step with TableFormat")

        // The sections are written in place into the final size (no per-byte append).
        out.append(contentsOf: repeatElement(0, count: total - out.count))
        out.withUnsafeMutableBytes { buffer in
            var writer = FieldWriter(buffer: buffer, position: TableFormat.headerSize)
            writer.bytes(module.buildID)
            ranges.forEach { start, _ in
                if compact { writer.field(UInt32(start - addressBase), width: 4) } else { writer.u64(start) }
            }
            ranges.forEach { _, record in
                writer.field(record.file, width: fileWidth)
                writer.field(record.line, width: lineWidth)
                writer.field(record.column, width: columnWidth)
                writer.field(record.scope, width: scopeWidth)
            }
            // The largest collection goes as soon as it is encoded.
            ranges = RangeList()
            for record in scopes {
                writer.field(record.name, width: nameWidth)
                writer.field(record.physicalName, width: nameWidth)
                writer.field(record.caller, width: callSiteWidth)
            }
            for record in callSites {
                writer.field(record.file, width: fileWidth)
                writer.field(record.line, width: lineWidth)
                writer.field(record.column, width: columnWidth)
                writer.field(record.name, width: nameWidth)
                writer.field(record.caller, width: callSiteWidth)
            }
            for file in files {
                writer.field(file.directory, width: stringWidth)
                writer.field(file.name, width: stringWidth)
            }
            for name in names { writer.field(name, width: stringWidth) }
            writer.bytes(stringData)
            precondition(writer.position == total, "section sizes out of step with their contents")
        }
        precondition(out.count == total, "section sizes out of step with their contents")
        return out
    }
}

extension [UInt8] {
    /// Appends `value` little-endian.
    mutating func appendLittleEndian<Value: FixedWidthInteger>(_ value: Value) {
        var value = value.littleEndian
        Swift.withUnsafeBytes(of: &value) { append(contentsOf: $0) }
    }
}

/// Writes little-endian fields at increasing offsets of a buffer sized beforehand.
private struct FieldWriter {
    let buffer: UnsafeMutableRawBufferPointer
    var position: Int

    /// Writes the low `width` bytes (0...4) of `value`.
    @inline(__always)
    mutating func field(_ value: UInt32, width: Int) {
        precondition(position + width <= buffer.count, "field past the table's computed size")
        switch width {
        case 0: return
        case 1: buffer.storeBytes(of: UInt8(truncatingIfNeeded: value), toByteOffset: position, as: UInt8.self)
        case 2: buffer.storeBytes(of: UInt16(truncatingIfNeeded: value).littleEndian, toByteOffset: position, as: UInt16.self)
        case 3:
            buffer.storeBytes(of: UInt16(truncatingIfNeeded: value).littleEndian, toByteOffset: position, as: UInt16.self)
            buffer.storeBytes(of: UInt8(truncatingIfNeeded: value >> 16), toByteOffset: position + 2, as: UInt8.self)
        default: buffer.storeBytes(of: value.littleEndian, toByteOffset: position, as: UInt32.self)
        }
        position += width
    }

    mutating func u64(_ value: UInt64) {
        precondition(position + 8 <= buffer.count, "field past the table's computed size")
        buffer.storeBytes(of: value.littleEndian, toByteOffset: position, as: UInt64.self)
        position += 8
    }

    mutating func bytes(_ bytes: [UInt8]) {
        precondition(position + bytes.count <= buffer.count, "bytes past the table's computed size")
        bytes.withUnsafeBytes { source in
            guard let base = source.baseAddress else { return }
            (buffer.baseAddress! + position).copyMemory(from: base, byteCount: source.count)
        }
        position += bytes.count
    }
}
