import Synchronization

/// The table (or its absence) of each build-id an app's reports (or lookups) named, remembered
/// for a short time (`lifetime`, one second) so that `POST …/symbolicate` and `GET …/symbolicate`
/// do not read the metadata store for the same modules on every request: on PostgreSQL that is a
/// round trip per request.
///
/// Forgotten for an app as soon as this node stores symbols for it (`forget`, called before the
/// upload is answered); an upload through another node of a shared store is seen after at most
/// `lifetime`. A read that started before a `forget` is not remembered. Only build-ids: modules
/// reported without one are matched by name under a version and read each time. Crash
/// processing does not use it: the re-symbolication a late upload queues must see the upload.
final class ReportTablesCache: Sendable {
    private struct Entry {
        /// The table object, nil when the app has no table of the build-id.
        var sha256: String?
        var expires: ContinuousClock.Instant
    }

    private struct State {
        var apps: [String: [String: Entry]] = [:]
        var count = 0
        /// Bumped by every `forget`: a read begun under an older one is not remembered.
        var generation = 0
    }

    /// How long an answer of the store is used without reading it again.
    let lifetime: Duration
    /// The most build-ids remembered over all apps; everything is dropped when it is reached
    /// (requests naming random build-ids cannot grow it).
    static let capacity = 65_536
    private let state = Mutex(State())

    init(lifetime: Duration = .seconds(1)) {
        self.lifetime = lifetime
    }

    /// The build-ids remembered over all apps.
    var count: Int { state.withLock { $0.count } }

    /// The generation a read of the store starts under (see `remember`).
    var generation: Int { state.withLock { $0.generation } }

    /// The tables of `buildIDs` when every one is remembered and fresh, else nil.
    func tables(appID: String, buildIDs: Set<String>, now: ContinuousClock.Instant = .now) -> ReportTables? {
        state.withLock { state in
            guard let known = state.apps[appID] else { return nil }
            var found = ReportTables()
            for id in buildIDs {
                guard let entry = known[id], entry.expires > now else { return nil }
                if let sha256 = entry.sha256 { found.byBuildID[id] = sha256 }
            }
            return found
        }
    }

    /// Remembers what the store answered for `buildIDs` (read under `generation`).
    func remember(appID: String, buildIDs: Set<String>, found: ReportTables, generation: Int,
                  now: ContinuousClock.Instant = .now) {
        let expires = now + lifetime
        state.withLock { state in
            guard state.generation == generation else { return }
            if state.count + buildIDs.count > Self.capacity {
                state.apps.removeAll()
                state.count = 0
            }
            var known = state.apps.removeValue(forKey: appID) ?? [:]
            for id in buildIDs {
                if known.updateValue(Entry(sha256: found.byBuildID[id], expires: expires), forKey: id) == nil { state.count += 1 }
            }
            state.apps[appID] = known
        }
    }

    /// Forgets everything remembered for `appID` (its symbols changed).
    func forget(appID: String) {
        state.withLock { state in
            state.generation += 1
            state.count -= state.apps.removeValue(forKey: appID)?.count ?? 0
        }
    }
}
