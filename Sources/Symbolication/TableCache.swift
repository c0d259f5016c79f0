#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import SymBytes
import SymTable

/// The persistent cache of converted symbol tables: one `<build-id>.c<version>.csym` per module
/// in one directory, shared by `symbolicate` and the drop-in symbolizers (`addr2line`,
/// `llvm-symbolizer`).
///
/// A table is keyed by the GNU build-id of the module it describes, the identity of the files it
/// was converted from (`ModuleConverter.cacheKey`: `<build-id>-<hash>`), and the version of the
/// conversion that wrote it (`ModuleConverter.version`); it is only ever used for an ELF file with
/// that build-id and those bytes: the table's own header must carry the same build-id, so a file
/// renamed or written over by another build is never answered from, and a hostile file carrying
/// a genuine build-id gets a table of its own instead of poisoning the genuine file's. A table written by an older conversion has
/// another name, so it is never read: the module is converted again and the stale file removed.
/// Writes are atomic (a reader sees the old table or the whole new one), so concurrent processes
/// can share the directory.
public struct TableCache: Sendable {

    /// The cache directory (created on first write).
    public let directory: String
    /// The conversion version whose tables this cache reads and writes.
    public let converterVersion: Int

    /// A cache in `directory` for tables of `converterVersion` (tests give older versions).
    public init(directory: String, converterVersion: Int = ModuleConverter.version) {
        self.directory = directory
        self.converterVersion = converterVersion
    }

    /// The cache of `SymbolSources.defaultCacheDirectory` (`$CRASHSYM_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/crashsym`, else `~/.cache/crashsym`); nil when none can be formed.
    public static var standard: TableCache? {
        SymbolSources.defaultCacheDirectory.map { TableCache(directory: $0) }
    }

    /// Where the table under `key` (a lowercase hex build-id, optionally followed by `-` and the
    /// files' identity) is kept.
    public func path(for key: String) -> String {
        path(for: key, version: converterVersion)
    }

    /// The build-id part of `key` (before the first `-`).
    static func buildID(ofKey key: String) -> Substring {
        key.prefix { $0 != "-" }
    }

    /// Where a table of `version` is kept (version 1: the unversioned name of old caches).
    func path(for buildID: String, version: Int) -> String {
        version <= 1 ? "\(directory)/\(buildID).csym" : "\(directory)/\(buildID).c\(version).csym"
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

    /// The cached table under `key`, checked to carry the key's build-id.
    public func table(for key: String) -> Lookup {
        let path = path(for: key)
        let buildID = Self.buildID(ofKey: key)
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

    /// Stores `bytes` (a `.csym` table) as the table under `key`, atomically, and removes the
    /// key's tables of older conversion versions; returns its path.
    @discardableResult
    public func store(_ bytes: [UInt8], key: String) throws(FormatError) -> String {
        try FileSystem.createDirectory(directory)
        let path = path(for: key)
        try FileSystem.writeAtomically(bytes, to: path)
        // Best effort: a stale file left behind is never read, only wastes space.
        for version in 1..<max(1, converterVersion) { _ = unlink(self.path(for: key, version: version)) }
        return path
    }
}
