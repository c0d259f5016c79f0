import FoundationEssentials
import SymReport
import Symbolication
#if canImport(Glibc)
import Glibc
#endif

/// Crash storms: one program crashing a thousand times a minute must drown neither the host's
/// disk nor the server. Reports are classed by their crash signature (the server's grouping rules,
/// `docs/grouping.md`, over the unsymbolicated frames: module and offset, so the same bug gives
/// the same class whatever the load addresses), and at most `limit` reports of a class are kept
/// in any minute; the others are deleted and counted per signature.
final class StormLimiter {
    private let limit: Int
    private let window: Duration
    /// Per signature: when its current minute began, and the reports kept in it.
    private var windows: [String: (start: ContinuousClock.Instant, kept: Int)] = [:]
    private let symbolicator = Symbolicator(providers: [], conversion: ConversionSettings(tableCache: nil))

    /// The largest file classed by its contents (larger ones are one class of their own format).
    static let maximumBytes = 16 << 20

    init(limit: Int, window: Duration = .seconds(60)) {
        self.limit = limit
        self.window = window
    }

    /// The signature of the report at `path` (`format` as the spool states it, else detected);
    /// a file that cannot be read as a report is classed as `unreadable`.
    func signature(ofFile path: String, format: ReportFormat?) -> String {
        var status = stat()
        guard stat(path, &status) == 0, status.st_size <= Self.maximumBytes else { return "unreadable: too large" }
        guard let bytes = FileManager.default.contents(atPath: path),
              let report = try? CrashReport.parse(String(decoding: bytes, as: UTF8.self), format: format) else {
            return "unreadable"
        }
        return CrashSignature.compute(for: symbolicator.symbolicate(report)).signature
    }

    /// Whether a report of `signature` seen at `now` is kept (false: the storm's share is spent).
    func admit(_ signature: String, now: ContinuousClock.Instant) -> Bool {
        if let current = windows[signature], current.start.duration(to: now) < window {
            guard current.kept < limit else { return false }
            windows[signature] = (current.start, current.kept + 1)
            return true
        }
        if windows.count >= 10_000 { windows = windows.filter { $0.value.start.duration(to: now) < window } }
        windows[signature] = (now, 1)
        return true
    }
}
