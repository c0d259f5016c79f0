import SymBytes

/// Writes `.csym` symbol tables from the neutral symbol model.
public enum SymbolTableWriter {
    /// Flattens `model` into sorted, non-overlapping address ranges with deduplicated source
    /// locations, files and strings, and encodes them as a `.csym` v2 table (with no stored demangled names).
    ///
    /// Throws `FormatError` when the model refers to records out of bounds or a limit of the
    /// format (2^32 - 1 records of a kind, 4 GiB of strings) is exceeded.
    ///
    /// The model is consumed: when the caller hands over its last copy, its arrays are freed
    /// before the table is encoded, so the two are never in memory together.
    public static func write(_ model: consuming SymbolModel) throws(FormatError) -> [UInt8] {
        // The rows are coded compactly first, and the model's own array freed.
        let lines = LineTable(model.lines)
        model.lines = []
        return try write(consume model, lines: lines)
    }

    /// Writes the table of `model` with the line rows of `lines`, which stand for the model's
    /// `lines` (those must be empty: producers with millions of rows code them as they go instead
    /// of holding 24 bytes a row).
    public static func write(_ model: consuming SymbolModel, lines: consuming LineTable) throws(FormatError) -> [UInt8] {
        try write(model, lines: lines, storedNames: nil as NoStoredNames?, threads: 1)
    }

    /// Writes the table of `model` with the forms `storedNames` gives for its function names (the
    /// demangled forms of the names only the Swift runtime demangles, for `crashsym`) stored in the
    /// demangled-names section, made on `threads` threads.
    public static func write(_ model: consuming SymbolModel, storedNames: some StoredNameProvider,
                             threads: Int = 2) throws(FormatError) -> [UInt8] {
        let lines = LineTable(model.lines)
        model.lines = []
        return try write(consume model, lines: lines, storedNames: storedNames, threads: threads)
    }

    /// `write(_:lines:)` with the forms `storedNames` gives for the function names stored beside
    /// them, made on `threads` threads.
    public static func write(_ model: consuming SymbolModel, lines: consuming LineTable,
                             storedNames: some StoredNameProvider, threads: Int = 2) throws(FormatError) -> [UInt8] {
        try write(model, lines: lines, storedNames: Optional(storedNames), threads: threads)
    }

    private static func write<Provider: StoredNameProvider>(
        _ model: consuming SymbolModel, lines: consuming LineTable, storedNames: Provider?, threads: Int
    ) throws(FormatError) -> [UInt8] {
        guard model.lines.isEmpty else {
            throw FormatError(.invalidValue, "symbol model: line rows both in the model and in a line table")
        }
        let module = model.module
        let inlined = model.scopes.reduce(0) { $0 + ($1.isInlined ? 1 : 0) }
        let functions = model.scopes.count - inlined
        let lineRows = lines.rowCount
        var builder = TableBuilder()
        // The flattener takes the only copies, so what it no longer needs is freed as it goes.
        var flattener = try ModelFlattener(consume model, lines: consume lines)
        try flattener.flatten(into: &builder)
        let symbols = flattener.keptSymbols.count
        // The strings outlive the rest of the model: the encoder copies them into the table.
        let strings = flattener.strings
        _ = consume flattener
        let counts = TableBuilder.Counts(functions: UInt64(functions), inlinedScopes: UInt64(inlined),
                                         lineRows: UInt64(lineRows), symbols: UInt64(symbols))
        return try builder.encode(module: module, counts: counts, strings: strings, storedNames: storedNames, threads: threads)
    }

    /// The provider of tables without stored names.
    private struct NoStoredNames: StoredNameProvider {
        func withStoredForm(of name: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {}
    }
}
