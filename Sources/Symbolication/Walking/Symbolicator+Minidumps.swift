import SymBytes
import SymCore
import SymELF
import SymReport
import SymTable
import SymUnwind

extension Symbolicator {
    /// Walks every thread of `dump` and symbolicates the frames (see `report(minidump:path:maximumFrames:)`).
    public func symbolicate(minidump dump: Minidump, path: String, maximumFrames: Int = .max) throws(FormatError) -> SymbolicatedReport {
        symbolicate(try report(minidump: dump, path: path, maximumFrames: maximumFrames))
    }

    /// The report of a Breakpad/Crashpad minidump: its modules (build-ids from their CodeView
    /// records), one stack per thread walked with each module's unwind rules, from its table
    /// (`.csym` v4) or else its ELF file, as the providers find them
    /// (`walkModule(of:start:end:binary:wholeCFI:)`), else by frame pointers and stack scanning; the
    /// exception's signal and address, its thread marked crashed. Lines in `eu-stack -i`'s
    /// layout, as for core files. More than `maximumFrames` frames in all (a hostile dump: a
    /// million threads, stacks that loop) is a `limitExceeded` error as soon as the walks pass it,
    /// before the rest is walked.
    public func report(minidump dump: Minidump, path: String, maximumFrames: Int = .max) throws(FormatError) -> CrashReport {
        var report = CrashReport(format: .minidump)
        var walkModules: [WalkModule] = []
        var indexByBase: [UInt64: Int] = [:]
        for module in dump.modules {
            // A BpEL record carries the ELF build-id itself.
            let buildID = module.codeViewSignature == 0x4270_454c ? module.codeID.map(hexString) : nil
            let index = report.moduleIndex(path: module.name, buildID: buildID, loadAddress: module.base)
            report.modules[index].size = UInt64(module.size)
            indexByBase[module.base] = index
            walkModules.append(walkModule(of: report.modules[index], start: module.base, end: module.base &+ UInt64(module.size),
                                          wholeCFI: true))
        }
        var lines: [String] = ["PID \(dump.threads.first.map(\.id) ?? 0) - minidump"]
        if let reason = dump.crashReason, let exception = dump.exception {
            report.signal = String(reason.prefix { $0 != " " })
            report.reason = reason + " at 0x" + String(exception.address, radix: 16)
            lines.append("Crash reason: \(reason)")
            lines.append("Crash address: 0x" + String(exception.address, radix: 16))
        }
        if let system = dump.system { report.metadata.append(ReportMetadata("os", system.operatingSystem)) }
        let crashed = dump.crashedThread?.id
        var budget = FrameBudget(maximum: maximumFrames, source: "minidump", threadCount: dump.threads.count)
        for thread in dump.threads {
            var stack = ReportStack(name: thread.name.map { "TID \(thread.id) \($0)" } ?? "TID \(thread.id)",
                                    thread: "\(thread.id)", crashed: thread.id == crashed)
            lines.append("TID \(thread.id):")
            let frames = try dump.walk(thread, modules: walkModules, maximumFrames: budget.nextWalkLimit)
            try budget.spend(frames.count)
            for (number, frame) in frames.enumerated() {
                let module = dump.modules.first { frame.pc >= $0.base && frame.pc - $0.base < UInt64($0.size) }
                stack.frames.append(ReportFrame(index: number, address: frame.pc, module: module.flatMap { indexByBase[$0.base] },
                                                convention: frame.lookupAddress == frame.pc ? .exact : .returnAddress,
                                                line: lines.count, foundBy: ReportFrame.FoundBy(frame.trust)))
                lines.append("#\(number)  0x" + Self.paddedHex(frame.pc))
            }
            report.stacks.append(stack)
        }
        report.lines = lines.joined(separator: "\n").split(separator: "\n", omittingEmptySubsequences: false)
        return report
    }
}
