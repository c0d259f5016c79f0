import Synchronization

/// Counts what is in progress (uploads, or bytes of bodies held in memory) and refuses what
/// would pass the limit, rather than queueing it.
final class UploadLimiter: Sendable {
    private let state: Mutex<Int>
    let limit: Int

    init(limit: Int) {
        self.limit = limit
        state = Mutex(0)
    }

    /// Takes `amount` (one slot, or that many bytes); false, taking nothing, when it would pass the limit.
    func acquire(_ amount: Int = 1) -> Bool {
        state.withLock { count in
            guard amount <= limit - count else { return false }
            count += amount
            return true
        }
    }

    /// Gives back what `acquire` took.
    func release(_ amount: Int = 1) {
        state.withLock { $0 -= amount }
    }
}

extension UploadLimiter {
    /// The bytes one request holds in memory, taken from a limiter of bytes as they arrive and
    /// given back together when the request is done (`release()`, in a `defer`). One per request,
    /// from one task.
    final class Charge {
        private let limiter: UploadLimiter
        /// What the refusal names as the limit (a flag).
        private let setting: String
        private(set) var bytes = 0

        init(_ limiter: UploadLimiter, setting: String) {
            self.limiter = limiter
            self.setting = setting
        }

        /// Takes `count` more bytes; 503 with Retry-After when the limiter has not that many left.
        func take(_ count: Int) throws {
            guard limiter.acquire(count) else {
                throw ServerError(.unavailable, "the server holds its limit of \(limiter.limit) bytes of uploads in memory (\(setting)); retry later",
                                  retryAfter: 2)
            }
            bytes += count
        }

        /// Gives back everything taken.
        func release() {
            limiter.release(bytes)
            bytes = 0
        }
    }
}
