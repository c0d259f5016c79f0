import SymTable

extension DWARFReader {
    /// What one walker extracts from a contiguous run of units, with strings and files kept local
    /// so that walkers on different threads share nothing mutable.
    ///
    /// `merge` replays the local strings into the builder in first-use order, chunk after chunk in
    /// unit order. Interning is idempotent, so the builder sees the same sequence of first uses as a
    /// single walker over all units would produce: the model is identical whatever the split.
    struct PartialModel {
        /// Strings to intern, in first-use order; `isPath[i]` marks file paths (interned with
        /// `ModelBuilder.file(path:)`, the others with `intern`).
        var texts: [String] = []
        var isPath: [Bool] = []
        /// Scopes in DIE order. `name` and `callFile` are positions in `texts` plus one (0: none),
        /// `parent` a local scope index or `Scope.noParent`, ranges index `ranges`.
        var scopes: [Scope] = []
        var ranges: [AddressRange] = []
        /// Line rows in complete sequences, coded (for a builder that codes them); `file` is a
        /// position in `texts` plus one (0: unknown).
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
            builder.reserveCapacity(scopes: parts.reduce(0) { $0 + $1.scopes.count },
                                    ranges: parts.reduce(0) { $0 + $1.ranges.count })
            for index in parts.indices {
                // Take the part out of the array so it is freed after this iteration.
                var part = PartialModel()
                swap(&part, &parts[index])
                var global = [UInt32](repeating: 0, count: part.texts.count + 1)
                for text in part.texts.indices {
                    global[text + 1] = part.isPath[text] ? builder.file(path: part.texts[text]) : builder.intern(part.texts[text])
                }
                var scopeIndex = [UInt32](repeating: Scope.noParent, count: part.scopes.count)
                for (position, scope) in part.scopes.enumerated() {
                    // Parents come before children, so their global index is known.
                    let parent = scope.parent == Scope.noParent ? Scope.noParent : scopeIndex[Int(scope.parent)]
                    if let added = builder.addScope(name: global[Int(scope.name)], parent: parent,
                                                    ranges: part.ranges[scope.rangeIndices],
                                                    callFile: global[Int(scope.callFile)], callLine: scope.callLine,
                                                    callColumn: scope.callColumn) {
                        scopeIndex[position] = added
                    }
                }
                let tables = part.tables.filter { appendedTables.insert($0.offset).inserted }.map(\.sequences)
                if builder.codesLines {
                    // Rows name paths only: the other texts map to no file.
                    var files = global
                    for text in part.texts.indices where !part.isPath[text] { files[text + 1] = 0 }
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
    }
}
