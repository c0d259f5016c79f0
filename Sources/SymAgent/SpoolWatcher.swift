#if canImport(Glibc)
import Glibc
#endif

/// Wakes a blocked `SpoolWatcher.wait` from another thread (SIGTERM's graceful shutdown): a pipe
/// whose read end the watcher polls beside its inotify descriptor.
public struct Waker: Sendable {
    let readEnd: Int32
    let writeEnd: Int32

    /// A new pipe.
    public init() throws(AgentError) {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else {
            throw AgentError("cannot create a pipe: \(String(cString: strerror(errno)))")
        }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    /// Asks the watcher to stop (safe from any thread, any number of times).
    public func wake() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Empties the pipe (after its wake-ups were seen).
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 512)
        while buffer.withUnsafeMutableBytes({ read(readEnd, $0.baseAddress, $0.count) }) > 0 {}
    }

    /// The descriptor poll(2) watches for wake-ups.
    var descriptor: Int32 { readEnd }

    /// Blocks until `wake` is called or `timeout` passes.
    func wait(timeout: Duration) {
        var entry = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
        _ = poll(&entry, 1, Int32(clamping: timeout.curlMillisecondsRoundedUp))
    }
}

/// Notices files appearing in the spool directories: with inotify (a file closed after writing,
/// or renamed in), or, with `poll`, by listing them at every timeout. It only names candidates;
/// whether a file is complete is `SpoolFile.readiness`'s decision.
final class SpoolWatcher {
    /// A file that may be ready.
    struct Candidate: Hashable {
        var spool: Int
        var name: String
        /// Its writer closed it (IN_CLOSE_WRITE) or it was renamed in whole (IN_MOVED_TO).
        var closed: Bool
    }

    private let spools: [String]
    private let waker: Waker
    private let inotify: Int32
    private var watches: [Int32: Int] = [:]
    /// Whether the kernel dropped events (queue overflow): the caller must list the spools again.
    private(set) var overflowed = false

    /// Watches `spools` with inotify unless `poll` is set; fails when a spool is not a readable
    /// directory or inotify refuses (then `--poll` is the way).
    init(spools: [String], poll: Bool, waker: Waker) throws(AgentError) {
        self.spools = spools
        self.waker = waker
        for path in spools {
            var status = stat()
            guard stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else {
                throw AgentError("spool \(path) is not a directory (create it, or fix --spool)")
            }
            guard access(path, R_OK | W_OK | X_OK) == 0 else {
                throw AgentError("spool \(path): the agent needs read and write access to take files out of it")
            }
        }
        guard !poll else {
            inotify = -1
            return
        }
        inotify = inotify_init1(Int32(IN_CLOEXEC) | Int32(IN_NONBLOCK))
        guard inotify >= 0 else {
            throw AgentError("inotify is not available (\(String(cString: strerror(errno)))): run with --poll")
        }
        for (index, path) in spools.enumerated() {
            let watch = inotify_add_watch(inotify, path, UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_ONLYDIR))
            guard watch >= 0 else {
                let reason = String(cString: strerror(errno))
                close(inotify)
                throw AgentError("cannot watch spool \(path) with inotify (\(reason)): run with --poll")
            }
            watches[watch] = index
        }
    }

    deinit {
        if inotify >= 0 { close(inotify) }
    }

    /// Every file now in the spools (at start, after an overflow, and at each poll), oldest
    /// modification first, so the queue keeps the order in which crashes happened.
    func list() -> [Candidate] {
        overflowed = false
        var found: [(Candidate, Int, Int)] = []
        for (index, path) in spools.enumerated() {
            for name in ReportQueue.names(in: path) {
                var status = stat()
                guard stat(path + "/" + name, &status) == 0 else { continue }
                found.append((Candidate(spool: index, name: name, closed: false), status.st_mtim.tv_sec, status.st_mtim.tv_nsec))
            }
        }
        return found.sorted { ($0.1, $0.2) < ($1.1, $1.2) }.map(\.0)
    }

    /// Waits until a file is complete in a spool, `timeout` passes (nil: forever), `also` is
    /// readable (a sender's result), or the waker is woken (`stopped`). In poll mode, a timeout
    /// returns every file listed.
    func wait(timeout: Duration?, also: Int32? = nil) -> (candidates: [Candidate], stopped: Bool) {
        var entries = [pollfd(fd: waker.readEnd, events: Int16(POLLIN), revents: 0)]
        if inotify >= 0 { entries.append(pollfd(fd: inotify, events: Int16(POLLIN), revents: 0)) }
        if let also { entries.append(pollfd(fd: also, events: Int16(POLLIN), revents: 0)) }
        let milliseconds = timeout.map { $0 <= .zero ? 0 : Int32(clamping: $0.curlMillisecondsRoundedUp) } ?? -1
        let ready = poll(&entries, nfds_t(entries.count), milliseconds)
        if ready < 0 { return ([], false) }  // EINTR: the caller loops
        if entries[0].revents != 0 { return ([], true) }
        if inotify < 0 { return (ready == 0 ? list() : [], false) }
        guard entries[1].revents != 0 else { return ([], false) }
        return (readEvents(), false)
    }

    /// Drains the inotify descriptor.
    private func readEvents() -> [Candidate] {
        var found: [Candidate] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            var offset = 0
            // struct inotify_event: int wd, uint32 mask, uint32 cookie, uint32 len, char name[len].
            while offset + 16 <= count {
                let (watch, mask, length) = buffer.withUnsafeBytes { raw in
                    (raw.loadUnaligned(fromByteOffset: offset, as: Int32.self),
                     raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self),
                     Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self)))
                }
                guard length <= count - offset - 16 else { break }
                let nameBytes = buffer[(offset + 16)..<(offset + 16 + length)].prefix { $0 != 0 }
                offset += 16 + length
                if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    overflowed = true
                    continue
                }
                guard let spool = watches[watch], !nameBytes.isEmpty,
                      mask & (UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO)) != 0 else { continue }
                found.append(Candidate(spool: spool, name: String(decoding: nameBytes, as: UTF8.self), closed: true))
            }
        }
        return found
    }
}

extension Duration {
    /// Whole milliseconds, rounded up (a wait never ends before its deadline).
    var curlMillisecondsRoundedUp: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    }
}
