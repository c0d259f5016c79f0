import Synchronization

/// The daily counts behind an app's chart, kept for a minute.
///
/// Counting 30 days of crashes per version reads every crash of those days (100,000 rows for a
/// busy app: most of a groups page's time); the chart does not need to be fresher than a minute.
/// One per process (the console has no other state); entries expire, and the whole table is
/// dropped past `capacity` apps.
final class ConsoleChartCache: Sendable {
    static let shared = ConsoleChartCache()

    typealias Counts = [(day: Int64, version: String, count: Int)]

    private struct Entry {
        var expires: Int64
        var firstDay: Int64
        var counts: Counts
    }

    private let entries = Mutex<[String: Entry]>([:])
    let lifetimeMilliseconds: Int64 = 60_000
    let capacity = 1000

    /// The cached counts of `appID` from `firstDay`, or those `compute` returns (then cached).
    func counts(appID: String, firstDay: Int64, now: Int64, compute: () async throws -> Counts) async rethrows -> Counts {
        if let entry = entries.withLock({ $0[appID] }), entry.expires > now, entry.firstDay == firstDay {
            return entry.counts
        }
        let counts = try await compute()
        entries.withLock { table in
            if table.count >= capacity { table.removeAll() }
            table[appID] = Entry(expires: now + lifetimeMilliseconds, firstDay: firstDay, counts: counts)
        }
        return counts
    }
}
