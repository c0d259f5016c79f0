import SymBytes
import SymELF
import SymReport
import SymTable
import Synchronization

/// Symbolicates crash reports: finds each module's symbols by build-id, turns each frame's
/// address into a file virtual address, and looks up its inline chain. The one path the CLI,
/// the server and the daemon share.
///
/// Modules are resolved once per build-id (or path, for reports without build-ids) and kept, so
/// one Symbolicator answers many reports from the same tables.
public final class Symbolicator: Sendable {
    /// Where symbols are looked for.
    public let sources: SymbolSources
    /// One slot per module key: the first thread to need a module resolves it while holding the
    /// slot's lock, so a module is never converted twice at once.
    private let modules = Mutex(ModuleSlots())
    private let directories = Mutex<[String: DirectoryIndex]>([:])
    /// Function symbol values by ELF path, read only for reports with `func+0x…` frames.
    private let symbolValues = Mutex<[String: [String: UInt64]]>([:])

    /// The renderings made once per resolved address (`LocationChain`): those of the writers
    /// that will print the results (the others render from the locations when asked).
    public let renderings: LocationChain.Renderings

    /// Creates a Symbolicator over `sources`, its answers rendered for `renderings`.
    public init(sources: SymbolSources, renderings: LocationChain.Renderings = .all) {
        self.sources = sources
        self.renderings = renderings
    }

    /// Symbolicates every frame of `report`.
    public func symbolicate(_ report: CrashReport) -> SymbolicatedReport {
        symbolicate(report, worker: nil)
    }

    /// Symbolicates every frame of `report`, through `worker`'s own views of the modules when
    /// given (a thread that symbolicates many reports keeps one: see `Worker`).
    func symbolicate(_ report: CrashReport, worker: Worker?) -> SymbolicatedReport {
        // Load biases learnt from frames that print both an absolute pc and a file virtual
        // address: they place symbol-relative or absolute-only frames of the same module (only
        // needed when the report has such frames).
        var biases: [Int: UInt64] = [:]
        let needsBiases = report.stacks.contains { stack in
            stack.frames.contains { $0.symbol != nil || ($0.moduleOffset == nil && $0.address != nil) }
        }
        for stack in report.stacks where needsBiases {
            for frame in stack.frames {
                if let module = frame.module, let address = frame.address, let offset = frame.moduleOffset,
                   frame.symbol == nil, frame.offsetBase == .virtualAddress, biases[module] == nil {
                    biases[module] = address &- offset
                }
            }
        }
        // Each module is looked up once per report (and once per Symbolicator across reports).
        var views = [Worker.Module?](repeating: nil, count: report.modules.count)
        let frames = report.stacks.map { stack in
            stack.frames.map { frame in
                guard let index = frame.module, index < report.modules.count else {
                    return resolve(frame, in: report, module: nil, biases: biases)
                }
                if views[index] == nil {
                    views[index] = worker?.view(of: report.modules[index], in: self)
                        ?? Worker.Module(view: resolveEntry(report.modules[index]).view, local: nil)
                }
                return resolve(frame, in: report, module: views[index].unsafelyUnwrapped, biases: biases)
            }
        }
        return SymbolicatedReport(report: report, frames: frames)
    }

    private func resolve(_ frame: ReportFrame, in report: CrashReport, module: Worker.Module?,
                         biases: [Int: UInt64]) -> FrameResolution {
        guard let moduleIndex = frame.module, moduleIndex < report.modules.count, let view = module?.view else {
            if let problem = frame.problem { return FrameResolution(status: .malformed, reason: problem) }
            return FrameResolution(status: .noModule, reason: "no module of the report contains this address")
        }
        // The file virtual address of the printed pc.
        var address: UInt64?
        if let symbol = frame.symbol, let offset = frame.moduleOffset {
            // `func+0x…`: the symbol's value from the ELF file, else the bias another frame showed.
            if let binary = view.binaryPath, let value = symbolAddress(symbol, in: binary) {
                address = value &+ offset
            } else if let pc = frame.address, let bias = biases[moduleIndex] {
                address = pc &- bias
            }
        } else if let offset = frame.moduleOffset {
            address = frame.offsetBase == .virtualAddress ? offset : offset &+ view.mappingBase
        } else if let pc = frame.address, let start = report.modules[moduleIndex].loadAddress, pc >= start {
            address = pc - start + view.mappingBase
        } else if let pc = frame.address, let bias = biases[moduleIndex] {
            address = pc &- bias
        }
        var resolution = FrameResolution(status: .ok, moduleAddress: address, moduleFacts: view.facts)
        if let problem = frame.problem {
            resolution.status = .malformed
            resolution.reason = problem
            return resolution
        }
        guard let symbols = view.symbols else {
            resolution.status = view.status
            resolution.reason = view.reason
            return resolution
        }
        guard let address else {
            resolution.status = .malformed
            resolution.reason = frame.symbol.map { "symbol '\($0)' is not in \(view.binaryPath ?? report.modules[moduleIndex].name)" }
                ?? "no module offset for this frame"
            return resolution
        }
        let lookup = frame.convention == .returnAddress && address > 0 ? address - 1 : address
        resolution.lookupAddress = lookup
        if !view.codeRanges.isEmpty && !view.codeRanges.contains(where: { $0.contains(lookup) }) {
            resolution.status = .notInFunction
            resolution.reason = "\(hex(lookup)) is outside the executable segments of \(report.modules[moduleIndex].name)"
            return resolution
        }
        do {
            resolution.chain = if let local = module?.local { try local.chain(at: lookup) } else { try symbols.chain(at: lookup) }
            if resolution.chain == nil {
                resolution.status = .notInFunction
                resolution.reason = "no function at \(hex(lookup)) in \(view.facts.source ?? report.modules[moduleIndex].name)"
            }
        } catch {
            resolution.status = .corruptSymbols
            resolution.reason = "\(error)"
        }
        return resolution
    }

    /// What resolving a frame reads of its module, in one object: the frames of a report read
    /// it in place instead of copying the module's strings and arrays into each resolution. A
    /// `Worker` makes its own, with its own copies of those strings and arrays, so that two
    /// threads do not count references on the same objects for every frame (each such count
    /// moves a cache line between the cores).
    final class ModuleView: Sendable {
        let symbols: LocationCache?
        let facts: ModuleFacts
        let status: FrameStatus
        let reason: String?
        let mappingBase: UInt64
        let codeRanges: [Range<UInt64>]
        let binaryPath: String?

        /// The view of `module`; `copying` gives it strings and arrays of its own.
        init(_ module: ResolvedModule, copying: Bool) {
            symbols = module.symbols
            status = module.status
            if copying {
                facts = ModuleFacts(source: module.source.map(Self.copy), explanation: module.explanation.map(Self.copy))
                reason = module.reason.map(Self.copy)
                codeRanges = Array(module.codeRanges.map { $0 })
                binaryPath = module.binaryPath.map(Self.copy)
            } else {
                facts = ModuleFacts(source: module.source, explanation: module.explanation)
                reason = module.reason
                codeRanges = module.codeRanges
                binaryPath = module.binaryPath
            }
            mappingBase = module.mappingBase
        }

        /// A string with storage of its own (a copy of a `String` shares its storage).
        private static func copy(_ text: String) -> String {
            var bytes = Array(text.utf8)
            return bytes.withUnsafeMutableBufferPointer { String(decoding: $0, as: UTF8.self) }
        }
    }

    /// One thread's views of the modules (see `ModuleView`): a thread that symbolicates many
    /// reports (`symbolicateFiles`) keeps one and never shares it.
    final class Worker {
        /// A module as one thread reads it: a view, and in a worker the thread's own cache of
        /// rendered chains in front of the view's shared one (never shared between threads).
        struct Module {
            let view: ModuleView
            let local: LocalChains?
        }

        /// Views by build-id, and by path for modules without one (the keys of `ModuleSlots`).
        private var byBuildID: [String: Module] = [:]
        private var byPath: [String: Module] = [:]

        /// The view of `module`, resolved by `symbolicator` the first time this worker meets it
        /// (afterwards no lock of the symbolicator is taken for it).
        func view(of module: ReportModule, in symbolicator: Symbolicator) -> Module {
            if let id = module.buildID {
                if let known = byBuildID[id] { return known }
            } else if let known = byPath[module.path] {
                return known
            }
            let resolved = symbolicator.resolveEntry(module).module
            let view = Module(view: ModuleView(resolved, copying: true), local: resolved.symbols.map(LocalChains.init))
            if let id = module.buildID { byBuildID[id] = view } else { byPath[module.path] = view }
            return view
        }
    }

    // MARK: Finding a module's symbols

    /// The outcome of looking for one module's symbols (kept for the Symbolicator's lifetime).
    struct ResolvedModule: Sendable {
        var symbols: LocationCache?
        var status: FrameStatus = .noSymbols
        var reason: String?
        var source: String?
        /// The page-aligned `p_vaddr` of the first `PT_LOAD` (0 when only a table was found).
        var mappingBase: UInt64 = 0
        /// The executable `PT_LOAD` segments' address ranges (empty when only a table was found).
        var codeRanges: [Range<UInt64>] = []
        /// The ELF file describing the module's addresses, when one was found.
        var binaryPath: String?
        var explanation: [String] = []
    }

    /// A resolved module, shared by reference between the frames and reports that use it.
    final class ModuleEntry: Sendable {
        let module: ResolvedModule
        /// The view of the module through the shared caches.
        let view: ModuleView

        init(_ module: ResolvedModule) {
            self.module = module
            view = ModuleView(module, copying: false)
        }
    }

    final class ModuleSlot: Sendable {
        let value = Mutex<ModuleEntry?>(nil)
    }

    /// Module slots by build-id, and by path for modules without one.
    struct ModuleSlots {
        var byBuildID: [String: ModuleSlot] = [:]
        var byPath: [String: ModuleSlot] = [:]
    }

    func resolveEntry(_ module: ReportModule) -> ModuleEntry {
        let slot = modules.withLock { slots in
            let known: ModuleSlot? = if let id = module.buildID { slots.byBuildID[id] } else { slots.byPath[module.path] }
            if let known { return known }
            let slot = ModuleSlot()
            if let id = module.buildID { slots.byBuildID[id] = slot } else { slots.byPath[module.path] = slot }
            return slot
        }
        return slot.value.withLock { value in
            if let value { return value }
            let entry = ModuleEntry(findModule(module))
            value = entry
            return entry
        }
    }

    private func findModule(_ module: ReportModule) -> ResolvedModule {
        var result = ResolvedModule()
        let expected = module.buildID
        var mismatch: String?
        /// ELF files with the module's build-id (or name, without one), in source order.
        var elfFiles: [ELFFile] = []

        // Accepts a candidate file: a matching table ends the search, a matching ELF file joins
        // `elfFiles`, anything else is noted.
        func consider(_ path: String, via origin: String) -> Bool {
            guard let prefix = FileSystem.prefix(of: path, count: 4), prefix.count == 4 else {
                result.explanation.append("\(origin) \(path): not readable")
                return false
            }
            if prefix == [0x7f, 0x45, 0x4c, 0x46] {
                do {
                    let file = try ELFFile(path: path)
                    let id = file.buildIDHex
                    if let expected, id != expected {
                        result.explanation.append("\(origin) \(path): build-id \(id ?? "none"), the report says \(expected)")
                        if mismatch == nil { mismatch = "\(path) has build-id \(id ?? "none"), the report says \(expected)" }
                        return false
                    }
                    if !elfFiles.contains(where: { $0.path == file.path }) { elfFiles.append(file) }
                    result.explanation.append("\(origin) \(path): ELF file, \(expected == nil ? "matched by name (the report gives no build-id)" : "build-id matches")\(file.hasDWARF ? ", with DWARF" : ", no DWARF")")
                    return false
                } catch {
                    result.explanation.append("\(origin) \(path): \(error)")
                    return false
                }
            }
            do {
                let symbols = try ModuleSymbols(path: path)
                let id = hexString(symbols.table.module.buildID)
                if let expected, id != expected {
                    result.explanation.append("\(origin) \(path): table for build-id \(id), the report says \(expected)")
                    if mismatch == nil { mismatch = "\(path) is for build-id \(id), the report says \(expected)" }
                    return false
                }
                result.explanation.append("\(origin) \(path): symbol table, build-id matches")
                result.symbols = LocationCache(symbols: symbols, renderings: renderings)
                result.source = path
                result.status = .ok
                return true
            } catch {
                result.explanation.append("\(origin) \(path): \(error)")
                return false
            }
        }

        // A table alone does not give the load bias: take it from an ELF file of the same build.
        func withAddresses() -> ResolvedModule {
            if let binary = elfFiles.first { describe(binary, into: &result) } else { findBinaryForBias(module, into: &result) }
            return result
        }

        func buildIDPaths(in directory: String, _ id: String) -> [String] {
            let head = String(id.prefix(2)), rest = String(id.dropFirst(2))
            return ["\(directory)/\(id).csym", "\(directory)/.build-id/\(head)/\(rest).debug", "\(directory)/\(head)/\(rest).debug"]
        }

        // 1. --symbols paths.
        for path in sources.searchPaths {
            switch FileSystem.kind(of: path) {
            case .directory:
                if let expected {
                    for candidate in buildIDPaths(in: path, expected) where FileSystem.kind(of: candidate) == .file {
                        if consider(candidate, via: "--symbols") { return withAddresses() }
                    }
                }
                let index = directoryIndex(path)
                let matches = expected.map { index.byBuildID[$0] ?? [] } ?? index.byName[module.name] ?? []
                if matches.isEmpty {
                    result.explanation.append("--symbols \(path): no file with \(expected.map { "build-id \($0)" } ?? "name \(module.name)")")
                }
                for candidate in matches where consider(candidate, via: "--symbols") { return withAddresses() }
                if let expected, let others = index.byName[module.name] {
                    for other in others where !matches.contains(other) {
                        result.explanation.append("--symbols \(other): same name, build-id \(index.buildIDs[other] ?? "none"), the report says \(expected)")
                        if mismatch == nil { mismatch = "\(other) has build-id \(index.buildIDs[other] ?? "none"), the report says \(expected)" }
                    }
                }
            case .file:
                // A single file serves the module with its build-id; with another build-id it is a
                // mismatch only when it bears the module's name (else it is another module's file).
                guard let identity = Self.identify(path) else {
                    result.explanation.append("--symbols \(path): neither an ELF file nor a .csym table")
                    continue
                }
                let sameName = identity.name == module.name || ReportModule.fileName(of: path) == module.name
                if (expected != nil && identity.buildID == expected) || sameName {
                    if consider(path, via: "--symbols") { return withAddresses() }
                } else {
                    result.explanation.append("--symbols \(path): \(identity.name) with build-id \(identity.buildID ?? "none"), another module")
                }
            default:
                result.explanation.append("--symbols \(path): not found")
            }
        }

        // 2. The conversion cache.
        if let expected, let cache = sources.tableCache {
            let cached = cache.path(for: expected)
            if FileSystem.kind(of: cached) == .file {
                // A cached table is used with the ELF file beside it when there is one (for the
                // load bias and symbol-relative frames), else alone.
                if consider(cached, via: "cache") { return withAddresses() }
            } else {
                result.explanation.append("cache \(cached): not present")
            }
        }

        // 3. The module's own path, when it exists here.
        if sources.useModulePaths && module.path.hasPrefix("/") {
            if FileSystem.kind(of: module.path) == .file {
                _ = consider(module.path, via: "module path")
            } else {
                result.explanation.append("module path \(module.path): not found here")
            }
        }

        // 4. Debug directories by build-id, and .gnu_debuglink of the binaries found.
        if let expected {
            for directory in sources.locator.debugDirectories {
                let head = String(expected.prefix(2)), rest = String(expected.dropFirst(2))
                let candidate = directory.hasSuffix(".build-id")
                    ? "\(directory)/\(head)/\(rest).debug" : "\(directory)/.build-id/\(head)/\(rest).debug"
                if FileSystem.kind(of: candidate) == .file {
                    _ = consider(candidate, via: "debug directory")
                } else {
                    result.explanation.append("debug directory \(candidate): not present")
                }
            }
        }
        if !elfFiles.contains(where: { $0.hasDWARF }), let binary = elfFiles.first, let debug = sources.locator.locate(for: binary) {
            result.explanation.append("debug file \(debug.path): found for \(binary.path)")
            elfFiles.append(debug)
        }

        guard !elfFiles.isEmpty else {
            if let mismatch {
                result.status = .buildIDMismatch
                result.reason = mismatch
            } else {
                result.status = .noSymbols
                result.reason = "no symbols found for \(module.name)\(expected.map { " (build-id \($0))" } ?? "")"
            }
            return result
        }
        convert(elfFiles, expected: expected, into: &result)
        return result
    }

    /// Converts the best ELF files found (a binary and a DWARF-carrying debug file) into a table,
    /// caching it by build-id when it carries DWARF.
    private func convert(_ files: [ELFFile], expected: String?, into result: inout ResolvedModule) {
        let debugFile = files.first(where: { $0.hasDWARF })
        let binary = files.first(where: { !$0.hasDWARF }) ?? debugFile!
        describe(binary, into: &result)
        do {
            let bytes = try ModuleConverter.table(binary: binary, debugFile: debugFile === binary ? nil : debugFile,
                                                  decoder: sources.decoder, threads: 2)
            result.symbols = LocationCache(symbols: ModuleSymbols(table: try SymbolTable(bytes: bytes)), renderings: renderings)
            result.source = (debugFile ?? binary).path
            result.status = .ok
            if debugFile != nil, let id = expected ?? binary.buildIDHex, let cache = sources.tableCache {
                do {
                    let path = try cache.store(bytes, buildID: id)
                    result.explanation.append("cache \(path): written")
                } catch {
                    result.explanation.append("cache: \(error)")
                }
            }
        } catch {
            result.status = .corruptSymbols
            result.reason = "cannot convert \(binary.path): \(error)"
        }
    }

    /// Records what the ELF file tells about addresses: the first `PT_LOAD`'s page-aligned
    /// `p_vaddr` (module offsets from the mapping start) and function symbol values.
    private func describe(_ binary: ELFFile, into result: inout ResolvedModule) {
        if let load = binary.programHeaders.first(where: { $0.type == ELF.PT_LOAD }) {
            let alignment = load.alignment > 1 && load.alignment & (load.alignment - 1) == 0 ? load.alignment : 0x1000
            result.mappingBase = load.virtualAddress & ~(alignment - 1)
        }
        for segment in binary.programHeaders where segment.type == ELF.PT_LOAD && segment.flags & 1 != 0 /* PF_X */ {
            let (end, overflow) = segment.virtualAddress.addingReportingOverflow(segment.memorySize)
            result.codeRanges.append(segment.virtualAddress..<(overflow ? UInt64.max : end))
        }
        result.binaryPath = binary.path
    }

    /// The value of the function symbol `name` in the ELF file at `path` (its symbols are read once).
    private func symbolAddress(_ name: String, in path: String) -> UInt64? {
        if let known = symbolValues.withLock({ $0[path] }) { return known[name] }
        var values: [String: UInt64] = [:]
        if let file = try? ELFFile(path: path), let symbols = try? file.symbols() {
            for symbol in symbols where symbol.isFunction && symbol.isDefined && symbol.value != 0 && values[symbol.name] == nil {
                values[symbol.name] = symbol.value
            }
        }
        symbolValues.withLock { $0[path] = values }
        return values[name]
    }

    /// With a table only, an ELF file of the same build gives the load bias: one in a `--symbols`
    /// directory, else the module's own path when it is here.
    private func findBinaryForBias(_ module: ReportModule, into result: inout ResolvedModule) {
        guard let expected = module.buildID else { return }
        var candidates: [String] = []
        for path in sources.searchPaths where FileSystem.kind(of: path) == .directory {
            candidates += directoryIndex(path).byBuildID[expected, default: []].filter { !$0.hasSuffix(".csym") }
        }
        if sources.useModulePaths { candidates.append(module.path) }
        for path in candidates where FileSystem.kind(of: path) == .file {
            if let binary = try? ELFFile(path: path), binary.buildIDHex == expected {
                describe(binary, into: &result)
                return
            }
        }
    }

    /// The build-id and module name of an ELF file or `.csym` table; nil for other files.
    static func identify(_ path: String) -> (buildID: String?, name: String)? {
        guard let prefix = FileSystem.prefix(of: path, count: 4), prefix.count == 4 else { return nil }
        if prefix == [0x7f, 0x45, 0x4c, 0x46] {
            guard let file = try? ELFFile(path: path) else { return nil }
            return (file.buildIDHex, ReportModule.fileName(of: path))
        }
        guard path.hasSuffix(".csym"), let table = try? ModuleSymbols(path: path) else { return nil }
        return (hexString(table.table.module.buildID), table.table.module.name)
    }

    // MARK: Directory indexes

    /// ELF files and tables under one `--symbols` directory, by build-id and by file name.
    struct DirectoryIndex: Sendable {
        var byBuildID: [String: [String]] = [:]
        var byName: [String: [String]] = [:]
        var buildIDs: [String: String] = [:]
    }

    private func directoryIndex(_ directory: String) -> DirectoryIndex {
        if let known = directories.withLock({ $0[directory] }) { return known }
        var index = DirectoryIndex()
        for path in FileSystem.files(under: directory) {
            guard let identity = Self.identify(path) else { continue }
            if let id = identity.buildID {
                index.byBuildID[id, default: []].append(path)
                index.buildIDs[path] = id
            }
            index.byName[identity.name, default: []].append(path)
        }
        directories.withLock { $0[directory] = index }
        return index
    }
}

/// Symbolicates `report` with symbols from `sources` (a fresh Symbolicator; keep one to reuse
/// its resolved modules across reports).
public func symbolicate(_ report: CrashReport, using sources: SymbolSources) -> SymbolicatedReport {
    Symbolicator(sources: sources).symbolicate(report)
}

private func hex(_ value: UInt64) -> String { "0x" + String(value, radix: 16) }
