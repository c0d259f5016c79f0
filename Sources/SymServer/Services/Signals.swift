import Synchronization

/// Wakes the crash workers when a job is queued (a periodic ring covers expired leases).
final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var closed = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    /// Wakes every waiting worker, or the next one to wait.
    func ring() {
        let waiters = state.withLock { state in
            let waiters = state.waiters
            state.waiters = []
            if waiters.isEmpty { state.rung = true }
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns at the next ring (at once if one came since the last wait) or when the task is
    /// cancelled (after which every wait returns at once).
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state in
                    if state.rung || state.closed {
                        state.rung = false
                        return true
                    }
                    state.waiters.append(continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiters = state.withLock { state in
                state.closed = true
                let waiters = state.waiters
                state.waiters = []
                return waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }
}

/// Lets requests wait (`?wait=`) for a crash's processing to finish.
final class CompletionBoard: Sendable {
    private struct State {
        var next = 0
        /// Tickets issued per crash id and not yet finished.
        var issued: [String: Set<Int>] = [:]
        /// Waiting requests by ticket.
        var parked: [Int: CheckedContinuation<Void, Never>] = [:]
        /// Tickets whose crash finished (or whose wait ended) before they parked.
        var released: Set<Int> = []
    }
    private let state = Mutex(State())

    /// A ticket for crash `id`: take it before checking the crash's state, so that a finish in
    /// between is not missed.
    func ticket(for id: String) -> Int {
        state.withLock { state in
            state.next += 1
            state.issued[id, default: []].insert(state.next)
            return state.next
        }
    }

    /// Crash `id` is processed: every waiter returns.
    func finished(_ id: String) {
        let waiters = state.withLock { state in
            var waiters: [CheckedContinuation<Void, Never>] = []
            for ticket in state.issued.removeValue(forKey: id) ?? [] {
                if let waiter = state.parked.removeValue(forKey: ticket) { waiters.append(waiter) } else { state.released.insert(ticket) }
            }
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Waits until crash `id` is finished or `timeout` passes.
    func wait(for id: String, ticket: Int, timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.park(ticket) }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
        state.withLock { state in
            state.issued[id]?.remove(ticket)
            if state.issued[id]?.isEmpty == true { state.issued[id] = nil }
            state.released.remove(ticket)
        }
    }

    private func park(_ ticket: Int) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state in
                    if state.released.contains(ticket) { return true }
                    state.parked[ticket] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                let waiter = state.parked.removeValue(forKey: ticket)
                if waiter == nil { state.released.insert(ticket) }
                return waiter
            }
            waiter?.resume()
        }
    }
}

/// Crashes accepted per app and minute: a token bucket per app, refilled continuously. A request
/// takes its token before its body is read (a refused request is not read further) and gives it
/// back when it stores no crash.
final class CrashRateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }
    private let buckets = Mutex<[String: Bucket]>([:])
    let perMinute: Int

    init(perMinute: Int) {
        self.perMinute = perMinute
    }

    /// Takes a token for `appID`; when none is left, the seconds until one is.
    func take(_ appID: String, now: ContinuousClock.Instant = .now) -> Int? {
        guard perMinute > 0 else { return nil }
        let rate = Double(perMinute) / 60
        return buckets.withLock { buckets in
            var bucket = buckets[appID] ?? Bucket(tokens: Double(perMinute), updated: now)
            let elapsed = now - bucket.updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
            bucket.tokens = min(Double(perMinute), bucket.tokens + seconds * rate)
            bucket.updated = now
            defer { buckets[appID] = bucket }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up)))
        }
    }

    /// Gives back the token a request took that stored no crash (refused, or answered as a
    /// replay of an earlier one): the limit counts crashes kept, not attempts.
    func giveBack(_ appID: String) {
        guard perMinute > 0 else { return }
        buckets.withLock { buckets in
            guard var bucket = buckets[appID] else { return }
            bucket.tokens = min(Double(perMinute), bucket.tokens + 1)
            buckets[appID] = bucket
        }
    }
}
