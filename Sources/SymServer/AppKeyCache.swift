import Synchronization



/// The stored key hash of each app, remembered for a short time (`lifetime`, one second) so that
/// checking the key of a request does not read the metadata store every time: the hot path of
/// `POST …/symbolicate` spent its largest hop there.
///
/// The cost is a lag: a key replaced by `crashsym apps rotate-key` (another process, writing the
/// store) goes on working for at most `lifetime` (docs/http-api.md "Authentication"). Keys are
/// still compared in constant time on every request (`AppKey.matches`); only the stored hash is
/// remembered, also for apps that do not exist, and the whole memory is dropped when it holds
/// `capacity` apps (so that requests naming random apps cannot grow it).
final class AppKeyCache: Sendable {
    private struct Entry {
        var hash: [UInt8]?
        var expires: ContinuousClock.Instant
    }

    /// How long a stored hash is used without reading the store again.
    let lifetime: Duration
    /// The most apps remembered.
    static let capacity = 4096
    private let entries = Mutex<[String: Entry]>([:])

    init(lifetime: Duration = .seconds(1)) {
        self.lifetime = lifetime
    }

    /// The stored key hash of `appID` (nil: no such app), read through `read` when not
    /// remembered or older than `lifetime`.
    func hash(appID: String, read: () async throws -> [UInt8]?) async throws -> [UInt8]? {
        let now = ContinuousClock.now
        if let entry = entries.withLock({ $0[appID] }), entry.expires > now { return entry.hash }
        let hash = try await read()
        let expires = now + lifetime
        entries.withLock { entries in
            if entries.count >= Self.capacity && entries[appID] == nil { entries.removeAll(keepingCapacity: true) }
            entries[appID] = Entry(hash: hash, expires: expires)
        }
        return hash
    }
}
