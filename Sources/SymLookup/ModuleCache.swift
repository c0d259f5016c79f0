import SymBytes
import SymELF
import Symbolication

/// One module opened by path for the drop-in symbolizers: its symbol table (an ELF file converted
/// in memory or read from the persistent table cache by build-id, or a `.csym` mapped) and, for an ELF file, its own ELF symbol table, read on first
/// use only (DATA queries and addresses no function covers need it).
public final class CachedModule {
    /// The path as asked for.
    public let path: String
    /// The module's symbols.
    public let symbols: ModuleSymbols
    private var elfSymbolsLoaded = false
    private var elfSymbolTable: SymbolizerSymbolTable?
    private var elfFileLoaded = false
    private var elfFile: ELFFile?

    init(path: String, symbols: ModuleSymbols) {
        self.path = path
        self.symbols = symbols
    }

    /// The ELF file at `path`, or nil when the module is a `.csym` table or the file cannot be read.
    public var binary: ELFFile? {
        if !elfFileLoaded {
            elfFileLoaded = true
            if let prefix = FileSystem.prefix(of: path, count: 4), ELF.hasMagic(prefix) {
                elfFile = try? ELFFile(path: path)
            }
        }
        return elfFile
    }

    /// The ELF file's own symbols, llvm-symbolizer's way; nil for a `.csym` table or a broken
    /// symbol table (answers then come from the table alone).
    public var elfSymbols: SymbolizerSymbolTable? {
        if !elfSymbolsLoaded {
            elfSymbolsLoaded = true
            if let binary { elfSymbolTable = try? SymbolizerSymbolTable(file: binary) }
        }
        return elfSymbolTable
    }
}

/// Modules opened once per path and kept for the life of the process, their conversions kept
/// across processes in the persistent table cache: a drop-in symbolizer is asked about few
/// modules many times (a sanitizer runtime keeps one symbolizer process for its
/// whole report). Failures are cached too, so a missing module is reported once per path's
/// request without retrying the file system. Not thread-safe: one cache per answering loop.
public final class ModuleCache {
    /// Where separate debug files are looked for.
    public let locator: DebugFileLocator
    /// The DWARF decoder for ELF files.
    public let decoder: DWARFDecoder
    /// The persistent cache of converted tables (by build-id), shared with `symbolicate`; nil:
    /// every process converts the modules it is asked about.
    public let tableCache: TableCache?
    private var modules: [String: Result<CachedModule, FormatError>] = [:]
    /// The module asked for last: consecutive requests are mostly about one module.
    private var last: (path: String, module: Result<CachedModule, FormatError>)?

    /// Creates an empty cache over `tableCache` (by default `$CRASHSYM_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/crashsym`, else `~/.cache/crashsym`).
    public init(locator: DebugFileLocator = DebugFileLocator(), decoder: DWARFDecoder = .builtin,
                tableCache: TableCache? = TableCache.standard) {
        self.locator = locator
        self.decoder = decoder
        self.tableCache = tableCache
    }

    /// The module at `path`, opened (and converted) on first request.
    public func module(at path: String) -> Result<CachedModule, FormatError> {
        if let last, last.path == path { return last.module }
        if let known = modules[path] {
            last = (path, known)
            return known
        }
        let result: Result<CachedModule, FormatError>
        do {
            let symbols = try ModuleSymbols(path: path, locator: locator, decoder: decoder, cache: tableCache)
            result = .success(CachedModule(path: path, symbols: symbols))
        } catch {
            result = .failure(error.at(path: path))
        }
        modules[path] = result
        last = (path, result)
        return result
    }

    /// Number of paths asked for so far (opened or failed).
    public var count: Int { modules.count }
}
