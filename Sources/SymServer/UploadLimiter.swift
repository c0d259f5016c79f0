import Synchronization

/// Counts uploads in progress and refuses those over the limit (429), rather than queueing them.
final class UploadLimiter: Sendable {
    private let state: Mutex<Int>
    let limit: Int

    init(limit: Int) {
        self.limit = limit
        state = Mutex(0)
    }

    /// Takes a slot; false when all are taken.
    func acquire() -> Bool {
        state.withLock { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    func release() {
        state.withLock { $0 -= 1 }
    }
}
