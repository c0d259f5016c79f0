import SymBytes
import SymReport
#if canImport(Glibc)
import Glibc
#endif

/// Whether a file in a spool is a complete crash report: the one rule, used by the watcher loop
/// and `--once` alike (docs/agent.md, "When a file is taken").
enum SpoolFile {
    /// What to do with a file now.
    enum Readiness: Equatable {
        /// Complete: move it into the queue.
        case take
        /// Not yet: look again at this instant (or at the next event).
        case waitUntil(ContinuousClock.Instant)
        /// Not a report to collect (a directory, a hidden or temporary name).
        case ignore
    }

    /// The bytes read from the start of a file for format detection.
    static let headBytes = 64 << 10
    /// The bytes read from its end for a sanitizer's `==PID==ABORTING` line.
    static let tailBytes = 4 << 10

    /// Decides for the file `name` in a spool whose format hint is `format`.
    /// - `closed`: its writer closed it (or it was renamed in whole), so its bytes are final
    ///   unless it is a sanitizer log still open by the sanitizer (which may write again).
    /// - Otherwise it must be unchanged for `settle`.
    /// A sanitizer log (`asan.<pid>`, or a file whose text a sanitizer wrote) is complete once it
    /// ends with `==PID==ABORTING`; without that line (LSan, UBSan with `halt_on_error=0`) only
    /// when the process named by its `.<pid>` suffix is gone and it has settled.
    static func readiness(directory: String, name: String, format: ReportFormat?, closed: Bool, settle: Duration,
                          now: ContinuousClock.Instant) -> Readiness {
        guard !name.hasPrefix("."), !name.hasSuffix(".tmp"), !name.hasSuffix(".part"), !name.hasSuffix("~") else { return .ignore }
        let path = directory + "/" + name
        var status = stat()
        guard lstat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return .ignore }
        var realNow = timespec()
        clock_gettime(CLOCK_REALTIME, &realNow)
        let age = Duration.seconds(realNow.tv_sec - status.st_mtim.tv_sec)
            + .nanoseconds(realNow.tv_nsec - status.st_mtim.tv_nsec)
        let settledAt = now + max(.zero, settle - age)
        // An empty file: its writer may still fill it (a write event brings it back); once settled,
        // it is left alone rather than looked at forever.
        guard status.st_size > 0 else { return closed || age >= settle ? .ignore : .waitUntil(settledAt) }
        if !closed && age < settle { return .waitUntil(settledAt) }

        let pid = processID(inName: name)
        let (head, tail) = read(path, size: Int(status.st_size))
        let sanitizer = format == .sanitizer || (pid != nil && isSanitizerLogName(name))
            || ReportFormat.detect(String(decoding: head, as: UTF8.self)) == .sanitizer
        guard sanitizer else { return .take }
        if endsAborting(tail) { return .take }
        if let pid, kill(pid, 0) == 0 || errno == EPERM {
            // The sanitizer is still running and may write the rest: look again later.
            return .waitUntil(now + max(settle, .seconds(1)))
        }
        return age >= settle ? .take : .waitUntil(settledAt)
    }

    /// The `<pid>` of a sanitizer's `log_path` file name `PREFIX.<pid>`.
    static func processID(inName name: String) -> pid_t? {
        guard let dot = name.lastIndex(of: "."), let value = Int32(name[name.index(after: dot)...]), value > 0 else { return nil }
        return value
    }

    /// `asan.123`, `ubsan.123`, `lsan.123`, `tsan.123`, `msan.123`: the names the sanitizers'
    /// `log_path=DIR/PREFIX` produce with the conventional prefixes.
    static func isSanitizerLogName(_ name: String) -> Bool {
        guard let dot = name.lastIndex(of: ".") else { return false }
        return ["asan", "ubsan", "lsan", "tsan", "msan", "hwasan"].contains(String(name[..<dot]))
    }

    /// Whether the last lines hold `==PID==ABORTING` (the sanitizer's last words before abort).
    static func endsAborting(_ tail: [UInt8]) -> Bool {
        let text = String(decoding: tail, as: UTF8.self)
        for line in text.split(separator: "\n").suffix(4) {
            let trimmed = line.utf8.last == 0x0d ? line.dropLast() : line
            guard trimmed.hasPrefix("=="), trimmed.hasSuffix("==ABORTING") else { continue }
            let middle = trimmed.dropFirst(2).dropLast(10)
            if !middle.isEmpty, middle.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) { return true }
        }
        return false
    }

    /// The first `headBytes` and last `tailBytes` of a file (fewer when it is shorter).
    static func read(_ path: String, size: Int) -> (head: [UInt8], tail: [UInt8]) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return ([], []) }
        defer { close(descriptor) }
        func bytes(at offset: Int, count: Int) -> [UInt8] {
            (try? FileIO.readAll(descriptor, count: count, at: UInt64(offset))) ?? []
        }
        let head = bytes(at: 0, count: min(size, headBytes))
        let tailCount = min(size, tailBytes)
        return (head, bytes(at: size - tailCount, count: tailCount))
    }
}
