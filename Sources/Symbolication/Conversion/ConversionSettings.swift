/// How the engine turns ELF files into tables: the DWARF decoder, and the persistent cache of
/// conversions (nil: every process converts the modules it meets).
public struct ConversionSettings: Sendable {
    /// The DWARF decoder.
    public var decoder: DWARFDecoder
    /// Where converted tables are kept; nil disables the cache.
    public var tableCache: TableCache?

    /// Settings with `decoder` and `tableCache` (no cache by default).
    public init(decoder: DWARFDecoder = .builtin, tableCache: TableCache? = nil) {
        self.decoder = decoder
        self.tableCache = tableCache
    }
}
