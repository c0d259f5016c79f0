import SymBytes
import SymDemangle
import SymReport

import SymELF
import SymTable
import Synchronization

/// The symbols of one module, from a `.csym` table or converted on the fly from an ELF file, with
/// the lookups the CLI, server and daemon share.
public final class ModuleSymbols: Sendable {
    /// The table answering lookups.
    public let table: SymbolTable
    /// The persistent cache file the table was read from; nil when it was converted here or
    /// opened from the path asked for.
    public let cachedPath: String?
    /// The table's build-id in hex ("" when it has none), spelled once: every request checks
    /// each module it finds against it (`ModuleQuery.check`).
    public let buildIDHex: String
    private let demangler = Demangler()
    /// The Symbolicator's caches of rendered locations, one per set of renderings and naming,
    /// made on first use and kept with the table: symbolicators made per request (the server)
    /// share them for as long as the table is kept open.
    private let locationCaches = Mutex<[LocationCache.Key: LocationCache]>([:])
    /// The names and paths `FrameRenderer`s rendered from the table, per style, kept with it so
    /// that renderers made per request (the server's lookup endpoint) do not render them again.
    private let renderedStrings = Mutex<[FrameRenderer.Style: FrameRenderer.RenderedStrings]>([:])

    /// Wraps an open table.
    public init(table: SymbolTable, cachedPath: String? = nil) {
        self.table = table
        self.cachedPath = cachedPath
        buildIDHex = table.module.buildIDHex
    }

    /// Opens `path`: a `.csym` table is memory-mapped; an ELF file is converted in memory (its
    /// separate debug file found through `locator`).
    ///
    /// With a `cache`, the conversion of an ELF file with a build-id and DWARF (its own or its
    /// debug file's) is read from, or else written to, the cache's `<build-id>.csym`, so that only
    /// the first process to meet a module pays for its DWARF. A cached table is used only when it
    /// carries the ELF file's build-id; an ELF file without build-id or without DWARF is always
    /// converted (a table of its symbols alone is cheap, and caching it would hide a debug file
    /// installed later). Tables are cached for the built-in decoder only, which is the one the
    /// cache's other writer, `symbolicate`, uses by default.
    public convenience init(path: String, locator: DebugFileLocator = DebugFileLocator(),
                            decoder: DWARFDecoder = .builtin, cache: TableCache? = nil) throws(FormatError) {
        let file = try MappedFile(path: path)
        let bytes = file.bytes
        if ELF.hasMagic(bytes) {
            let binary = try ELFFile(file: file)
            let debugFile = binary.hasDWARF ? nil : locator.locate(for: binary)
            let converted = try ModuleConverter.symbols(binary: binary, debugFile: debugFile, decoder: decoder,
                                                        cache: cache, threads: 2)
            self.init(table: converted.symbols.table, cachedPath: converted.symbols.cachedPath)
        } else {
            do {
                self.init(table: try SymbolTable(file: file))
            } catch {
                throw error.at(path: path)
            }
        }
    }

    /// Opens the `.csym` table at `path` (memory-mapped, checked; any file name: content-addressed
    /// stores name files by digest).
    public convenience init(tableAt path: String) throws(FormatError) {
        do {
            self.init(table: try SymbolTable(file: MappedFile(path: path)))
        } catch {
            throw error.at(path: path)
        }
    }

    /// The cache of rendered locations for `renderings`, names spelled by `demangler` (one per
    /// table, renderings and naming).
    func locations(renderings: LocationChain.Renderings, demangler: Demangler = Demangler()) -> LocationCache {
        let key = LocationCache.Key(renderings: renderings.rawValue, demangler: demangler)
        return locationCaches.withLock { caches in
            if let known = caches[key] { return known }
            let cache = LocationCache(table: table, renderings: renderings, demangler: demangler)
            caches[key] = cache
            return cache
        }
    }

    /// The rendered names and paths of the table in `style` (demangled), shared by every
    /// renderer made with them for as long as the table is kept.
    public func renderedStrings(style: FrameRenderer.Style) -> FrameRenderer.RenderedStrings {
        renderedStrings.withLock { strings in
            if let known = strings[style] { return known }
            let made = FrameRenderer.RenderedStrings(table: table, style: style)
            strings[style] = made
            return made
        }
    }

    /// The frames at `address` (a module file virtual address), innermost first.

    public func frames(at address: UInt64) throws(FormatError) -> [SymbolicatedFrame] {
        var frames: [SymbolicatedFrame] = []
        _ = try table.forEachFrame(at: address) { (frame) throws(FormatError) in
            let mangled = table.string(frame.function)
            let path = Self.sourcePath(directory: table.string(frame.directory), file: table.string(frame.file))
            frames.append(SymbolicatedFrame(
                function: mangled.isEmpty ? "??" : demangler.demangleOrSelf(mangled), mangled: mangled,
                file: path, line: frame.line, column: frame.column, inlined: frame.isInlined,
                symbolOnly: frame.isSymbolOnly))
        }
        return frames
    }

    /// A frame's source path: `file` when absolute or without a directory, else joined to it.
    static func sourcePath(directory: String, file: String) -> String {
        if file.isEmpty { return "" }
        if directory.isEmpty || file.hasPrefix("/") { return file }
        return directory.hasSuffix("/") ? directory + file : directory + "/" + file
    }
}
