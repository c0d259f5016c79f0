import SymBytes
import SymCore
#if canImport(Glibc)
import Glibc
#endif

/// `crashsym agent capture`: the kernel's `core_pattern` pipe helper (core(5), "Piping core
/// dumps to a program"). The kernel runs it as root with the core on standard input and the
/// `%P %i %s %t %e` specifiers as arguments, while the crashed process waits in its exit; it must
/// be short and must not lose the crash.
///
/// The core itself is never stored: it is read once from the pipe (`StreamedCore`: the notes,
/// then only each thread's stack, the mapped files' first pages and the vDSO are kept while the
/// rest streams by, within `Limits.core` whatever the core's size), every thread is walked with
/// the unwind tables of the mapped files on this host (`Symbolicator.report(core:path:)`, the walk
/// of `crashsym symbolicate CORE`; tables converted once into the agent's symbol cache) and a
/// compact crashsym JSON report is written durably into the agent's core spool, with the
/// process's command line and allowed environment (`CrashedProcess`, read from `/proc/PID`
/// before privileges are dropped). Over `perMinute` captures in a minute only a record of the
/// crash is written (no walk).
public enum CoreCapture {
    /// The `core_pattern` specifiers, as the kernel expands them.
    public struct Crash: Sendable, Equatable {
        /// `%P`: the process id in the initial PID namespace.
        public var pid: Int32
        /// `%i`: the id of the thread that took the signal (nil when not given).
        public var tid: Int32?
        /// `%s`: the signal number.
        public var signal: Int32
        /// `%t`: the time of the dump, seconds since 1970.
        public var time: Int64
        /// `%e`: the executable's name (`comm`, at most 15 bytes; may hold spaces).
        public var executable: String

        /// A crash.
        public init(pid: Int32, tid: Int32?, signal: Int32, time: Int64, executable: String) {
            self.pid = pid
            self.tid = tid
            self.signal = signal
            self.time = time
            self.executable = executable
        }

        /// The crash of the specifiers `%P %i %s %t %e…` (the name may have been split at its
        /// spaces: the rest of the arguments are joined back); nil with a message when they do not read.
        public static func parse(_ arguments: [String]) -> Result<Crash, AgentError> {
            guard arguments.count >= 4 else {
                return .failure(AgentError("capture expects the core_pattern specifiers %P %i %s %t %e, got \(arguments.count) arguments"))
            }
            guard let pid = Int32(arguments[0]), pid > 0 else { return .failure(AgentError("capture: '\(arguments[0])' is not a process id (%P)")) }
            guard let signal = Int32(arguments[2]), signal > 0, signal < 128 else {
                return .failure(AgentError("capture: '\(arguments[2])' is not a signal number (%s)"))
            }
            guard let time = Int64(arguments[3]), time >= 0 else { return .failure(AgentError("capture: '\(arguments[3])' is not a time (%t)")) }
            let tid = Int32(arguments[1]).flatMap { $0 > 0 ? $0 : nil }
            let name = arguments.dropFirst(4).joined(separator: " ")
            return .success(Crash(pid: pid, tid: tid, signal: signal, time: time, executable: name.isEmpty ? "unknown" : name))
        }
    }

    /// Bounds of one capture.
    public struct Limits: Sendable, Equatable {
        /// Memory of the core kept at most (notes, stacks, first pages).
        public var core: StreamedCore.Limits
        /// Cores walked per minute at most (all programs together); over it, only the crash's record.
        public var perMinute: Int

        /// Limits.
        public init(core: StreamedCore.Limits = StreamedCore.Limits(), perMinute: Int = 10) {
            self.core = core
            self.perMinute = perMinute
        }

        /// Limits of `memoryBytes` kept, `stackBytes` per stack and `perMinute` walks.
        public init(memoryBytes: Int, stackBytes: Int, perMinute: Int) {
            self.init(core: StreamedCore.Limits(memoryBytes: memoryBytes, stackBytes: stackBytes), perMinute: perMinute)
        }
    }

    /// What one capture did.
    public enum Outcome: Sendable, Equatable {
        /// The core's report is in the spool at `path` (`bytes` long).
        case reported(path: String, bytes: Int)
        /// The core was not walked; the crash's record is at `path`.
        case dropped(path: String, reason: String)
    }

    /// Reads the core from `input` and writes its report into `directory` (the agent's core
    /// spool, created when missing), the frames walked and resolved by `symbolication`. Fails only
    /// when not even the crash's record could be written.
    public static func capture(_ crash: Crash, from input: Int32, into directory: String, limits: Limits,
                               process: CrashedProcess?, symbolication: LocalSymbolication) throws(AgentError) -> Outcome {
        // The state directory too, when the agent has not run yet (its own mode: 0700).
        for path in [FileIO.directory(of: directory), directory] where mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw AgentError("\(path): cannot create the core spool: \(String(cString: strerror(errno)))")
        }
        if let reason = overRate(directory: directory, limit: limits.perMinute, now: crash.time) {
            return try drop(crash, reason: reason, into: directory, process: process)
        }
        // Reading stops once everything wanted is kept: the kernel ends the dump at the closed pipe.
        let json = CoreSpool.reportJSON(stream: CoreStreamSource.reader(input), crash: crash, input: .corePattern, process: process,
                                        limits: limits.core, readToEnd: false, symbolicator: symbolication.symbolicator)
        let name = "core-" + CoreSpool.Name(crash: crash, truncated: false).stem + ".json"
        let path = "\(directory)/\(name)"
        if let failed = FileIO.writeDurably(json, to: path, scratch: "\(directory)/.\(name).partial", exclusive: false, permissions: 0o600),
           failed.step != .syncDirectory {
            return try drop(crash, reason: "the report could not be written: \(String(cString: strerror(failed.code)))", into: directory,
                            process: process)
        }
        return .reported(path: path, bytes: json.count)
    }

    /// Writes the record of a crash whose core is not kept: a crashsym JSON report without stacks,
    /// which the agent sends like any other (docs/agent.md, "Core dumps").
    static func drop(_ crash: Crash, reason: String, into directory: String, process: CrashedProcess?) throws(AgentError) -> Outcome {
        let name = "dropped-" + CoreSpool.Name(crash: crash, truncated: false).stem + ".json"
        let path = "\(directory)/\(name)"
        let bytes = CoreSpool.recordJSON(crash: crash, truncated: false, problem: "core not kept: \(reason)",
                                         extra: process?.metadata ?? [])
        if let failed = FileIO.writeDurably(bytes, to: path, scratch: "\(directory)/.\(name).partial", exclusive: false, permissions: 0o600),
           failed.step != .syncDirectory {
            throw AgentError("\(path): cannot record the crash of pid \(crash.pid) (\(reason)): \(String(cString: strerror(failed.code)))")
        }
        return .dropped(path: path, reason: reason)
    }

    /// Why a capture at `now` is over the rate (nil: it may keep its core). The count lives in
    /// `DIRECTORY/.capture-rate` (`START COUNT`), under an exclusive lock: helpers of crashes at the
    /// same moment count each other.
    static func overRate(directory: String, limit: Int, now: Int64) -> String? {
        guard limit > 0 else { return nil }
        let path = "\(directory)/.capture-rate"
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return nil }  // no count kept: the core is worth more than the limit
        defer { close(descriptor) }
        while flock(descriptor, LOCK_EX) != 0 && errno == EINTR {}
        let bytes = (try? FileIO.readAll(descriptor, count: 64, at: 0)) ?? []
        let fields = String(decoding: bytes, as: UTF8.self).split(separator: " ")
        var start = fields.count == 2 ? Int64(fields[0]) ?? now : now
        var kept = fields.count == 2 ? Int(fields[1].filter { $0 != "\n" }) ?? 0 : 0
        if now - start >= 60 || now < start {
            start = now
            kept = 0
        }
        guard kept < limit else { return "over \(limit) cores in a minute (--max-captures-per-minute)" }
        let text = Array("\(start) \(kept + 1)\n".utf8)
        _ = ftruncate(descriptor, 0)
        // A count that cannot be written is lost: the next capture starts a minute (the core is
        // worth more than the limit).
        _ = text.withUnsafeBytes { FileIO.writeAll(descriptor, $0, at: 0) }
        return nil
    }

    /// When running as root (the kernel's helper), takes the identity of the owner of the first
    /// of `directories` that exists (the core spool, else the state directory: the agent's user)
    /// once `/proc/PID` is read and before the core's first byte is: the core is parsed, walked
    /// and its report written with the agent's rights only (the report and the converted tables
    /// are the agent's to read and remove; a hostile core never meets root). Standard input
    /// stays readable.
    public static func dropPrivileges(toOwnerOf directories: [String]) throws(AgentError) {
        guard geteuid() == 0 else { return }
        var info = stat()
        guard let directory = directories.first(where: { stat($0, &info) == 0 }), info.st_uid != 0 else { return }
        guard setgroups(0, nil) == 0, setgid(info.st_gid) == 0, setuid(info.st_uid) == 0 else {
            throw AgentError("capture: cannot take the identity of \(directory)'s owner (uid \(info.st_uid)): \(String(cString: strerror(errno)))")
        }
    }
}
