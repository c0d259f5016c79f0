import Synchronization

/// Wakes the webhook delivery service when the outbox may have grown (a processed crash), so a
/// notification leaves at once instead of at the next poll. One waiter at a time (the service's
/// loop); a signal with nobody waiting is kept for the next wait.
final class WebhookSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: (id: Int, continuation: CheckedContinuation<Void, Never>)?
        var next = 0
    }
    private let state = Mutex(State())

    /// Wakes the waiter, or the next wait.
    func signal() {
        let waiter = state.withLock { state in
            guard let waiter = state.waiter else {
                state.pending = true
                return nil as CheckedContinuation<Void, Never>?
            }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume()
    }

    /// Returns at a signal (at once if one came since the last wait), after `timeout`, or when
    /// the task is cancelled.
    func wait(upTo timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitForSignal() }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
    }

    private func waitForSignal() async {
        let id = state.withLock { state in
            state.next += 1
            return state.next
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state in
                    if state.pending || Task.isCancelled {
                        state.pending = false
                        return true
                    }
                    state.waiter = (id, continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                guard let waiter = state.waiter, waiter.id == id else { return nil as CheckedContinuation<Void, Never>? }
                state.waiter = nil
                return waiter.continuation
            }
            waiter?.resume()
        }
    }
}
