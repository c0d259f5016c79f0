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
        /// Line rows; `file` is a position in `texts` plus one (0: unknown).
        var lines: [LineRow] = []
        /// Complete sequences as index ranges of `lines`.
        var sequences: [Range<Int>] = []
        /// Decoded line tables: the `.debug_line` offset and the range of `sequences` it produced.
        var tables: [(offset: Int, sequences: Range<Int>)] = []
        /// Work spent (see `UnitWalker`), checked against the limit over all walkers.
        var work = 0

        /// Appends the parts to `builder` in order. A line table referenced from several units
        /// (possibly in different parts) is appended once, by the first.
        static func merge(_ parts: [PartialModel], into builder: inout ModelBuilder) {
            var appendedTables = Set<Int>()
            var rows: [LineRow] = []
            for part in parts {
                var global = [UInt32](repeating: 0, count: part.texts.count + 1)
                for index in part.texts.indices {
                    global[index + 1] = part.isPath[index] ? builder.file(path: part.texts[index])
                        : builder.intern(part.texts[index])
                }
                var scopeIndex = [UInt32](repeating: Scope.noParent, count: part.scopes.count)
                for (index, scope) in part.scopes.enumerated() {
                    // Parents come before children, so their global index is known.
                    let parent = scope.parent == Scope.noParent ? Scope.noParent : scopeIndex[Int(scope.parent)]
                    if let added = builder.addScope(name: global[Int(scope.name)], parent: parent,
                                                    ranges: part.ranges[scope.rangeIndices],
                                                    callFile: global[Int(scope.callFile)], callLine: scope.callLine,
                                                    callColumn: scope.callColumn) {
                        scopeIndex[index] = added
                    }
                }
                for table in part.tables where appendedTables.insert(table.offset).inserted {
                    for sequence in part.sequences[table.sequences] {
                        rows.removeAll(keepingCapacity: true)
                        for row in part.lines[sequence] {
                            var copy = row
                            copy.file = global[Int(row.file)]
                            rows.append(copy)
                        }
                        builder.addSequence(rows)
                    }
                }
            }
        }
    }
}
