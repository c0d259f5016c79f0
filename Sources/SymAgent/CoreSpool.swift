import SymBytes
import SymCore
import SymReport
import Symbolication
#if canImport(Glibc)
import Glibc
#endif

/// The agent's core spool, `STATE/cores`: where `crashsym agent capture` leaves cores, and how
/// the agent turns each into the report it queues (every thread walked by SymCore's core reader,
/// its frames resolved with this host's binaries and `--symbols`), so that a core of any size
/// never enters the queue or the network, only its report.
public enum CoreSpool {
    /// The core spool of a state directory.
    public static func directory(in stateDirectory: String) -> String { stateDirectory + "/cores" }

    /// What a core's file name says about its crash: `core-TIME-PID-TID-SIGNAL-FLAG-NAME.core`,
    /// FLAG `t` for a core cut at `--max-core-mb`, NAME the executable's with only
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

    /// The crashsym JSON report of a crash whose core gives no stacks (dropped, or unreadable):
    /// its signal, process and time, and `problem`, so the crash is counted and explained.
    static func recordJSON(crash: CoreCapture.Crash, truncated: Bool, problem: String) -> String {
        let signal = CoreFile.SignalInfo(number: crash.signal, code: 0, errno: 0, address: nil).name
        var metadata = [("input", "core_pattern"), ("process", crash.executable), ("global_pid", "\(crash.pid)"),
                        ("time", "\(crash.time)"), ("core", problem)]
        if let tid = crash.tid { metadata.append(("tid", "\(tid)")) }
        if truncated { metadata.append(("core_truncated", "true")) }
        let members = metadata.map { "\(Forwarder.jsonString($0.0)):\(Forwarder.jsonString($0.1))" }.joined(separator: ",")
        return "{\"signal\":\(Forwarder.jsonString(signal)),\"reason\":\(Forwarder.jsonString(problem)),"
            + "\"metadata\":{\(members)},\"modules\":[],\"stacks\":[]}\n"
    }

    /// The crashsym JSON report of the core at `path` (docs/crash-report.md): its threads walked,
    /// resolved by `symbolicator`, with what its file name says of the crash; a core that cannot be
    /// read (cut, damaged, hostile) gives the crash's record with the reader's error instead.
    static func reportJSON(ofCore path: String, symbolicator: Symbolicator) -> [UInt8] {
        let name = Name(fileName: String(path.split(separator: "/").last ?? ""))
        do throws(FormatError) {
            let file = try MappedFile(path: path)
            var report = try withExtendedLifetime(file) { () throws(FormatError) -> CrashReport in
                try symbolicator.report(core: try CoreFile(file: file), path: path)
            }
            if let name {
                // %P: the pid in the initial namespace (the core's own is the process's namespace's).
                report.metadata.append(ReportMetadata("global_pid", "\(name.crash.pid)"))
                report.metadata.append(ReportMetadata("time", "\(name.crash.time)"))
                if report.metadata("process") == nil { report.metadata.append(ReportMetadata("process", name.crash.executable)) }
                if name.truncated { report.metadata.append(ReportMetadata("core_truncated", "true")) }
                if report.signal == nil {
                    report.signal = CoreFile.SignalInfo(number: name.crash.signal, code: 0, errno: 0, address: nil).name
                }
            }
            var bytes: [UInt8] = []
            ReportWriter.writeJSON(symbolicator.symbolicate(report), into: &bytes)
            return bytes
        } catch {
            let crash = name?.crash ?? CoreCapture.Crash(pid: 0, tid: nil, signal: 0, time: 0, executable: "unknown")
            return Array(recordJSON(crash: crash, truncated: name?.truncated ?? false, problem: "the core could not be read: \(error)").utf8)
        }
    }
}
