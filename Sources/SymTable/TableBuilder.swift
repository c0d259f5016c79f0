import SymBytes

/// Collects a table's records (deduplicated strings, files, function names, scope and call-site
/// records; merged ranges) while the writer flattens a model, then encodes them in the `.csym` v2 layout.
struct TableBuilder {
    /// The table's strings after the empty one, in first-use order, as indices into the model's
    /// string arena: the bytes are copied once, from the arena into the output, when the table is
    /// encoded (a big module has megabytes of names; a second copy here would add to the peak).
    private var stringOrder: [UInt32] = []
    /// Offset in the string data of each of `stringOrder`.
    private var stringOffsetsByID: [UInt32] = []
    /// Positions in `stringOrder` by their strings' bytes (compared byte for byte, so canonically
    /// equal but differently encoded strings stay distinct: the table must return the bytes it was
    /// given).
    private var stringIDs = IDTable()
    /// Size of the string data so far: ULEB128 length + UTF-8 bytes per string, after one byte for
    /// the empty string at offset 0.
    private var stringDataSize = 1
    /// The module name's bytes when no record string has them (written last).
    private var extraString: [UInt8]?
    /// Number of distinct strings, the empty one included.
    private(set) var stringCount = 1
    /// Offsets of strings referenced by records (the module name is not one).
    private var largestRecordStringOffset: UInt32 = 0

    /// Interns string `index` of `arena`, returning its offset in the string data.
    mutating func string(_ index: UInt32, in arena: StringArena) throws(FormatError) -> UInt32 {
        try stringID(index, in: arena).map { stringOffsetsByID[$0] } ?? 0
    }

    /// Interns string `index` of `arena`, returning its position in `stringOrder` (nil for the
    /// empty string).
    private mutating func stringID(_ index: UInt32, in arena: StringArena) throws(FormatError) -> Int? {
        let length = arena.byteCount(of: Int(index))
        if length == 0 { return nil }
        let hash = arena.withBytes(of: Int(index)) { IDTable.hash($0) }
        if let found = stringIDs.find(hash: hash, { arena.equal(Int(stringOrder[Int($0)]), Int(index)) }) {
            return Int(found)
        }
        let offset = try appendString(length: length)
        stringOrder.append(index)
        stringIDs.insert(UInt32(stringOrder.count - 1), hash: hash) { [stringOrder] id in
            arena.withBytes(of: Int(stringOrder[Int(id)])) { IDTable.hash($0) }
        }
        stringOffsetsByID.append(offset)
        nameByStringID.append(Self.noName)
        return stringOrder.count - 1
    }

    /// Reserves `length` bytes (and their ULEB128 length) of string data, returning their offset.
    private mutating func appendString(length: Int) throws(FormatError) -> UInt32 {
        guard let offset = UInt32(exactly: stringDataSize), offset < UInt32.max else {
            throw FormatError(.limitExceeded, "string data over 4 GiB")
        }
        var lengthBytes = 1
        while length >> (7 * lengthBytes) != 0 { lengthBytes += 1 }
        stringDataSize += lengthBytes + length
        stringCount += 1
        return offset
    }

    /// Interns the module name (after every record string), returning its offset.
    private mutating func moduleName(_ name: String, in arena: StringArena) throws(FormatError) -> UInt32 {
        let bytes = Array(name.utf8)
        if bytes.isEmpty { return 0 }
        let hash = bytes.withUnsafeBytes { IDTable.hash($0) }
        let found = bytes.withUnsafeBytes { name in
            stringIDs.find(hash: hash) { id in arena.withBytes(of: Int(stringOrder[Int(id)])) { $0.elementsEqual(name) } }
        }
        if let found { return stringOffsetsByID[Int(found)] }
        let offset = try appendString(length: bytes.count)
        extraString = bytes
        return offset
    }

    /// (directory offset, name offset) per file record.
    private(set) var files: [(directory: UInt32, name: UInt32)] = []
    private var fileIDs: [UInt64: UInt32] = [:]

    /// String offset per function-name record.
    private(set) var names: [UInt32] = []
    /// The function-name record of each of `stringOrder`, or `noName`; and of the empty string.
    private var nameByStringID: [UInt32] = []
    private var emptyName = noName
    private static let noName = UInt32.max

    /// Scope records (name, physical-frame override, caller field) of innermost frames.
    private(set) var scopes: [ScopeRecord] = []
    private var scopeIDs = IDTable()

    /// Call-site records; a record's caller always precedes it.
    private(set) var callSites: [CallSiteRecord] = []
    private var callSiteIDs = IDTable()

    /// Ranges (start, then file, line, column of the innermost frame and the scope field:
    /// 0 = no frames, else scope record index + 1), in address order; see `RangeList`.
    private(set) var ranges = RangeList()

    /// Makes room, in one allocation each, for `strings` more strings, `scopes` more scope records,
    /// `callSites` more call-site records and `rangeBytes` of coded ranges: upper bounds the
    /// flattener knows (estimates for the scope records and ranges), so the arrays are never
    /// copied as they grow (each copy holds the old and the new array at once), and the room never
    /// used costs no memory (big arrays are mapped, their pages resident only once written).
    mutating func reserveCapacity(strings: Int, scopes: Int = 0, callSites: Int, rangeBytes: Int = 0) {
        self.scopes.reserveCapacity(self.scopes.count + scopes)
        ranges.reserveCapacity(bytes: rangeBytes)
        stringOrder.reserveCapacity(stringOrder.count + strings)
        stringOffsetsByID.reserveCapacity(stringOffsetsByID.count + strings)
        nameByStringID.reserveCapacity(nameByStringID.count + strings)
        self.callSites.reserveCapacity(self.callSites.count + callSites)
    }

    /// The file record for (directory, name) string offsets.

    mutating func file(directory: UInt32, name: UInt32) throws(FormatError) -> UInt32 {
        let key = UInt64(directory) << 32 | UInt64(name)
        if let id = fileIDs[key] { return id }
        let id = try Self.nextID(files.count, "files")
        files.append((directory, name))
        fileIDs[key] = id
        largestRecordStringOffset = max(largestRecordStringOffset, directory, name)
        return id
    }

    /// The function-name record for string `index` of `arena`.
    mutating func name(_ index: UInt32, in arena: StringArena) throws(FormatError) -> UInt32 {
        let stringID = try stringID(index, in: arena)
        let known = stringID.map { nameByStringID[$0] } ?? emptyName
        if known != Self.noName { return known }
        let string = stringID.map { stringOffsetsByID[$0] } ?? 0
        let id = try Self.nextID(names.count, "function names")
        names.append(string)
        if let stringID { nameByStringID[stringID] = id } else { emptyName = id }
        largestRecordStringOffset = max(largestRecordStringOffset, string)
        return id
    }

    /// The index of scope record (`name`, `physicalName`, `caller`), added when new.
    mutating func scope(name: UInt32, physicalName: UInt32, caller: UInt32) throws(FormatError) -> UInt32 {
        let record = ScopeRecord(name: name, physicalName: physicalName, caller: caller)
        let hash = record.tableHash
        if let id = scopeIDs.find(hash: hash, { scopes[Int($0)] == record }) { return id }
        // The scope field stores index + 1.
        let id = try Self.nextID(scopes.count, "scope records")
        scopes.append(record)
        scopeIDs.insert(id, hash: hash) { [scopes] id in scopes[Int(id)].tableHash }
        return id
    }

    /// The index of call-site `record`, added when new.
    mutating func callSite(_ frame: FrameRecord) throws(FormatError) -> UInt32 {
        let record = CallSiteRecord(file: frame.file, line: frame.line, column: frame.column, name: frame.name,
                                    caller: frame.caller)
        let hash = record.tableHash
        if let id = callSiteIDs.find(hash: hash, { callSites[Int($0)] == record }) { return id }
        // The largest caller field is count + 1, so one id fewer than the field can hold.
        guard callSites.count < Int(UInt32.max) - 1 else {
            throw FormatError(.limitExceeded, "more than 2^32 - 2 call-site records")
        }
        let id = UInt32(callSites.count)
        callSites.append(record)
        callSiteIDs.insert(id, hash: hash) { [callSites] id in callSites[Int(id)].tableHash }
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

        /// The hash the record is filed under.
        var tableHash: UInt64 { FrameRecord(name: name, physicalName: physicalName, caller: caller).tableHash }
    }

    /// A call-site record as collected: 20 bytes.
    struct CallSiteRecord: Equatable {
        var file: UInt32
        var line: UInt32
        var column: UInt32
        var name: UInt32
        var caller: UInt32

        /// The hash the record is filed under.
        var tableHash: UInt64 {
            var frame = FrameRecord(file: file, line: line, column: column)
            frame.name = name
            frame.caller = caller
            return frame.tableHash
        }
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

    /// Encodes the collected records as a `.csym` v2 table (layout in `docs/csym-format.md`), with
    /// the forms `storedNames` gives for the function names (made on `threads` threads) in the
    /// demangled-names section; none when it is nil.
    mutating func encode<Provider: StoredNameProvider>(module: ModuleIdentity, counts: Counts, strings arena: StringArena,
                                                       storedNames: Provider?, threads: Int) throws(FormatError) -> [UInt8] {
        let moduleName = try moduleName(module.name, in: arena)
        // The string of each function-name record, for the stored forms.
        var nameStrings: [UInt32] = []
        if storedNames != nil {
            nameStrings = [UInt32](repeating: .max, count: names.count)
            for (stringID, name) in nameByStringID.enumerated() where name != Self.noName {
                nameStrings[Int(name)] = stringOrder[stringID]
            }
        }
        // Nothing is added from here on: the lookup tables go before the output is allocated.
        stringIDs = IDTable()
        stringOffsetsByID = []
        fileIDs = [:]
        nameByStringID = []
        scopeIDs = IDTable()
        callSiteIDs = IDTable()
        // Only the compressed blocks are kept (swift-format: 1.6 MB), until copied into the output.
        var demangledNames = DemangledNameEncoder<Provider>.Section(offsets: [0], buffers: [], runs: [])
        if let storedNames, !nameStrings.isEmpty {
            demangledNames = try DemangledNameEncoder(nameStrings: nameStrings, arena: arena, provider: storedNames)
                .encode(threads: threads)
        }
        nameStrings = []
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

        // The layout is written last, after the string data (so the sections before it keep their
        // v2 order and sizes); empty when not known.
        let layoutRecord = module.layout.map { $0.encoded() } ?? []
        let sizes: [TableFormat.Section: Int] = [
            .buildID: module.buildID.count,
            .rangeStarts: ranges.count * (compact ? 4 : 8),
            .rangeRecords: ranges.count * (fileWidth + lineWidth + columnWidth + scopeWidth),
            .scopes: scopes.count * (2 * nameWidth + callSiteWidth),
            .callSites: callSites.count * (fileWidth + lineWidth + columnWidth + nameWidth + callSiteWidth),
            .files: files.count * 2 * stringWidth,
            .names: names.count * stringWidth,
            .strings: stringDataSize,
            .demangledNames: demangledNames.byteCount,
            .moduleLayout: layoutRecord.count,
            .unwindRules: module.unwindRules?.bytes.count ?? 0,
        ]
        let total = TableFormat.headerSize + sizes.values.reduce(0, +)

        var header: [UInt8] = []
        header.reserveCapacity(TableFormat.headerSize)
        header.append(contentsOf: TableFormat.magic)
        header.appendLittleEndian(TableFormat.version)
        header.appendLittleEndian(compact ? TableFormat.Flag.compactRangeStarts : 0)
        header.appendLittleEndian(module.machine)
        header.append(module.is64Bit ? 1 : 0)
        header.append(UInt8(TableFormat.Section.allCases.count))
        for width in [stringWidth, fileWidth, lineWidth, columnWidth, nameWidth, scopeWidth, callSiteWidth] {
            header.append(UInt8(width))
        }
        header.append(TableFormat.demangledBlockShift)
        header.appendLittleEndian(moduleName)
        header.appendLittleEndian(addressBase)
        for count in [stringCount, files.count, names.count, scopes.count, callSites.count, ranges.count] {
            header.appendLittleEndian(UInt32(count))
        }
        for count in [counts.functions, counts.inlinedScopes, counts.lineRows, counts.symbols] {
            header.appendLittleEndian(count)
        }
        // The demangled names go first, right after the header, so that their compressed blocks
        // are freed before the rest of the table is written; the other sections follow in
        // directory order.
        var offsets: [TableFormat.Section: Int] = [:]
        var offset = TableFormat.headerSize
        for section in [TableFormat.Section.demangledNames] + TableFormat.Section.allCases.filter({ $0 != .demangledNames }) {
            offsets[section] = offset
            offset += sizes[section] ?? 0
        }
        for section in TableFormat.Section.allCases {
            header.appendLittleEndian(UInt64(offsets[section] ?? 0))
            header.appendLittleEndian(UInt64(sizes[section] ?? 0))
        }
        precondition(header.count == TableFormat.headerSize, "header layout out of step with TableFormat")

        // The sections are written in place into the final size (no per-byte append), front to
        // back into storage left uninitialised: its pages become resident only as they are
        // written, while the collections already written are freed (the ranges, scope and
        // call-site records go before the string data, the largest section, is written).
        let out = [UInt8](unsafeUninitializedCapacity: total) { storage, initialized in
            let buffer = UnsafeMutableRawBufferPointer(storage)
            header.withUnsafeBytes { buffer.copyMemory(from: $0) }
            var writer = FieldWriter(buffer: buffer, position: TableFormat.headerSize)
            demangledNames.drain { writer.bytes($0) }
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
            scopes = []
            for record in callSites {
                writer.field(record.file, width: fileWidth)
                writer.field(record.line, width: lineWidth)
                writer.field(record.column, width: columnWidth)
                writer.field(record.name, width: nameWidth)
                writer.field(record.caller, width: callSiteWidth)
            }
            callSites = []
            for file in files {
                writer.field(file.directory, width: stringWidth)
                writer.field(file.name, width: stringWidth)
            }
            for name in names { writer.field(name, width: stringWidth) }
            writer.field(0, width: 1)  // the empty string
            for index in stringOrder {
                arena.withBytes(of: Int(index)) { writer.string($0) }
            }
            if let extraString { extraString.withUnsafeBytes { writer.string($0) } }
            writer.bytes(layoutRecord)
            if let rules = module.unwindRules { writer.bytes(rules.bytes) }
            // Every byte is written: nothing uninitialised is handed out.
            precondition(writer.position == total, "section sizes out of step with their contents")
            initialized = total
        }
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

    /// Writes `text` as a string of the string data: its ULEB128 length, then its bytes.
    mutating func string(_ text: UnsafeRawBufferPointer) {
        var length = text.count
        while length >= 0x80 {
            field(UInt32(length & 0x7F | 0x80), width: 1)
            length >>= 7
        }
        field(UInt32(length), width: 1)
        precondition(position + text.count <= buffer.count, "bytes past the table's computed size")
        if let base = text.baseAddress {
            (buffer.baseAddress! + position).copyMemory(from: base, byteCount: text.count)
        }
        position += text.count
    }

    mutating func bytes(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { self.bytes($0) }
    }

    mutating func bytes(_ source: UnsafeRawBufferPointer) {
        precondition(position + source.count <= buffer.count, "bytes past the table's computed size")
        if let base = source.baseAddress {
            (buffer.baseAddress! + position).copyMemory(from: base, byteCount: source.count)
        }
        position += source.count
    }
}
