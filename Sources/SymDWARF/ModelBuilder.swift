import SymTable

/// Fills a `SymbolModel` while interning strings and files, shared by the DWARF extractors.
///
/// The conventions every extractor follows (so their models compare equal):
/// - a file is stored as (directory, base name) of its absolute path, built as llvm-symbolizer
///   does: the file name if absolute, else its include directory joined with it, and that
///   prefixed with the unit's compilation directory when still relative;
/// - a scope's name is the linkage name (`DW_AT_linkage_name`, `DW_AT_MIPS_linkage_name`) found by
///   following `DW_AT_specification`/`DW_AT_abstract_origin`, else `DW_AT_name` the same way;
/// - empty ranges and ranges starting at address 0 (code removed by the linker) are dropped.
public struct ModelBuilder {
    /// The model being built.
    public private(set) var model: SymbolModel
    /// The line rows, when the builder codes them (`codesLines`) instead of appending them to
    /// `model.lines`.
    public private(set) var lines = LineTable()
    /// Whether line rows go to `lines` (compact, for the table writer) rather than `model.lines`.
    public let codesLines: Bool
    /// Deduplicates `model.strings` by their bytes.
    private var interner = StringInterner()
    private var fileIndex: [SourceFile: UInt32] = [:]
    private var pathIndex: [String: UInt32] = [:]

    /// Starts a model for a module; with `codesLines`, line rows are kept in `lines`, coded
    /// compactly, and `model.lines` stays empty.
    public init(module: ModuleIdentity, codesLines: Bool = false) {
        model = SymbolModel(module: module)
        self.codesLines = codesLines
        fileIndex[model.files[0]] = 0
    }

    /// Ends the build, handing over the model and the coded rows (empty unless `codesLines`)
    /// without keeping a copy, so the writer can free them as it goes.
    public consuming func finish() -> (model: SymbolModel, lines: LineTable) {
        (model, lines)
    }

    /// Interns a string (strings are equal when their UTF-8 bytes are).
    public mutating func intern(_ text: String) -> UInt32 {
        interner.intern(text, in: &model.strings)
    }

    /// Interns a string given as UTF-8 bytes.
    public mutating func intern(_ text: UnsafeRawBufferPointer) -> UInt32 {
        interner.intern(text, in: &model.strings)
    }

    /// Interns a file by its absolute (or best known) path, split into directory and base name.
    public mutating func file(path: String) -> UInt32 {
        if path.isEmpty { return 0 }
        if let index = pathIndex[path] { return index }
        let utf8 = path.utf8
        let record: SourceFile
        if let slash = utf8.lastIndex(of: UInt8(ascii: "/")) {
            let directory = String(path[..<slash])
            let name = String(path[path.index(after: slash)...])
            record = SourceFile(directory: intern(directory.isEmpty ? "/" : directory), name: intern(name))
        } else {
            record = SourceFile(directory: 0, name: intern(path))
        }
        let index: UInt32
        if let existing = fileIndex[record] {
            index = existing
        } else {
            index = UInt32(model.files.count)
            model.files.append(record)
            fileIndex[record] = index
        }
        pathIndex[path] = index
        return index
    }

    /// Appends a scope with its ranges (dropping empty and zero-based ones); returns its index,
    /// or nil when no range is left.
    public mutating func addScope(name: UInt32, parent: UInt32, ranges: some Sequence<AddressRange>,
                                  callFile: UInt32 = 0, callLine: UInt32 = 0, callColumn: UInt32 = 0) -> UInt32? {
        let first = model.ranges.count
        for range in ranges where range.start != 0 && range.start < range.end {
            model.ranges.append(range)
        }
        let count = model.ranges.count - first
        guard count > 0 else { return nil }
        model.scopes.append(Scope(name: name, parent: parent, firstRange: UInt32(first), rangeCount: UInt32(count),
                                  callFile: callFile, callLine: callLine, callColumn: callColumn))
        return UInt32(model.scopes.count - 1)
    }

    /// Appends scopes and their ranges already in the model's numbering (names, call files and
    /// parents are model indices, ranges index the model's ranges after those it has, and none is
    /// empty or at 0). The first ones become the model's arrays as they are, with no copy.
    public mutating func addScopes(_ scopes: consuming [Scope], ranges: consuming [AddressRange]) {
        if model.scopes.isEmpty && model.ranges.isEmpty {
            model.scopes = scopes
            model.ranges = ranges
        } else {
            model.scopes.append(contentsOf: scopes)
            model.ranges.append(contentsOf: ranges)
        }
    }

    /// Makes room for `scopes` more scopes and `ranges` more ranges in one allocation each, so the
    /// arrays are not copied (and left up to half empty) as they grow.
    public mutating func reserveCapacity(scopes: Int, ranges: Int) {
        model.scopes.reserveCapacity(model.scopes.count + scopes)
        model.ranges.reserveCapacity(model.ranges.count + ranges)
    }

    /// Makes room for `strings` more strings.
    public mutating func reserveCapacity(strings: Int) {
        model.strings.reserveCapacity(strings: strings)
    }

    /// Makes room for `lines` more line rows in one allocation (rows kept in `model.lines` only).
    public mutating func reserveCapacity(lines: Int) {
        if !codesLines { model.lines.reserveCapacity(model.lines.count + lines) }
    }

    /// Appends the rows of one sequence (ending with its end-of-sequence row) unless it starts at
    /// address 0 (code removed by the linker).
    public mutating func addSequence(_ rows: some Collection<LineRow>) {
        guard let first = rows.first, first.address != 0 else { return }
        if codesLines {
            lines.appendSequence(ArraySlice(rows))
        } else {
            model.lines.append(contentsOf: rows)
        }
    }

    /// Appends the sequences in `ranges` of `table`, whose file numbers `fileMap` maps to this
    /// builder's files, by `addSequence`'s rule.
    public mutating func addSequences(_ ranges: [Range<Int>], of table: LineTable, fileMap: [UInt32]) {
        if codesLines {
            // Whole runs at once; only the sequences starting at 0 are left out.
            var kept: [Range<Int>] = []
            for range in ranges {
                var start = range.lowerBound
                for index in range where table.firstAddress(ofSequence: index) == 0 {
                    if start < index { kept.append(start..<index) }
                    start = index + 1
                }
                if start < range.upperBound { kept.append(start..<range.upperBound) }
            }
            lines.append(table, sequences: kept, fileMap: fileMap)
        } else {
            var rows: [LineRow] = []
            for index in ranges.joined() {
                rows.removeAll(keepingCapacity: true)
                table.forEachRow(ofSequence: index) { row in
                    var row = row
                    row.file = fileMap[Int(row.file)]
                    rows.append(row)
                }
                addSequence(rows)
            }
        }
    }

    /// Appends a symbol-table entry.
    public mutating func addSymbol(name: String, address: UInt64, size: UInt64) {
        addSymbol(name: intern(name), address: address, size: size)
    }

    /// Appends a symbol-table entry whose name is already interned.
    public mutating func addSymbol(name: UInt32, address: UInt64, size: UInt64) {
        model.symbols.append(SymbolEntry(name: name, address: address, size: size))
    }

    /// Joins DWARF path components as llvm-symbolizer does for absolute file paths
    /// (`DWARFDebugLine::Prologue::getFileNameByIndex`): an absolute file name stands alone;
    /// otherwise the compilation directory is put first unless the include directory is absolute
    /// or is DWARF 5's directory 0 (which already is the compilation directory).
    public static func joinPath(compilationDirectory: String, directory: String, name: String,
                                directoryIsCompilationDirectory: Bool = false) -> String {
        if name.hasPrefix("/") { return name }
        var path = ""
        func append(_ component: String) {
            if component.isEmpty { return }
            if path.isEmpty || path.hasSuffix("/") {
                path += component
            } else {
                path += "/" + component
            }
        }
        if !directoryIsCompilationDirectory && !directory.hasPrefix("/") {
            append(compilationDirectory)
        }
        append(directory)
        append(name)
        return path
    }
}
