import SymBytes
import SymTable

/// The persistent cache of converted symbol tables: one `<build-id>.csym` per module in one
/// directory, shared by `symbolicate` and the drop-in symbolizers (`addr2line`, `llvm-symbolizer`).
///
/// A table is keyed by the GNU build-id of the module it describes and is only ever used for an
/// ELF file with that build-id: the table's own header must carry the same build-id, so a file
/// renamed or written over by another build is never answered from. Writes are atomic (a reader
/// sees the old table or the whole new one), so concurrent processes can share the directory.
public struct TableCache: Sendable {
    /// The cache directory (created on first write).
    public let directory: String

    /// A cache in `directory`.
    public init(directory: String) {
        self.directory = directory
    }

    /// The cache of `SymbolSources.defaultCacheDirectory` (`$CRASHSYM_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/crashsym`, else `~/.cache/crashsym`); nil when none can be formed.
    public static var standard: TableCache? {
        SymbolSources.defaultCacheDirectory.map(TableCache.init(directory:))
    }

    /// Where the table of the module with `buildID` (lowercase hex) is kept.
    public func path(for buildID: String) -> String {
        "\(directory)/\(buildID).csym"
    }

    /// The outcome of looking for a cached table.
    public enum Lookup {
        /// No table is cached for the build-id.
        case absent
        /// The cached table, whose header carries the build-id asked for.
        case hit(ModuleSymbols)
        /// A file is there but cannot be used (unreadable, not a table, or another build-id).
        case unusable(FormatError)
    }

    /// The cached table of the module with `buildID`, checked to carry that build-id.
    public func table(for buildID: String) -> Lookup {
        let path = path(for: buildID)
        guard FileSystem.kind(of: path) == .file else { return .absent }
        do {
            let symbols = try ModuleSymbols(table: SymbolTable(file: MappedFile(path: path)))
            let stored = hexString(symbols.table.module.buildID)
            guard stored == buildID else {
                return .unusable(FormatError(.invalidValue, "table for build-id \(stored), expected \(buildID)", path: path))
            }
            return .hit(symbols)
        } catch {
            return .unusable(error.at(path: path))
        }
    }

    /// Stores `bytes` (a `.csym` table) as the table of `buildID`, atomically; returns its path.
    @discardableResult
    public func store(_ bytes: [UInt8], buildID: String) throws(FormatError) -> String {
        try FileSystem.createDirectory(directory)
        let path = path(for: buildID)
        try FileSystem.writeAtomically(bytes, to: path)
        return path
    }
}
