import SymBytes
import SymELF
import SymDemangle
import SymReport
import SymTable
import Synchronization

/// Symbolicates crash reports: asks its symbol providers for each module's symbols, turns each
/// frame's address into a file virtual address, and looks up its inline chain. The one path the
/// CLI, the server and the daemon share: providers find, the Symbolicator decides (build-id
/// checks, conversion and its cache, address rules, inline chains).
///
/// Modules are resolved once per build-id (or path, for reports without build-ids) and the most
/// recently used kept (`ModuleSlots.capacity`), so one Symbolicator answers many reports from the
/// same tables, and a long-running one does not grow with every build it meets. A
/// server whose symbols change (late uploads) makes one per request or batch, its provider
/// keeping the opened tables (`OpenedTableCache`).
public final class Symbolicator: Sendable {
    /// The default budget of frames walked from one core or minidump, its threads together
    /// (`--max-report-frames` of `crashsym symbolicate` and `crashsym serve`, the agent's capture).
    public static let defaultMaximumReportFrames = 100_000

    /// Where symbols are found (the providers, asked in order).
    public let provider: SymbolProviderChain
    /// How ELF files the providers found are converted, and where conversions are cached.
    public let conversion: ConversionSettings
    /// One slot per module key: the first thread to need a module resolves it while holding the
    /// slot's lock, so a module is never converted twice at once (the most recently used kept).
    let modules = Mutex(ModuleSlots())
    /// Function symbol values by ELF path, read only for `func+0x…` frames whose name the
    /// module's table does not keep (`SymbolTable.address(ofFunction:offset:)` places the others).
    private let symbolValues = Mutex<[String: [String: UInt64]]>([:])
    /// ELF images read from a report's memory (a core's vDSO), by build-id: the symbols of a
    /// module that no file holds, used when the providers have none (the last few kept).
    let memoryImages = Mutex(MemoryImages())

    /// The renderings made once per resolved address (`LocationChain`): those of the writers
    /// that will print the results (the others render from the locations when asked).
    public let renderings: LocationChain.Renderings
    /// How function names from the tables are demangled (`--swift-names`, `--no-params`): the
    /// one place a symbolicated frame's name is spelled; the writers print it as it is.
    public let demangler: Demangler
    /// The program of the cores walked (`--executable`): the ELF file of the core's main
    /// executable when the path the core names is not this one (see `report(core:path:)`).
    public let executable: String?

    /// Creates a Symbolicator asking `providers` in order, converting ELF files as `conversion`
    /// says, its answers rendered for `renderings`, names spelled by `demangler`.
    public init(providers: [any SymbolProvider], conversion: ConversionSettings = ConversionSettings(),
                renderings: LocationChain.Renderings = .all, demangler: Demangler = Demangler(),
                executable: String? = nil) {
        provider = SymbolProviderChain(providers)
        self.conversion = conversion
        self.renderings = renderings
        self.demangler = demangler
        self.executable = executable
    }

    /// Creates a Symbolicator over the CLI's sources (`SymbolSources.providers`), its answers
    /// rendered for `renderings`, names spelled by `demangler`; `executable` is the cores'
    /// program, also searched first for symbols.
    public convenience init(sources: SymbolSources, renderings: LocationChain.Renderings = .all,
                            demangler: Demangler = Demangler(), executable: String? = nil) {
        var sources = sources
        if let executable { sources.searchPaths.insert(executable, at: 0) }
        self.init(providers: sources.providers, conversion: sources.conversion, renderings: renderings,
                  demangler: demangler, executable: executable)
    }

    /// Symbolicates every frame of `report`.
    public func symbolicate(_ report: CrashReport) -> SymbolicatedReport {
        symbolicate(report, worker: nil)
    }

    /// Symbolicates every frame of `report`, through `worker`'s own views of the modules when
    /// given (a thread that symbolicates many reports keeps one: see `Worker`).
    /// `reportDirectory` is the directory of the report's file (relative module paths may be
    /// relative to it).
    func symbolicate(_ report: CrashReport, worker: Worker?, reportDirectory: String? = nil) -> SymbolicatedReport {
        prefetch(report, reportDirectory: reportDirectory)
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
        // Frames found to be exact pcs although the report printed them as return addresses: a
        // signal trampoline and the frame it interrupted (as gdb and libunwind treat them).
        var exact: [(stack: Int, frame: Int)] = []
        let frames = report.stacks.enumerated().map { s, stack in
            // Whether the frame printed before (the callee) is a signal trampoline.
            var interrupted = false
            return stack.frames.enumerated().map { f, frame in
                var resolution: FrameResolution
                var trampoline = false
                let exactly = interrupted && frame.convention == .returnAddress
                if let index = frame.module, index < report.modules.count {
                    if views[index] == nil {
                        views[index] = worker?.view(of: report.modules[index], in: self, reportDirectory: reportDirectory)
                            ?? Worker.Module(view: resolveEntry(report.modules[index], reportDirectory: reportDirectory).view, local: nil)
                    }
                    resolution = resolve(frame, in: report, module: views[index].unsafelyUnwrapped, biases: biases,
                                         exactly: exactly, trampoline: &trampoline)
                } else {
                    resolution = resolve(frame, in: report, module: nil, biases: biases, exactly: exactly, trampoline: &trampoline)
                }
                if !frame.senderLocations.isEmpty { keepSenderLocations(of: frame, in: &resolution) }
                trampoline = trampoline || frame.function.map(Self.signalTrampolines.contains) == true
                if (exactly || trampoline) && frame.convention == .returnAddress { exact.append((s, f)) }
                interrupted = trampoline
                return resolution
            }
        }
        guard !exact.isEmpty else { return SymbolicatedReport(report: report, frames: frames) }
        var adjusted = report
        for (s, f) in exact { adjusted.stacks[s].frames[f].convention = .exact }
        return SymbolicatedReport(report: adjusted, frames: frames)
    }

    /// A frame the sender symbolicated (an agent's `--symbols`, whose debug files never leave its
    /// host) keeps the sender's chain when this symbolicator has no symbols for its module; the
    /// symbolicator's own tables win whenever it has them, even where they find no function.
    private func keepSenderLocations(of frame: ReportFrame, in resolution: inout FrameResolution) {
        switch resolution.status {
        case .noSymbols, .buildIDMismatch, .corruptSymbols, .noModule:
            resolution.status = .ok
            resolution.reason = nil
            resolution.chain = LocationChain(frame.senderLocations, renderings: renderings)
            resolution.bySender = true
        case .ok, .notInFunction, .malformed:
            break
        }
    }

    /// Functions the kernel returns through after a signal handler (glibc's `__restore_rt` on
    /// x86-64 and `__restore` on i386, the arm64 and x86 vDSO's `__kernel_rt_sigreturn` /
    /// `__kernel_sigreturn`): a frame at one is no call, and the frame after it is the
    /// instruction the signal interrupted, not a return address.
    static let signalTrampolines: Set<String> = ["__restore_rt", "__restore", "__kernel_rt_sigreturn", "__kernel_sigreturn"]

    /// Resolves one frame; `exactly` looks a return address up as printed (it follows a signal
    /// trampoline). Sets `trampoline` when the frame's pc is the start of a signal trampoline
    /// (which it then names, looked up exactly).
    private func resolve(_ frame: ReportFrame, in report: CrashReport, module: Worker.Module?,
                         biases: [Int: UInt64], exactly: Bool, trampoline: inout Bool) -> FrameResolution {
        guard let moduleIndex = frame.module, moduleIndex < report.modules.count, let view = module?.view else {
            if let problem = frame.problem { return FrameResolution(status: .malformed, reason: problem) }
            return FrameResolution(status: .noModule, reason: "no module of the report contains this address")
        }
        // The file virtual address of the printed pc.
        var address: UInt64?
        if let symbol = frame.symbol, let offset = frame.moduleOffset {
            // `func+0x…`: where the table says the function starts (so a table alone, as on the
            // server, places it as the ELF file does), else the symbol's value from an ELF file of
            // the build (a name the table does not keep: an alias at the address of another), else
            // the bias another frame showed.
            if let table = view.symbols?.table, let value = try? table.address(ofFunction: symbol, offset: offset, loadedAt: frame.address) {
                address = value
            } else if let binary = view.binaryPath, let value = symbolAddress(symbol, in: binary) {
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
        var lookup = frame.convention == .returnAddress && address > 0 && !exactly ? address - 1 : address
        if lookup != address && Self.isSignalTrampoline(at: address, in: symbols.table) {
            trampoline = true
            lookup = address
        }
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
                facts = ModuleFacts(source: module.source.map(Self.copy), candidates: module.candidates)
                reason = module.reason.map(Self.copy)
                codeRanges = Array(module.codeRanges.map { $0 })
                binaryPath = module.binaryPath.map(Self.copy)
            } else {
                facts = ModuleFacts(source: module.source, candidates: module.candidates)
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
        func view(of module: ReportModule, in symbolicator: Symbolicator, reportDirectory: String?) -> Module {
            let pathKey = Symbolicator.pathKey(module, reportDirectory: reportDirectory)
            if let id = module.buildID {
                if let known = byBuildID[id] { return known }
            } else if let known = byPath[pathKey] {
                return known
            }
            let resolved = symbolicator.resolveEntry(module, reportDirectory: reportDirectory).module
            let view = Module(view: ModuleView(resolved, copying: true), local: resolved.symbols.map(LocalChains.init))
            if let id = module.buildID { byBuildID[id] = view } else { byPath[pathKey] = view }
            return view
        }
    }

    // MARK: Finding a module's symbols

    /// The outcome of looking for one module's symbols (kept while its slot is: `ModuleSlots`).
    struct ResolvedModule: Sendable {
        var symbols: LocationCache?
        var status: FrameStatus = .noSymbols
        var reason: String?
        var source: String?
        /// The page-aligned `p_vaddr` of the first `PT_LOAD` (0 when not known).
        var mappingBase: UInt64 = 0
        /// The executable `PT_LOAD` segments' address ranges (empty when not known).
        var codeRanges: [Range<UInt64>] = []
        /// The ELF file describing the module's addresses, when one was found.
        var binaryPath: String?
        /// Every candidate the providers tried, and the engine's own verdicts and cache steps.
        var candidates: [SymbolCandidate] = []
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

    /// Module slots by build-id, and by path for modules without one: the `capacity` most
    /// recently used, the least recently used dropped first. A long-running agent or server
    /// symbolicates crashes of many builds; a dropped module that comes back is resolved again
    /// (its table from the conversion cache), and a report holds the entries it resolved.
    struct ModuleSlots {
        /// How many modules are kept: those of several large processes (a browser maps a few
        /// hundred libraries).
        static let capacity = 512

        /// A module's key: its build-id, else its path key (`Symbolicator.pathKey`).
        enum Key: Hashable {
            case buildID(String)
            case path(String)

            init(_ module: ReportModule, reportDirectory: String?) {
                if let id = module.buildID { self = .buildID(id) } else { self = .path(Symbolicator.pathKey(module, reportDirectory: reportDirectory)) }
            }
        }

        /// The slots, each with the tick of its last use.
        private var slots: [Key: (slot: ModuleSlot, used: UInt64)] = [:]
        private var tick: UInt64 = 0

        /// The number of modules kept.
        var count: Int { slots.count }

        /// The slot of `key` (now the most recently used), nil when none is kept.
        mutating func slot(_ key: Key) -> ModuleSlot? {
            guard let known = slots[key]?.slot else { return nil }
            tick += 1
            slots[key] = (known, tick)
            return known
        }

        /// The slot of `key` (now the most recently used), made empty when none is kept; the
        /// least recently used is dropped beyond `capacity` (a scan, as rare as a new module).
        mutating func slotMaking(_ key: Key) -> ModuleSlot {
            if let known = slot(key) { return known }
            if slots.count >= Self.capacity, let oldest = slots.min(by: { $0.value.used < $1.value.used })?.key {
                slots[oldest] = nil
            }
            let made = ModuleSlot()
            tick += 1
            slots[key] = (made, tick)
            return made
        }

        /// Whether a slot of `key` is kept (its use not counted).
        func contains(_ key: Key) -> Bool { slots[key] != nil }
    }

    /// The key of a module without a build-id: its path, and for a relative path the report's
    /// directory too (`./bin/app` of two reports in two directories may be two programs).
    /// A module whose file was refused (`ReportModule.refusal`) has a key of its own: another
    /// report of the same path may have its file verified.
    static func pathKey(_ module: ReportModule, reportDirectory: String?) -> String {
        let path = module.refusal.map { module.path + "\0refused: " + $0.message } ?? module.path
        guard let reportDirectory, !module.path.hasPrefix("/") else { return path }
        return reportDirectory + "\0" + path
    }

    func resolveEntry(_ module: ReportModule, reportDirectory: String? = nil) -> ModuleEntry {
        let key = ModuleSlots.Key(module, reportDirectory: reportDirectory)
        let slot = modules.withLock { $0.slotMaking(key) }
        return slot.value.withLock { value in
            if let value { return value }
            let entry = ModuleEntry(findModule(module, reportDirectory: reportDirectory))
            value = entry
            return entry
        }
    }

    /// Finds `module`'s symbols through the providers, then decides what they found: checks
    /// every answer against the report's build-id, converts ELF files (through the conversion
    /// cache), and takes the module's layout from an ELF file of the build when there is one.
    private func findModule(_ module: ReportModule, reportDirectory: String?) -> ResolvedModule {
        var result = ResolvedModule()
        if module.buildID == nil, let refusal = module.refusal {
            // The file at the module's path contradicts the report: no file is taken by path or
            // name (without a build-id that is all the providers could match on).
            result.reason = refusal.message
            result.candidates = [SymbolCandidate(source: .modulePath, location: module.path, outcome: .unreadable(reason: refusal.message))]
            return result
        }
        var query = ModuleQuery(module)
        query.reportDirectory = reportDirectory
        let answer = provider.find(query)
        var candidates = answer.candidates
        // The providers checked what they found; the engine checks again with the same rule,
        // so that no provider can hand it another build's symbols.
        var objects: [ELFFile] = []
        for object in answer.objects {
            let verdict = query.check(object, source: .answer)
            if verdict.isMatch { objects.append(object) } else { candidates.append(verdict) }
        }
        if objects.isEmpty && answer.table == nil, let id = module.buildID, let image = memoryImages.withLock({ $0.image(buildID: id) }) {
            // No file of the build anywhere: the image in the report's memory (its `.dynsym`).
            objects = [image]
            candidates.append(SymbolCandidate(source: SymbolCandidate.Source(rawValue: "memory"), location: module.path,
                                              outcome: .matched(.elf(hasDWARF: image.hasDWARF), byName: false)))
        }
        if let table = answer.table {
            let location = answer.tableLocation ?? table.cachedPath ?? table.table.module.name
            let verdict = query.check(table, at: location, source: .answer)
            if verdict.isMatch {
                result.symbols = table.locations(renderings: renderings, demangler: demangler)
                result.source = location
                result.status = .ok
            } else {
                candidates.append(verdict)
            }
        }
        if result.symbols == nil && !objects.isEmpty {
            convert(objects, into: &result, candidates: &candidates)
        }
        // Addresses are placed by the layout of an ELF file of the build when one is at hand, else
        // by the one the table records (version 3 on; older tables alone place only file virtual
        // addresses).
        if let binary = objects.first(where: { !$0.hasDWARF }) ?? objects.first {
            describe(binary, into: &result)
        } else if let layout = result.symbols?.table.module.layout {
            place(layout, into: &result)
        }
        if result.symbols == nil && result.status == .noSymbols {
            if let broken = candidates.first(where: \.isUnreadable) {
                // The module's file was found and cannot be read: say so, not "no symbols".
                result.status = .corruptSymbols
                result.reason = ReportWriter.describe(broken)
            } else if let mismatch = candidates.first(where: \.isBuildIDMismatch), let reason = ReportWriter.mismatchReason(mismatch) {
                result.status = .buildIDMismatch
                result.reason = reason
            } else if let ambiguous = candidates.first(where: \.isAmbiguous), let reason = ReportWriter.ambiguityReason(ambiguous) {
                // Several files share the name of a module reported without a build-id: no symbols,
                // and the reason says why none was picked.
                result.reason = reason
            } else {
                result.reason = "no symbols found for \(module.name)\(module.buildID.map { " (build-id \($0))" } ?? "")"
            }
        }
        result.candidates = candidates
        return result
    }

    /// Converts the best ELF files found (a binary and a DWARF-carrying debug file) into a table,
    /// through the conversion cache.
    private func convert(_ files: [ELFFile], into result: inout ResolvedModule, candidates: inout [SymbolCandidate]) {
        let debugFile = files.first(where: { $0.hasDWARF })
        let binary = files.first(where: { !$0.hasDWARF }) ?? debugFile!
        do {
            let converted = try ModuleConverter.symbols(binary: binary, debugFile: debugFile === binary ? nil : debugFile,
                                                        decoder: conversion.decoder, cache: conversion.tableCache, threads: 2)
            candidates += converted.candidates
            result.symbols = converted.symbols.locations(renderings: renderings, demangler: demangler)
            result.source = converted.symbols.cachedPath ?? (debugFile ?? binary).path
            result.status = .ok
        } catch {
            result.status = .corruptSymbols
            result.reason = "cannot convert \(binary.path): \(error)"
        }
    }

    /// Records what the ELF file tells about addresses: its layout (`ModuleLayout(_:)`), and
    /// where to read function symbol values.
    private func describe(_ binary: ELFFile, into result: inout ResolvedModule) {
        if let layout = ModuleLayout(binary) { place(layout, into: &result) }
        result.binaryPath = binary.path
    }

    /// Places the module's addresses with `layout`: mapping-relative offsets start at its mapping
    /// base, and looked-up addresses must lie in its executable segments.
    private func place(_ layout: ModuleLayout, into result: inout ResolvedModule) {
        result.mappingBase = layout.mappingBase
        result.codeRanges = layout.codeRanges
    }

    /// Whether `address` is the first instruction of a signal trampoline in `symbols` (the
    /// return address the kernel gives a handler is exactly there).
    static func isSignalTrampoline(at address: UInt64, in table: SymbolTable) -> Bool {
        // Cheap for every other return address: only a range starting exactly there is read.
        guard let range = try? table.range(containing: address), range.start == address, range.hasFrames else { return false }
        var physical = ""
        _ = try? table.forEachFrame(at: address) { frame in physical = table.string(frame.function) }
        return signalTrampolines.contains(physical)
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
}

/// Symbolicates `report` with symbols from `sources` (a fresh Symbolicator; keep one to reuse
/// its resolved modules across reports).
public func symbolicate(_ report: CrashReport, using sources: SymbolSources) -> SymbolicatedReport {
    Symbolicator(sources: sources).symbolicate(report)
}

private func hex(_ value: UInt64) -> String { "0x" + String(value, radix: 16) }
