import SymBytes
import SymCore
import SymELF
import SymReport
import SymTable
import SymUnwind

extension Symbolicator {
    /// Walks every thread of `core` and symbolicates the frames, through the same providers,
    /// build-id checks and address rules as any report. `path` names the core in the report.
    public func symbolicate(core: CoreFile, path: String, maximumFrames: Int = .max) throws(FormatError) -> SymbolicatedReport {
        symbolicate(try report(core: core, path: path, maximumFrames: maximumFrames))
    }

    /// The report of a core: its modules (mapped ELF images with the build-ids the core's memory
    /// holds, else their files' on disk once verified against the core: `CoreFile.diskImage`), one stack per thread walked with each module's CFI
    /// (`StackWalker`), the signal of `NT_SIGINFO`, the thread that took it marked crashed. Its
    /// lines are `eu-stack -i`'s (`PID n - core`, `TID n:`, `#N  0xPC`), which the text writer
    /// completes like any eu-stack report. More than `maximumFrames` frames in all (a hostile
    /// core: a million thread notes, stacks that loop) is a `limitExceeded` error, thrown as soon
    /// as the walks pass it, before the rest is walked (as for minidumps).
    public func report(core: CoreFile, path: String, maximumFrames: Int = .max) throws(FormatError) -> CrashReport {
        var report = CrashReport(format: .core)
        var walkModules: [WalkModule] = []
        var moduleIndices: [Int] = []
        // The program: the image holding the entry point (AT_ENTRY).
        let entry = core.auxiliaryValue(9)
        for module in core.modules {
            var buildID = module.buildID
            var binary: ELFFile?
            var refusal: ModuleRefusal?
            // The file on disk when the core did not keep the image's first page: it names the
            // build once it agrees with what the core says of the mappings (their places in its
            // segments, the read-only pages the core holds); a file that contradicts it is not
            // used, and the reason says how.
            func fromDisk(_ path: String) -> Bool {
                switch core.diskImage(at: path, mappedAt: module.path) {
                case .verified(let file): buildID = file.buildIDHex; binary = file
                case .refused(let refused): refusal = refused
                case .none: return false
                }
                return true
            }
            if let executable, let entry, entry >= module.start && entry < module.end {
                // --executable: the program's file, wherever the core says it was. Checked
                // against the build-id the core kept, else against its mappings.
                if let known = buildID {
                    if let file = try? ELFFile(path: executable), file.buildIDHex == known { binary = file }
                } else if !fromDisk(executable) {
                    _ = fromDisk(module.path)
                }
            } else if buildID == nil {
                _ = fromDisk(module.path)
            }
            let index = report.moduleIndex(path: module.path, buildID: buildID, loadAddress: module.start)
            report.modules[index].size = module.end - module.start
            if buildID == nil, let refusal { report.modules[index].refusal = refusal }
            walkModules.append(walkModule(of: report.modules[index], start: module.start, end: module.end, binary: binary))
            moduleIndices.append(index)
        }
        // The vDSO is in the core's memory, not in a file: its rules come from there.
        if let address = core.auxiliaryValue(33), let segment = core.segment(at: address),
           let bytes = core.bytes(at: address, count: Int(min(segment.memorySize - (address - segment.address), 1 << 20))),
           let image = try? ELFFile(bytes: bytes, path: "[vdso]") {
            // Its symbols too (`__vdso_clock_gettime`, from its `.dynsym`), as eu-stack names them.
            if let id = image.buildIDHex { memoryImages.withLock { $0.keep(image, buildID: id) } }
            let index = report.moduleIndex(path: "[vdso]", buildID: image.buildIDHex, loadAddress: address)
            report.modules[index].size = UInt64(bytes.count)
            walkModules.append(WalkModule(start: address, end: address + UInt64(bytes.count), binary: image))
            moduleIndices.append(index)
        }
        let pid = core.process?.pid ?? core.threads.first.map(\.id) ?? 0
        var lines: [String] = ["PID \(pid) - core"]
        if let name = core.process?.name, !name.isEmpty { report.metadata.append(ReportMetadata("process", name)) }
        report.metadata.append(ReportMetadata("pid", "\(pid)"))
        if let signal = core.signal {
            report.signal = signal.name
            report.reason = signal.codeName + (signal.address.map { " at 0x" + String($0, radix: 16) } ?? "")
            lines.append("Signal \(signal.name) (\(report.reason!))")
        }
        let crashed = core.crashedThread?.id
        var budget = FrameBudget(maximum: maximumFrames, source: "core", threadCount: core.threads.count)
        for thread in core.threads {
            var stack = ReportStack(name: "TID \(thread.id)", thread: "\(thread.id)", crashed: thread.id == crashed)
            lines.append("TID \(thread.id):")
            let frames = try core.walk(thread, modules: walkModules, maximumFrames: budget.nextWalkLimit)
            try budget.spend(frames.count)
            for (number, frame) in frames.enumerated() {
                let module = walkModules.firstIndex { frame.pc >= $0.start && frame.pc < $0.end }.map { moduleIndices[$0] }
                stack.frames.append(ReportFrame(index: number, address: frame.pc, module: module,
                                                convention: frame.lookupAddress == frame.pc ? .exact : .returnAddress,
                                                line: lines.count, foundBy: ReportFrame.FoundBy(frame.trust)))
                lines.append("#\(number)  0x" + Self.paddedHex(frame.pc))
            }
            report.stacks.append(stack)
        }
        let text = lines.joined(separator: "\n")
        report.lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        return report
    }

    /// `module` mapped at `start..<end` for the walker: its rules from its table when the table
    /// stores them (`.csym` v4: a table alone walks), else from `binary` or the ELF file of its
    /// build (`binary(of:)`: `wholeCFI` reads all of it first instead of FDEs on demand), else
    /// none (frame pointers and scanning only). With both, an address the table has no rule for
    /// (a CFA computed by a DWARF expression: PLT entries, glibc's `__restore_rt`) is asked of
    /// the ELF file, whose rules the walker evaluates.
    func walkModule(of module: ReportModule, start: UInt64, end: UInt64, binary: ELFFile? = nil,
                    wholeCFI: Bool = false) -> WalkModule {
        let elf = { WalkModule(start: start, end: end, binary: binary ?? self.binary(of: module), wholeCFI: wholeCFI) }
        guard let table = resolveEntry(module).module.symbols?.table,
              let fromTable = WalkModule(start: start, end: end, table: table) else { return elf() }
        let fromELF = elf()
        var module = fromTable
        // The ELF file's code, when at hand, is what the scan checks (the table knows only
        // where the code is).
        module.code = fromELF.code ?? fromTable.code
        guard fromELF.cfi != nil || fromELF.rules != nil else { return module }
        // The ELF file's module is placed as the table's (the same layout function made both).
        module.rules = { address in fromTable.row(at: address) ?? fromELF.row(at: address) }
        return module
    }

    /// The ELF file of `module`'s build, for its unwind rules: the one the providers found (the
    /// one engine: `--symbols`, the module path, debug directories), else the path the report
    /// names when its build-id matches and module paths are read (a table from the cache has no
    /// ELF file behind it).
    func binary(of module: ReportModule) -> ELFFile? {
        let found = resolveEntry(module).module.binaryPath
        // The module path only where the chain reads module paths (not with --no-module-paths).
        let readsModulePaths = provider.providers.contains { $0 is ModulePathProvider }
        // A module whose file was refused (`ReportModule.refusal`) takes none by path.
        let byPath = readsModulePaths && module.refusal == nil
        for candidate in [found, byPath ? module.path : nil].compactMap({ $0 }) {
            if let file = try? ELFFile(path: candidate), module.buildID == nil || file.buildIDHex == module.buildID { return file }
        }
        return nil
    }

    /// 16 hex digits, as eu-stack prints a pc.
    static func paddedHex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, 16 - digits.count)) + digits
    }
}

extension Symbolicator {
    /// The report in the file at `path`: a core file or a minidump (detected by their first
    /// bytes, or forced by `format`; read through a mapping and walked), else a text or JSON
    /// report parsed as `format` says (or detected). `maximumFrames`: as for `report(binary:…)`.
    func readReport(_ path: String, format: ReportFormat?, maximumFrames: Int = .max) throws(FormatError) -> CrashReport {
        if format == nil || format?.isBinary == true {
            let detected = Self.binaryFormat(path)
            if let format, format != detected {
                throw FormatError(.badMagic, "not a \(format.rawValue) (its first bytes are not \(format == .core ? "an ELF core file's" : "\"MDMP\""))", path: path)
            }
            if let detected {
                return try report(binary: try MappedFile(path: path), format: detected, path: path, maximumFrames: maximumFrames)
            }
        }
        return try CrashReport.parse(try Self.readText(path), format: format)
    }

    /// The report of the core file or minidump mapped in `file` (`format` says which), walked.
    /// Its walks stop with a `limitExceeded` error once they pass `maximumFrames` frames in all
    /// (`report(core:path:maximumFrames:)`, `report(minidump:path:maximumFrames:)`).
    public func report(binary file: MappedFile, format: ReportFormat, path: String, maximumFrames: Int = .max) throws(FormatError) -> CrashReport {
        switch format {
        case .core: return try report(core: try CoreFile(file: file), path: path, maximumFrames: maximumFrames)
        case .minidump: return try report(minidump: try Minidump(file: file), path: path, maximumFrames: maximumFrames)
        default: throw FormatError(.invalidValue, "\(format.rawValue) is not a binary report format", path: path)
        }
    }

    /// Which binary report the file at `path` holds, from its first bytes (nil: text, or
    /// unreadable here, which the text reader then says).
    static func binaryFormat(_ path: String) -> ReportFormat? {
        guard let file = try? MappedFile(path: path) else { return nil }
        return withExtendedLifetime(file) { binaryFormat(of: file.bytes) }
    }

    /// Which binary report starts with `bytes`: an ELF core file (`ET_CORE`), a minidump
    /// (`MDMP`), else nil.
    public static func binaryFormat(of bytes: UnsafeRawBufferPointer) -> ReportFormat? {
        if CoreFile.isCore(bytes) { return .core }
        if bytes.starts(with: Minidump.signature) { return .minidump }
        return nil
    }

    /// Whether `head`, the first bytes of a stream read so far, may still be the start of a
    /// core file or a minidump (every byte agrees with the ELF magic or `MDMP`): the reader of
    /// standard input stops reading ahead as soon as it is not, so lines of text are not held back.
    public static func mayStartBinaryReport(_ head: some Collection<UInt8>) -> Bool {
        zip(head, ELF.ELFMAG).allSatisfy { $0 == $1 } || zip(head, Minidump.signature).allSatisfy { $0 == $1 }
    }
}

extension ReportFrame.FoundBy {
    /// How the walker found a frame, as the report records it.
    init(_ trust: FrameTrust) {
        switch trust {
        case .context: self = .context
        case .cfi: self = .cfi
        case .framePointer: self = .framePointer
        case .scan: self = .scan
        }
    }
}
