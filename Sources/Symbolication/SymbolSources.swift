#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where the Symbolicator looks for a module's symbols, in order (DESIGN.md "Finding symbols"):
/// `searchPaths` (directories of `.csym`, ELF files, `.build-id/` trees, or single files), the
/// module's path in the report when its build-id matches (a relative one under the `--symbols`
/// directories, the report file's directory and the working directory), then the debug directories' `.build-id/` trees
/// (`/usr/lib/debug` last) and `.gnu_debuglink`; ELF files found are converted through the
/// conversion cache.
public struct SymbolSources: Sendable {
    /// `--symbols` paths, searched first, in order.
    public var searchPaths: [String]
    /// Whether the module path named in the report is tried (when it exists here).
    public var useModulePaths: Bool
    /// Directories with `.build-id/` trees or debuglink targets (`--debug-dir`), then `/usr/lib/debug`.
    public var locator: DebugFileLocator
    /// Where converted tables are cached by build-id; nil disables the cache.
    public var cacheDirectory: String?
    /// The DWARF decoder for on-the-fly conversion.
    public var decoder: DWARFDecoder
    /// A crashsym server asked last, for the tables of modules no other source has.
    public var server: ServerTableProvider.Configuration?

    /// Creates a configuration; `cacheDirectory` defaults to `SymbolSources.defaultCacheDirectory`.
    public init(searchPaths: [String] = [], useModulePaths: Bool = true,
                locator: DebugFileLocator = DebugFileLocator(),
                cacheDirectory: String? = SymbolSources.defaultCacheDirectory, decoder: DWARFDecoder = .builtin) {
        self.searchPaths = searchPaths
        self.useModulePaths = useModulePaths
        self.locator = locator
        self.cacheDirectory = cacheDirectory
        self.decoder = decoder
    }

    /// The CLI's providers, in the order they are asked: the `--symbols` paths (in order; a
    /// module without build-id whose name several builds' files there bear is ambiguous), the module's own
    /// path (when `useModulePaths`), then the debug directories and `.gnu_debuglink`. (The
    /// conversion cache is the engine's: `conversion`.)
    public var providers: [any SymbolProvider] {
        var providers: [any SymbolProvider] = searchPaths.isEmpty ? [] : [SymbolPathsProvider(paths: searchPaths)]
        if useModulePaths {
            // Relative module paths: under the --symbols directories, the report file's
            // directory, then the working directory.
            let bases = searchPaths.filter { FileSystem.kind(of: $0) == .directory }
            providers.append(ModulePathProvider(relativeTo: bases, workingDirectory: FileSystem.currentDirectory))
        }
        providers.append(DebugDirectoryProvider(locator: locator))
        if let debuginfod = locator.debuginfod { providers.append(DebuginfodProvider(configuration: debuginfod)) }
        if let server { providers.append(ServerTableProvider(configuration: server)) }
        return providers
    }

    /// How the engine converts ELF files found for these sources, and where it caches them.
    public var conversion: ConversionSettings {
        ConversionSettings(decoder: decoder, tableCache: tableCache)
    }

    /// The conversion cache over `cacheDirectory`, nil when caching is off.
    public var tableCache: TableCache? { cacheDirectory.map { TableCache(directory: $0) } }

    /// `$CRASHSYM_CACHE_DIR`, else `$XDG_CACHE_HOME/crashsym`, else `~/.cache/crashsym`; nil when
    /// none can be formed.
    public static var defaultCacheDirectory: String? {
        if let explicit = environment("CRASHSYM_CACHE_DIR") { return explicit }
        if let xdg = environment("XDG_CACHE_HOME"), xdg.hasPrefix("/") { return xdg + "/crashsym" }
        if let home = environment("HOME") { return home + "/.cache/crashsym" }
        return nil
    }

    /// The environment variable `name`, nil when unset or empty.
    public static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        let text = String(cString: value)
        return text.isEmpty ? nil : text
    }
}
