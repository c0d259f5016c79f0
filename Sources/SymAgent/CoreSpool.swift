import SymBytes
import SymCore
import SymReport
import Symbolication
#if canImport(Glibc)
import Glibc
#endif

/// The agent's core spool, `STATE/cores`: where `crashsym agent capture` leaves the reports of
/// the cores it read (and records of those it did not), and the one way a core becomes its
/// report (`reportJSON(stream:…)`: read once by `StreamedCore`, every thread walked by SymCore's
/// core reader, the frames resolved with this host's binaries and `--symbols`), for a piped
/// core, a systemd-coredump core and a core file an earlier capture left here alike, so that a
/// core of any size never enters the queue or the network, only its report.
public enum CoreSpool {
    /// The core spool of a state directory.
    public static func directory(in stateDirectory: String) -> String { stateDirectory + "/cores" }

    /// What a spooled file's name says about its crash: `core-TIME-PID-TID-SIGNAL-FLAG-NAME.json`
    /// (`.core` for the cores earlier versions kept), FLAG `t` for a core those cut at their size
    /// bound, NAME the executable's with only
    /// `[A-Za-z0-9._+-]` kept (others become `_`; it is the last field, so dashes stay).
    public struct Name: Sendable, Equatable {
        public var crash: CoreCapture.Crash
        public var truncated: Bool

        /// The name of `crash`'s core.
        public init(crash: CoreCapture.Crash, truncated: Bool) {
            self.crash = crash
            self.truncated = truncated
        }

        /// `TIME-PID-TID-SIGNAL-FLAG-NAME`.
        var stem: String {
            let name = String(String.UnicodeScalarView(crash.executable.unicodeScalars.prefix(32).map { scalar in
                scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "._+-".unicodeScalars.contains(scalar))
                    ? scalar : "_"
            }))
            return "\(crash.time)-\(crash.pid)-\(crash.tid ?? 0)-\(crash.signal)-\(truncated ? "t" : "f")-\(name)"
        }

        /// The core's file name.
        public var fileName: String { "core-\(stem).core" }

        /// The name of a core file `fileName` (nil: not a core's name).
        public init?(fileName: String) {
            guard fileName.hasPrefix("core-"), fileName.hasSuffix(".core") else { return nil }
            let fields = fileName.dropFirst(5).dropLast(5).split(separator: "-", maxSplits: 5, omittingEmptySubsequences: false)
            guard fields.count == 6, let time = Int64(fields[0]), let pid = Int32(fields[1]), let tid = Int32(fields[2]),
                  let signal = Int32(fields[3]), fields[4] == "t" || fields[4] == "f" else { return nil }
            crash = CoreCapture.Crash(pid: pid, tid: tid > 0 ? tid : nil, signal: signal, time: time, executable: String(fields[5]))
            truncated = fields[4] == "t"
        }
    }

    /// The crashsym JSON report (docs/crash-report.md) of a crash whose core gives no stacks
    /// (dropped, or unreadable), written by `ReportWriter` as every report is: its signal,
    /// process, time and what the helper knows of it (`extra`: the command line…), no stacks, and
    /// `problem` as its reason, so the crash is counted and explained.
    static func recordJSON(crash: CoreCapture.Crash, truncated: Bool, problem: String, input: Input = .corePattern,
                           extra: [(String, String)] = []) -> [UInt8] {
        var metadata = [("input", input.rawValue), ("process", crash.executable), ("global_pid", "\(crash.pid)"),
                        ("time", "\(crash.time)"), ("core", problem)]
        if let tid = crash.tid { metadata.append(("tid", "\(tid)")) }
        if truncated { metadata.append(("core_truncated", "true")) }
        metadata += extra
        let signal = crash.signal > 0 ? CoreFile.SignalInfo(number: crash.signal, code: 0, errno: 0, address: nil).name : nil
        let report = CrashReport(format: .core, signal: signal, reason: problem, metadata: metadata.map { ReportMetadata($0.0, $0.1) })
        var bytes: [UInt8] = []
        ReportWriter.writeJSON(SymbolicatedReport(report: report, frames: []), into: &bytes)
        return bytes
    }

    /// How a core reached the agent, for the report's `input` metadata.
    public enum Input: String, Sendable {
        /// Piped by the kernel to `crashsym agent capture`.
        case corePattern = "core_pattern"
        /// Stored by systemd-coredump.
        case systemdCoredump = "systemd-coredump"
        /// A core file left in the core spool (by an earlier `capture`).
        case coreFile = "core-file"
    }

    /// The compact crashsym JSON report (docs/crash-report.md) of the core `source` streams:
    /// read once within `limits` (`StreamedCore`: notes, stacks, the modules' first pages),
    /// every thread walked and resolved by `symbolicator` (the one walk of `crashsym symbolicate
    /// CORE`), with what the helper knows of the crash (`crash`, `process`), the crashed
    /// thread's registers and what the reading kept. A core that cannot be read (cut before its
    /// notes, damaged, hostile) gives the crash's record with the reader's error instead.
    static func reportJSON(stream source: @escaping (UnsafeMutableRawBufferPointer) throws(FormatError) -> Int,
                           crash: CoreCapture.Crash, input: Input, process: CrashedProcess?, limits: StreamedCore.Limits,
                           readToEnd: Bool, symbolicator: Symbolicator, extra: [(String, String)] = []) -> [UInt8] {
        let known = (process?.metadata ?? []) + extra
        do throws(FormatError) {
            let reduced = try StreamedCore.read(from: source, limits: limits, readToEnd: readToEnd)
            // The server's default budget of frames: a hostile core's walks stop there.
            var report = try symbolicator.report(core: reduced.core, path: crash.executable,
                                                 maximumFrames: Symbolicator.defaultMaximumReportFrames)
            var metadata = [ReportMetadata("input", input.rawValue)]
            if crash.pid > 0 { metadata.append(ReportMetadata("global_pid", "\(crash.pid)")) }
            metadata.append(ReportMetadata("time", "\(crash.time)"))
            report.metadata.insert(contentsOf: metadata, at: 0)
            if report.metadata("process") == nil { report.metadata.append(ReportMetadata("process", crash.executable)) }
            if let tid = crash.tid { report.metadata.append(ReportMetadata("tid", "\(tid)")) }
            if let thread = reduced.core.crashedThread {
                report.metadata.append(ReportMetadata("registers", registers(of: thread, machine: reduced.core.machine)))
            }
            for (key, value) in known { report.metadata.append(ReportMetadata(key, value)) }
            report.metadata.append(ReportMetadata("core_bytes_read", "\(reduced.bytesRead)"))
            report.metadata.append(ReportMetadata("core_memory_kept", "\(reduced.memoryKept)"))
            if reduced.truncated { report.metadata.append(ReportMetadata("core_truncated", "true")) }
            if reduced.stacksCut > 0 { report.metadata.append(ReportMetadata("core_stacks_cut", "\(reduced.stacksCut)")) }
            if report.signal == nil && crash.signal > 0 {
                report.signal = CoreFile.SignalInfo(number: crash.signal, code: 0, errno: 0, address: nil).name
            }
            var bytes: [UInt8] = []
            ReportWriter.writeJSON(symbolicator.symbolicate(report), into: &bytes)
            return bytes
        } catch {
            return recordJSON(crash: crash, truncated: false, problem: "the core could not be read: \(error)", input: input,
                              extra: known)
        }
    }

    /// The registers of a core's thread as `name=0xVALUE` words in the CPU's order (x86_64:
    /// rip rsp rbp rax … r15; aarch64: pc sp x0 … x30).
    public static func registers(of thread: CoreFile.Thread, machine: CoreFile.Machine) -> String {
        let names: [(UInt16, String)]
        switch machine {
        case .x86_64:
            names = [(16, "rip"), (7, "rsp"), (6, "rbp"), (0, "rax"), (3, "rbx"), (2, "rcx"), (1, "rdx"), (4, "rsi"), (5, "rdi")]
                + (8...15).map { (UInt16($0), "r\($0)") }
        case .aarch64:
            names = [(32, "pc"), (31, "sp")] + (0...30).map { (UInt16($0), "x\($0)") }
        }
        return names.compactMap { number, name in thread.registers[number].map { "\(name)=0x" + String($0, radix: 16) } }
            .joined(separator: " ")
    }

    /// The report of the core file at `path` (a core an earlier `capture` left in the spool),
    /// streamed through the same reader as a piped core.
    static func reportJSON(ofCore path: String, symbolicator: Symbolicator, limits: StreamedCore.Limits = StreamedCore.Limits()) -> [UInt8] {
        let name = Name(fileName: String(path.split(separator: "/").last ?? ""))
        let crash = name?.crash ?? CoreCapture.Crash(pid: 0, tid: nil, signal: 0, time: 0, executable: "unknown")
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            return recordJSON(crash: crash, truncated: false, problem: "the core could not be read: \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        return reportJSON(stream: CoreStreamSource.reader(descriptor), crash: crash, input: .coreFile, process: nil, limits: limits,
                          readToEnd: false, symbolicator: symbolicator, extra: name?.truncated == true ? [("core_cut_at_capture", "true")] : [])
    }
}
