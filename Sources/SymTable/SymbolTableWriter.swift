import SymBytes

/// Writes `.csym` symbol tables from the neutral symbol model.
public enum SymbolTableWriter {
    /// Flattens `model` into sorted, non-overlapping address ranges with deduplicated source
    /// locations, files and strings, and encodes them as a `.csym` v1 table.
    ///
    /// Throws `FormatError` when the model refers to records out of bounds or a limit of the
    /// format (2^32 - 1 records of a kind, 4 GiB of strings) is exceeded.
    ///
    /// The model is consumed: when the caller hands over its last copy, its arrays are freed
    /// before the table is encoded, so the two are never in memory together.
    public static func write(_ model: consuming SymbolModel) throws(FormatError) -> [UInt8] {
        var builder = TableBuilder()
        let counts = try flatten(model, into: &builder)
        let module = model.module
        model = SymbolModel(module: module)
        return try builder.encode(module: module, counts: counts)
    }

    private static func flatten(_ model: borrowing SymbolModel,
                                into builder: inout TableBuilder) throws(FormatError) -> TableBuilder.Counts {
        var flattener = try ModelFlattener(copy model)
        try flattener.flatten(into: &builder)
        let inlined = model.scopes.reduce(0) { $0 + ($1.isInlined ? 1 : 0) }
        return TableBuilder.Counts(
            functions: UInt64(model.scopes.count - inlined), inlinedScopes: UInt64(inlined),
            lineRows: UInt64(model.lines.count), symbols: UInt64(flattener.keptSymbols.count))
    }
}
