import SymBytes

/// Writes `.csym` symbol tables from the neutral symbol model.
public enum SymbolTableWriter {
    /// Flattens `model` into sorted, non-overlapping address ranges with deduplicated source
    /// locations, files and strings, and encodes them as a `.csym` v1 table.
    ///
    /// Throws `FormatError` when the model refers to records out of bounds or a limit of the
    /// format (2^32 - 1 records of a kind, 4 GiB of strings) is exceeded.
    public static func write(_ model: SymbolModel) throws(FormatError) -> [UInt8] {
        var flattener = try ModelFlattener(model)
        var builder = TableBuilder()
        try flattener.flatten(into: &builder)
        let inlined = model.scopes.reduce(0) { $0 + ($1.isInlined ? 1 : 0) }
        let counts = TableBuilder.Counts(
            functions: UInt64(model.scopes.count - inlined), inlinedScopes: UInt64(inlined),
            lineRows: UInt64(model.lines.count), symbols: UInt64(flattener.keptSymbols.count))
        return try builder.encode(module: model.module, counts: counts)
    }
}
