import SymBytes
import SymTable

/// How much a module's `.csym` table carries, read from the table itself (never from a manifest's
/// claim): the measure by which a later upload of a build-id improves the stored one.
public struct TableContent: Sendable, Equatable {
    /// Functions from DWARF (0 for a table built from the ELF symbol tables only).
    public var functions: UInt64
    /// Line-table rows from DWARF.
    public var lineRows: UInt64
    /// ELF symbols (`.symtab`, `.dynsym`) kept in the table.
    public var symbols: UInt64

    /// Creates a measure.
    public init(functions: UInt64, lineRows: UInt64, symbols: UInt64) {
        self.functions = functions
        self.lineRows = lineRows
        self.symbols = symbols
    }

    /// The measure of a table's statistics.
    public init(_ statistics: SymbolTable.Statistics) {
        self.init(functions: statistics.functions, lineRows: statistics.lineRows, symbols: statistics.symbols)
    }

    /// The measure of the table at `path` (its header only: no walk).
    public init(tableAt path: String) throws(FormatError) {
        self.init(try SymbolTable(file: MappedFile(path: path)).statistics)
    }

    /// Whether the table came from DWARF (functions with lines), not from symbol names alone.
    public var hasDWARF: Bool { functions > 0 || lineRows > 0 }

    /// Whether a table measuring `self` is worth replacing one measuring `stored`: DWARF where there
    /// was none, else more functions, else more line rows, else more symbols. Never a table that
    /// carries less of what counts first, so uploads of one build-id only ever improve it.
    public func improves(on stored: TableContent) -> Bool {
        (hasDWARF ? 1 : 0, functions, lineRows, symbols) > (stored.hasDWARF ? 1 : 0, stored.functions, stored.lineRows, stored.symbols)
    }
}
