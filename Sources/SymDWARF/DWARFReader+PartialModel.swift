import SymTable

extension DWARFReader {
    /// What one walker extracts from a contiguous run of units, with strings and files kept local
    /// so that walkers on different threads share nothing mutable.
    ///
    /// `merge` replays the local strings into the builder in first-use order, chunk after chunk in
    /// unit order. Interning is idempotent, so the builder sees the same sequence of first uses as a
    /// single walker over all units would produce: the model is identical whatever the split.
    struct PartialModel {
        /// Strings to intern, in first-use order, each once (index 0, the empty string, stands for
        /// none); `isPath[i]` marks file paths (interned with `ModelBuilder.file(path:)`, the
        /// others with `intern`).
        var texts = StringArena()
        var isPath: [Bool] = [false]
        /// Scopes in DIE order. `name` and `callFile` are indices in `texts` (0: none),
        /// `parent` a local scope index or `Scope.noParent`, ranges index `ranges`.
        var scopes: [Scope] = []
        var ranges: [AddressRange] = []
        /// Line rows in complete sequences, coded (for a builder that codes them); `file` is an
        /// index in `texts` (0: unknown).
        var lines = LineTable()
        /// The same as rows (for a builder that keeps rows), and their sequences as index ranges.
        var rows: [LineRow] = []
        var sequences: [Range<Int>] = []
        /// Decoded line tables: the `.debug_line` offset and the range of sequences (of `lines`, or
        /// of `sequences`) it produced.
        var tables: [(offset: Int, sequences: Range<Int>)] = []
        /// Work spent (see `UnitWalker`), checked against the limit over all walkers.
        var work = 0

        /// Appends the parts to `builder` in order. A line table referenced from several units
        /// (possibly in different parts) is appended once, by the first.
        static func merge(_ parts: consuming [PartialModel], into builder: inout ModelBuilder) {
            var appendedTables = Set<Int>()
            // The parts' coded rows are taken over as they are (with a map of their file numbers),
            // not copied. Rows kept as rows grow the model's array to at most the parts' total: one
            // allocation, its pages resident only as rows arrive, each part freed once appended.
            builder.reserveCapacity(lines: parts.reduce(0) { $0 + $1.rows.count })
            let laterScopes = parts.reduce(0) { $0 + $1.scopes.count } - (parts.first?.scopes.count ?? 0)
            let laterRanges = parts.reduce(0) { $0 + $1.ranges.count } - (parts.first?.ranges.count ?? 0)
            // The parts' texts bound the model's strings (the parts share many).
            builder.reserveCapacity(strings: parts.reduce(0) { $0 + $1.texts.count })
            for index in parts.indices {
                // Take the part out of the array so it is freed after this iteration.
                var part = PartialModel()
                swap(&part, &parts[index])
                var global = [UInt32](repeating: 0, count: part.texts.count)
                for text in 1..<part.texts.count {
                    global[text] = part.isPath[text]
                        ? builder.file(path: part.texts[text])
                        : part.texts.withBytes(of: text) { builder.intern($0) }
                }
                // The names are in the builder's arena now: the part's copy goes before the rows grow.
                part.texts = StringArena()
                // The scopes and ranges are rewritten into the model's numbering in place and
                // handed over: the first part's arrays become the model's, with no copy; the
                // others are appended, into room made once for all of them.
                rewriteScopes(&part, texts: global, firstScope: builder.model.scopes.count,
                              firstRange: builder.model.ranges.count)
                var scopes: [Scope] = []
                var ranges: [AddressRange] = []
                swap(&scopes, &part.scopes)
                swap(&ranges, &part.ranges)
                builder.addScopes(consume scopes, ranges: consume ranges)
                if index == 0 && (laterScopes > 0 || laterRanges > 0) {
                    builder.reserveCapacity(scopes: laterScopes, ranges: laterRanges)
                }
                let tables = part.tables.filter { appendedTables.insert($0.offset).inserted }.map(\.sequences)
                if builder.codesLines {
                    // Rows name paths only: the other texts map to no file.
                    var files = global
                    for text in part.isPath.indices where !part.isPath[text] { files[text] = 0 }
                    builder.addSequences(tables, of: part.lines, fileMap: files)
                } else {
                    // Rewritten in place: the part holds the only reference to its rows.
                    var rows: [LineRow] = []
                    swap(&rows, &part.rows)
                    for sequence in tables.joined().map({ part.sequences[$0] }) {
                        for row in sequence { rows[row].file = global[Int(rows[row].file)] }
                        builder.addSequence(rows[sequence])
                    }
                }
            }
        }

        /// Rewrites `part`'s scopes and ranges, in place, into what `ModelBuilder.addScope` would
        /// have made of them one by one after `firstScope` scopes and `firstRange` ranges: names
        /// and call files mapped through `texts`, parents to model indices, empty ranges and
        /// ranges at 0 left out, and scopes left without ranges dropped (their children then have
        /// no parent, as with `addScope`).
        static func rewriteScopes(_ part: inout PartialModel, texts: [UInt32], firstScope: Int, firstRange: Int) {
            var scopeIndex = [UInt32](repeating: Scope.noParent, count: part.scopes.count)
            var keptScopes = 0
            var keptRanges = 0
            for position in part.scopes.indices {
                // Writes never overtake reads: each kept record moves down or stays.
                let scope = part.scopes[position]
                let first = keptRanges
                for index in scope.rangeIndices {
                    let range = part.ranges[index]
                    if range.start != 0 && range.start < range.end {
                        part.ranges[keptRanges] = range
                        keptRanges += 1
                    }
                }
                guard keptRanges > first else { continue }
                // Parents come before children, so their model index is known.
                let parent = scope.parent == Scope.noParent ? Scope.noParent : scopeIndex[Int(scope.parent)]
                part.scopes[keptScopes] = Scope(
                    name: texts[Int(scope.name)], parent: parent, firstRange: UInt32(firstRange + first),
                    rangeCount: UInt32(keptRanges - first), callFile: texts[Int(scope.callFile)],
                    callLine: scope.callLine, callColumn: scope.callColumn)
                scopeIndex[position] = UInt32(firstScope + keptScopes)
                keptScopes += 1
            }
            part.scopes.removeLast(part.scopes.count - keptScopes)
            part.ranges.removeLast(part.ranges.count - keptRanges)
        }
    }
}
