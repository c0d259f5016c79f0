import SymBytes
#if canImport(Glibc)
import Glibc
#endif

/// `crashsym agent capture`: the kernel's `core_pattern` pipe helper (core(5), "Piping core
/// dumps to a program"). The kernel runs it as root with the core on standard input and the
/// `%P %i %s %t %e` specifiers as arguments, while the crashed process waits in its exit; it must
/// be short and must not lose the crash.
///
/// The core is streamed (`bufferBytes` at a time, whatever its size) into the agent's core spool
/// (`STATE/cores`) under a hidden name, flushed and renamed into place (`FileIO.moveDurably`): the
/// agent sees a core only once it is whole. Past `maximumBytes` the rest is not read and the core
/// kept is marked truncated (its notes, which come first, still give every thread's registers).
/// Over `perMinute` captures in a minute, or when the core cannot be written (a full disk), the
/// core is not kept but the crash still is: a small crashsym JSON report with its process, signal
/// and why the core was dropped. The agent walks each core (`CoreSpool`) and sends its report.
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
        /// Bytes of a core kept at most; the rest is not read.
        public var maximumBytes: UInt64
        /// Cores kept per minute at most (all programs together); over it, only the crash's record.
        public var perMinute: Int

        /// Limits.
        public init(maximumBytes: UInt64 = 1 << 30, perMinute: Int = 10) {
            self.maximumBytes = maximumBytes
            self.perMinute = perMinute
        }
    }

    /// What one capture did.
    public enum Outcome: Sendable, Equatable {
        /// The core is in the spool at `path` (`bytes` long, cut at the limit when `truncated`).
        case kept(path: String, bytes: UInt64, truncated: Bool)
        /// The core was not kept; the crash's record is at `path`.
        case dropped(path: String, reason: String)
    }

    /// Bytes read from standard input at a time: the helper's memory whatever the core's size.
    static let bufferBytes = 1 << 18

    /// Reads the core from `input` into `directory` (the agent's core spool, created when missing).
    /// Fails only when not even the crash's record could be written.
    public static func capture(_ crash: Crash, from input: Int32, into directory: String, limits: Limits) throws(AgentError) -> Outcome {
        // The state directory too, when the agent has not run yet (its own mode: 0700).
        for path in [FileIO.directory(of: directory), directory] where mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw AgentError("\(path): cannot create the core spool: \(String(cString: strerror(errno)))")
        }
        let name = CoreSpool.Name(crash: crash, truncated: false)
        if let reason = overRate(directory: directory, limit: limits.perMinute, now: crash.time) {
            return try drop(crash, reason: reason, into: directory)
        }
        let scratch = "\(directory)/.\(name.fileName).partial"
        let descriptor = open(scratch, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            return try drop(crash, reason: "the core could not be created: \(String(cString: strerror(errno)))", into: directory)
        }
        var written: UInt64 = 0
        var truncated = false
        var failure: Int32 = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferBytes, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = read(input, buffer.baseAddress, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                failure = errno
                break
            }
            if count == 0 { break }
            let keep = Int(min(UInt64(count), limits.maximumBytes - written))
            failure = FileIO.writeAll(descriptor, UnsafeRawBufferPointer(rebasing: buffer[0..<keep]))
            if failure != 0 { break }
            written += UInt64(keep)
            if keep < count || written == limits.maximumBytes {
                // At the limit: whatever follows is not read (the kernel stops at the closed pipe).
                var probe: UInt8 = 0
                truncated = keep < count || read(input, &probe, 1) > 0
                break
            }
        }
        close(descriptor)
        if failure != 0 {
            unlink(scratch)
            return try drop(crash, reason: "the core could not be written: \(String(cString: strerror(failure)))", into: directory)
        }
        let final = "\(directory)/\(CoreSpool.Name(crash: crash, truncated: truncated).fileName)"
        if let failed = FileIO.moveDurably(scratch, to: final), failed.step != .syncDirectory {
            unlink(scratch)
            return try drop(crash, reason: "the core could not be kept: \(String(cString: strerror(failed.code)))", into: directory)
        }
        return .kept(path: final, bytes: written, truncated: truncated)
    }

    /// Writes the record of a crash whose core is not kept: a crashsym JSON report without stacks,
    /// which the agent sends like any other (docs/agent.md, "Core dumps").
    static func drop(_ crash: Crash, reason: String, into directory: String) throws(AgentError) -> Outcome {
        let name = "dropped-" + CoreSpool.Name(crash: crash, truncated: false).stem + ".json"
        let path = "\(directory)/\(name)"
        let bytes = Array(CoreSpool.recordJSON(crash: crash, truncated: false, problem: "core not kept: \(reason)").utf8)
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
        var bytes = [UInt8](repeating: 0, count: 64)
        let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        let fields = String(decoding: bytes.prefix(max(0, count)), as: UTF8.self).split(separator: " ")
        var start = fields.count == 2 ? Int64(fields[0]) ?? now : now
        var kept = fields.count == 2 ? Int(fields[1].filter { $0 != "\n" }) ?? 0 : 0
        if now - start >= 60 || now < start {
            start = now
            kept = 0
        }
        guard kept < limit else { return "over \(limit) cores in a minute (--max-captures-per-minute)" }
        let text = Array("\(start) \(kept + 1)\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = text.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        return nil
    }

    /// When running as root (the kernel's helper), takes the identity of the owner of the first
    /// of `directories` that exists (the core spool, else the state directory: the agent's user)
    /// before the core is written: the core is then the agent's to read and remove, and a hostile
    /// core is never handled with root's rights. Standard input stays readable.
    public static func dropPrivileges(toOwnerOf directories: [String]) throws(AgentError) {
        guard geteuid() == 0 else { return }
        var info = stat()
        guard let directory = directories.first(where: { stat($0, &info) == 0 }), info.st_uid != 0 else { return }
        guard setgroups(0, nil) == 0, setgid(info.st_gid) == 0, setuid(info.st_uid) == 0 else {
            throw AgentError("capture: cannot take the identity of \(directory)'s owner (uid \(info.st_uid)): \(String(cString: strerror(errno)))")
        }
    }
}
