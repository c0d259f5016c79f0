import SymBytes

/// Flattens a `SymbolModel` into non-overlapping address ranges, each holding the innermost
/// frame's position and naming its deduplicated inline chain, following llvm-symbolizer's rules
/// (see `docs/csym-format.md`, "Lookup semantics").
///
/// Three sweeps build sorted, disjoint segment lists: the innermost scope per address, the line
/// row per address, the ELF symbol per address. A merge walk over their boundaries then emits one
/// range per elementary interval, joining neighbours with the same record. Nothing is done per
/// address, so the cost depends on the number of records, not the span they cover.
struct ModelFlattener {
    /// The model; its ranges and symbols are dropped once swept.
    private var model: SymbolModel
    /// The line rows (the model's own `lines` are not read).
    private let lines: LineTable
    /// The model's scopes without their ranges, made once the scope sweep has read the ranges
    /// (20 bytes a scope where the model's take 28: the flattener holds them to its end, the
    /// writer's peak).
    private var scopes: [FlatScope] = []
    /// Nesting depth of each scope (0 for a physical function).
    private var depth: [UInt32] = []
    /// Per inlined scope: the call-site record of the frame it was inlined into, or `unset`.
    private var callerSite: [UInt32] = []
    /// Per model string: its offset in the table's string data, or `unset`.
    private var stringOffset: [UInt32] = []
    /// Per model string: its function-name record, or `unset`.
    private var nameID: [UInt32] = []
    /// Per model file: its file record, or `unset`.
    private var fileID: [UInt32] = []
    /// Scratch stack for building caller chains without recursion.
    private var chain: [Int] = []
    /// The (scope, symbol) pair of the last interval and its scope field.
    private var lastScopeKey = ScopeKey(scope: nil, symbol: nil)
    private var lastScopeField: UInt32 = 0

    /// What decides an interval's scope record.
    private struct ScopeKey: Equatable {
        var scope: UInt32?
        var symbol: UInt32?
    }
    private static let unset = UInt32.max

    /// A scope as the walk reads it: `Scope` without its ranges.
    private struct FlatScope {
        var name: UInt32
        var parent: UInt32
        var callFile: UInt32
        var callLine: UInt32
        var callColumn: UInt32
        var isInlined: Bool { parent != Scope.noParent }
    }

    /// The model's strings, which the table's string data is copied from when it is encoded.
    var strings: StringArena { model.strings }

    /// Symbols kept after removing duplicates, sorted by address.
    private(set) var keptSymbols: [SymbolEntry] = []

    /// Prepares to flatten `model` with the rows of `lines`, checking every index in them.
    init(_ model: consuming SymbolModel, lines: consuming LineTable) throws(FormatError) {
        self.model = model
        self.lines = lines
        try validate()
        depth = [UInt32](repeating: 0, count: model.scopes.count)
        for (index, scope) in model.scopes.enumerated() where scope.isInlined {
            depth[index] = depth[Int(scope.parent)] + 1
        }
        callerSite = [UInt32](repeating: Self.unset, count: model.scopes.count)
        stringOffset = [UInt32](repeating: Self.unset, count: model.strings.count)
        nameID = [UInt32](repeating: Self.unset, count: model.strings.count)
        fileID = [UInt32](repeating: Self.unset, count: model.files.count)
    }

    /// Emits every range and the records they refer to into `builder`.
    mutating func flatten(into builder: inout TableBuilder) throws(FormatError) {
        // Scope segments are read once, in order, from their coded list.
        let scopeSegments = scopeSegments()
        scopes = model.scopes.map {
            FlatScope(name: $0.name, parent: $0.parent, callFile: $0.callFile, callLine: $0.callLine,
                      callColumn: $0.callColumn)
        }
        model.scopes = []
        // Every model string at most once; a scope record per scope or symbol (an estimate), a
        // call site at most once per inlined scope; ranges one per boundary at most, a few bytes
        // each (an estimate: more grow the list).
        let boundaries = scopeSegments.count + lines.rowCount + model.symbols.count
        builder.reserveCapacity(strings: model.strings.count, scopes: scopes.count + model.symbols.count,
                                callSites: scopes.count,
                                rangeBytes: min(boundaries, 1 << 28) * 8)
        var scopes = SegmentList.Cursor(consume scopeSegments)
        // Line segments are about as many as the rows: produced one at a time, never stored.
        var lines = LineSegments(self.lines)
        keepSymbols()
        model.symbols = []
        let symbolCount = keptSymbols.count

        var symbolCursor = 0
        let firsts = [scopes.current?.start, lines.current?.start, keptSymbols.first?.address].compactMap { $0 }
        guard var address = firsts.min() else { return }
        while true {
            // Step past segments that ended; the current one of each list then ends after `address`.
            while let segment = scopes.current, let end = segment.end, end <= address { scopes.advance() }
            while let segment = lines.current, segment.end <= address { lines.advance() }
            while symbolCursor < symbolCount, let end = symbolSegment(symbolCursor).end, end <= address { symbolCursor += 1 }

            var next: UInt64? = nil
            func current(_ segment: Segment?) -> UInt32? {
                guard let segment else { return nil }
                let boundary = segment.start > address ? segment.start : segment.end
                if let boundary { next = min(next ?? boundary, boundary) }
                return segment.start <= address ? segment.value : nil
            }
            let scope = current(scopes.current)
            var row: LineSegments.Piece? = nil
            if let piece = lines.current {
                let boundary = piece.start > address ? piece.start : piece.end
                next = min(next ?? boundary, boundary)
                if piece.start <= address { row = piece }
            }
            let symbol = current(symbolCursor < symbolCount ? symbolSegment(symbolCursor) : nil)

            try builder.range(start: address, record: try record(scope: scope, row: row, symbol: symbol, builder: &builder))
            guard let next else { return }
            address = next
        }
    }

    /// The range record for one elementary interval: the row's position and, in `name`, the scope
    /// field (0 = no frames, else scope record index + 1).
    private mutating func record(scope: UInt32?, row: LineSegments.Piece?, symbol: UInt32?,
                                 builder: inout TableBuilder) throws(FormatError) -> FrameRecord {
        // Rule 5: with neither a scope nor a symbol there are no frames, whatever the line table says.
        guard scope != nil || symbol != nil else { return FrameRecord() }
        var record = FrameRecord()
        if let row {
            record.file = try file(row.file, builder: &builder)
            record.line = row.line
            record.column = row.column
        } else {
            record.file = try file(0, builder: &builder)
        }
        // Neighbouring intervals mostly share scope and symbol: reuse the last scope record.
        let key = ScopeKey(scope: scope, symbol: symbol)
        if key != lastScopeKey {
            lastScopeKey = key
            lastScopeField = try scopeField(scope: scope, symbol: symbol, builder: &builder)
        }
        record.name = lastScopeField
        return record
    }

    /// The scope field (scope record index + 1) naming the innermost function and its caller.
    private mutating func scopeField(scope: UInt32?, symbol: UInt32?, builder: inout TableBuilder) throws(FormatError) -> UInt32 {
        let symbolName = symbol.map { keptSymbols[Int($0)].name }
        let id: UInt32
        if let scope {
            let innermost = scopes[Int(scope)]
            if innermost.isInlined {
                // Rule 3: enclosing frames at call sites. Rule 4: the physical frame is named by the
                // symbol; the override lives here, so caller chains stay independent of symbols.
                var physicalName: UInt32 = 0
                if let symbolName {
                    // An override that repeats the physical function's own name changes nothing:
                    // leaving it out lets such ranges share a scope record (and merge) with their
                    // neighbours that no symbol covers.
                    let physical = scopes[physicalScope(of: Int(scope))].name
                    if !model.strings.equal(Int(symbolName), Int(physical)) {
                        physicalName = try name(symbolName, builder: &builder) + 1
                    }
                }
                id = try builder.scope(name: try name(innermost.name, builder: &builder), physicalName: physicalName,
                                       caller: try callerOf(Int(scope), builder: &builder) + TableFormat.callerBias)
            } else {
                // The DWARF function's own name stays in `name` (the `addr2line` drop-in prints it,
                // as binutils does); the covering symbol's, when another, overrides it as above.
                var physicalName: UInt32 = 0
                if let symbolName, !model.strings.equal(Int(symbolName), Int(innermost.name)) {
                    physicalName = try name(symbolName, builder: &builder) + 1
                }
                id = try builder.scope(name: try name(innermost.name, builder: &builder),
                                       physicalName: physicalName, caller: TableFormat.callerNone)
            }
        } else if let symbolName {
            id = try builder.scope(name: try name(symbolName, builder: &builder), physicalName: 0,
                                   caller: TableFormat.callerSymbolOnly)
        } else {
            return 0
        }
        return id + 1
    }

    /// The physical (not inlined) scope enclosing `scope`; bounded by the scope count, so a
    /// malformed parent chain ends instead of looping.
    private func physicalScope(of scope: Int) -> Int {
        var current = scope
        var steps = 0
        while scopes[current].isInlined && steps < scopes.count {
            current = Int(scopes[current].parent)
            steps += 1
        }
        return current
    }

    /// The call-site record of the frame that inlined scope `child`: the parent's name at `child`'s
    /// call site, chained to its own caller. Built once per scope, bottom-up without recursion so
    /// deep (hostile) nesting cannot overflow the stack; total work is linear in the scopes.
    private mutating func callerOf(_ child: Int, builder: inout TableBuilder) throws(FormatError) -> UInt32 {
        chain.removeAll(keepingCapacity: true)
        var scope = child
        var known: UInt32? = nil  // call site of the last scope pushed, when already built
        while true {
            if callerSite[scope] != Self.unset { known = callerSite[scope]; break }
            chain.append(scope)
            let parent = Int(scopes[scope].parent)
            guard scopes[parent].isInlined else { break }
            scope = parent
        }
        // Unwind top-down: each record's caller is the call site built (or found) just above it.
        var index = chain.count - 1
        while index >= 0 {
            let scope = chain[index]
            let inlined = scopes[scope]
            let parent = scopes[Int(inlined.parent)]
            var record = FrameRecord(
                file: try file(inlined.callFile, builder: &builder), line: inlined.callLine, column: inlined.callColumn)
            record.name = try name(parent.name, builder: &builder)
            if parent.isInlined { record.caller = (known ?? 0) + TableFormat.callerBias }
            let id = try builder.callSite(record)
            callerSite[scope] = id
            known = id
            index -= 1
        }
        return known ?? 0
    }

    /// The table's function-name record for model string `index`.
    private mutating func name(_ index: UInt32, builder: inout TableBuilder) throws(FormatError) -> UInt32 {
        if nameID[Int(index)] != Self.unset { return nameID[Int(index)] }
        let id = try builder.name(index, in: model.strings)
        nameID[Int(index)] = id
        return id
    }

    /// The table's file record for model file `index`.
    private mutating func file(_ index: UInt32, builder: inout TableBuilder) throws(FormatError) -> UInt32 {
        if fileID[Int(index)] != Self.unset { return fileID[Int(index)] }
        let source = model.files[Int(index)]
        let id = try builder.file(directory: try string(source.directory, builder: &builder),
                                  name: try string(source.name, builder: &builder))
        fileID[Int(index)] = id
        return id
    }

    /// The table's string offset for model string `index`.
    private mutating func string(_ index: UInt32, builder: inout TableBuilder) throws(FormatError) -> UInt32 {
        if stringOffset[Int(index)] != Self.unset { return stringOffset[Int(index)] }
        let offset = try builder.string(index, in: model.strings)
        stringOffset[Int(index)] = offset
        return offset
    }
}

extension ModelFlattener {
    /// Rule 1: per address, the deepest scope whose ranges contain it; at equal depth the later scope.
    mutating func scopeSegments() -> SegmentList {
        // Depths only rank the sweep: it takes them over. At equal depth the later scope wins.
        var ranks: [UInt32] = []
        swap(&ranks, &depth)
        var sweep = CoverageSweep(ranks: consume ranks, intervalCount: model.ranges.count)
        for (index, scope) in model.scopes.enumerated() {
            for range in model.ranges[scope.rangeIndices] {
                sweep.add(start: range.start, end: range.end, value: UInt32(index))
            }
        }
        // The sweep has its own copy of the ranges, which are not read again: with the caller's
        // only copy of the model, they are freed before the sweep sorts and allocates.
        model.ranges = []
        var segments = SegmentList()
        sweep.winners { segments.append($0) }
        return segments
    }

    /// Rule 4: symbols stably sorted by (address, size), the last kept per address (the largest,
    /// and among equals the last in model order, i.e. in the ELF symbol table's order).
    mutating func keepSymbols() {
        let symbols = model.symbols
        let order = symbols.indices.sorted { lhs, rhs in
            let left = symbols[lhs], right = symbols[rhs]
            if left.address != right.address { return left.address < right.address }
            if left.size != right.size { return left.size < right.size }
            return lhs < rhs
        }
        let sorted = order.lazy.map { symbols[$0] }
        keptSymbols = []
        keptSymbols.reserveCapacity(symbols.count)
        for symbol in sorted {
            if let last = keptSymbols.last, last.address == symbol.address {
                keptSymbols[keptSymbols.count - 1] = symbol
            } else {
                keptSymbols.append(symbol)
            }
        }
    }

    /// The segment of kept symbol `index`: from its address to its end (size 0: no end) but never
    /// past the next kept symbol. Made when the walk reaches it, not stored.
    @inline(__always)
    func symbolSegment(_ index: Int) -> Segment {
        let symbol = keptSymbols[index]
        let next = index + 1 < keptSymbols.count ? keptSymbols[index + 1].address : nil
        // A size reaching past 2^64 - 1 covers the rest of the address space.
        let sized: UInt64? = symbol.size == 0 || symbol.size > UInt64.max - symbol.address
            ? nil : symbol.address + symbol.size
        let end: UInt64? = switch (sized, next) {
        case let (sized?, next?): min(sized, next)
        case let (sized?, nil): sized
        case let (nil, next?): next
        case (nil, nil): nil
        }
        return Segment(start: symbol.address, end: end, value: UInt32(index))
    }

    /// Checks that every index in the model is in bounds and parents precede their children.
    private func validate() throws(FormatError) {
        let strings = model.strings.count
        func invalid(_ message: String) -> FormatError { FormatError(.invalidValue, "symbol model: \(message)") }
        guard !model.files.isEmpty else { throw invalid("file 0 (unknown) is missing") }
        guard model.scopes.count < Int(UInt32.max), model.symbols.count < Int(UInt32.max),
              lines.rowCount < Int(UInt32.max), model.strings.count <= Int(UInt32.max),
              model.files.count <= Int(UInt32.max) else {
            throw FormatError(.limitExceeded, "symbol model: more than 2^32 - 1 records in one array")
        }
        for (index, file) in model.files.enumerated() where Int(file.directory) >= strings || Int(file.name) >= strings {
            throw invalid("file \(index) names a string out of bounds")
        }
        for (index, scope) in model.scopes.enumerated() {
            guard Int(scope.name) < strings else { throw invalid("scope \(index) names a string out of bounds") }
            guard !scope.isInlined || Int(scope.parent) < index else {
                throw invalid("scope \(index) has parent \(scope.parent), which does not precede it")
            }
            guard UInt64(scope.firstRange) + UInt64(scope.rangeCount) <= UInt64(model.ranges.count) else {
                throw invalid("scope \(index) has ranges out of bounds")
            }
            guard Int(scope.callFile) < model.files.count else {
                throw invalid("scope \(index) has a call file out of bounds")
            }
        }
        guard Int(lines.largestFile) < model.files.count else {
            throw invalid("a line row names file \(lines.largestFile), which is out of bounds")
        }
        for (index, symbol) in model.symbols.enumerated() where Int(symbol.name) >= strings {
            throw invalid("symbol \(index) names a string out of bounds")
        }
    }
}

/// Rule 2 as a stream: per address, the row of the first sequence (in model order) covering it;
/// within a sequence the last row at or below the address, rows sorted stably by address.
///
/// Yields disjoint segments in address order, one at a time (`current`, `advance()`), so the
/// flattener never holds a segment per row. Rows are decoded from the `LineTable` as the walk
/// reaches them: one sequence's winning stretches come in address order, so a sequence left part
/// way is resumed where it was left, and each row is decoded about once. Only sequences whose rows
/// are out of address order are decoded whole, into a sorted copy.
struct LineSegments {
    /// A row's position, as a segment carries it.
    struct Piece {
        var start: UInt64
        var end: UInt64
        var file: UInt32
        var line: UInt32
        var column: UInt32
    }

    /// The body rows of one sequence in address order: decoded as it goes, or (for a sequence out
    /// of order) read from its sorted copy.
    private struct Cursor {
        var rows: LineTable.RowIterator
        /// Index in `sortedRows` of the sequence's sorted copy, or -1.
        var sorted: Int
        var position = 0
        var count: Int
        var row: LineRow
        var next: LineRow?
    }

    private let table: LineTable
    /// Sorted body rows of the sequences out of order.
    private var sortedRows: [[LineRow]] = []
    private var sortedIndex: [Int: Int] = [:]
    /// Which sequence wins where, in address order.
    private var winners: [Segment] = []
    private var winner = 0
    /// Cursors of sequences whose winning stretch ended before the sequence did.
    private var resumable: [UInt32: Cursor] = [:]
    private var cursor: Cursor?
    private var winnerEnd: UInt64 = 0
    /// The segment at the cursor; nil after the last.
    private(set) var current: Piece?

    init(_ table: LineTable) {
        self.table = table
        // Sequences without body rows cover nothing.
        var sweep = CoverageSweep(valueCount: table.sequences.count)
        for (index, sequence) in table.sequences.enumerated() where sequence.bodyCount > 0 {
            if !sequence.isSorted {
                var rows: [LineRow] = []
                var iterator = table.rows(ofSequence: index)
                while let row = iterator.next(), !row.isEndSequence { rows.append(row) }
                let order = rows.indices.sorted { (rows[$0].address, $0) < (rows[$1].address, $1) }
                sortedIndex[index] = sortedRows.count
                sortedRows.append(order.map { rows[$0] })
            }
            // The first sequence wins: ranks fall as the index grows.
            sweep.add(start: sequence.start, end: sequence.end, rank: UInt32.max - UInt32(index), value: UInt32(index))
        }
        winners = sweep.winners()
        advance()
    }

    /// A cursor on the first body row of `sequence`.
    private func startCursor(_ sequence: Int) -> Cursor {
        let info = table.sequences[sequence]
        var rows = table.rows(ofSequence: sequence)
        if let sorted = sortedIndex[sequence] {
            let body = sortedRows[sorted]
            return Cursor(rows: rows, sorted: sorted, count: body.count, row: body[0], next: body.count > 1 ? body[1] : nil)
        }
        let first = rows.next()!
        let second = info.bodyCount > 1 ? rows.next() : nil
        return Cursor(rows: rows, sorted: -1, count: info.bodyCount, row: first, next: second)
    }

    /// Moves `cursor` to its next body row.
    private func step(_ cursor: inout Cursor) {
        cursor.position += 1
        cursor.row = cursor.next!
        if cursor.position + 1 < cursor.count {
            cursor.next = cursor.sorted >= 0 ? sortedRows[cursor.sorted][cursor.position + 1] : cursor.rows.next()
        } else {
            cursor.next = nil
        }
    }

    /// Moves to the next segment.
    mutating func advance() {
        while true {
            if cursor == nil {
                guard winner < winners.count else {
                    current = nil
                    return
                }
                let segment = winners[winner]
                let sequence = Int(segment.value)
                winnerEnd = segment.end ?? table.sequences[sequence].end
                var start = resumable.removeValue(forKey: segment.value) ?? startCursor(sequence)
                // Last body row at or below the segment start (equal addresses: the last one wins).
                while let next = start.next, next.address <= segment.start { step(&start) }
                cursor = start
            }
            let segment = winners[winner]
            let sequenceEnd = table.sequences[Int(segment.value)].end
            let row = cursor!.row
            let nextAddress = cursor!.next?.address ?? sequenceEnd
            let pieceStart = max(row.address, segment.start)
            let pieceEnd = min(nextAddress, winnerEnd)
            if nextAddress >= winnerEnd {
                // The sequence may win again further up, after another one's stretch.
                if winnerEnd < sequenceEnd { resumable[segment.value] = cursor }
                cursor = nil
                winner += 1
            } else {
                step(&cursor!)
            }
            if pieceStart < pieceEnd {
                current = Piece(start: pieceStart, end: pieceEnd, file: row.file, line: row.line, column: row.column)
                return
            }
        }
    }
}
