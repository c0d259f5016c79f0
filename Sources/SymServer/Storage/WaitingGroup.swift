import Synchronization

/// Work waiting to be done together (group commit): callers add their element; the first caller
/// finding no loop running starts one, which takes every waiting element (at most `limit`) each
/// round until none waits. The one queue of the crash store's ingestion commits and the directory
/// object store's syncs.
final class WaitingGroup<Element: Sendable>: Sendable {
    private let state = Mutex<(waiting: [Element], running: Bool)>(([], false))
    private let limit: Int

    init(limit: Int = 256) { self.limit = limit }

    /// Adds an element; true when the caller must start the loop.
    func add(_ element: Element) -> Bool {
        state.withLock { state in
            state.waiting.append(element)
            if state.running { return false }
            state.running = true
            return true
        }
    }

    /// Every waiting element (at most `limit`), or nil, the loop ending, when none waits.
    func next() -> [Element]? {
        state.withLock { state in
            guard !state.waiting.isEmpty else {
                state.running = false
                return nil
            }
            let group = Array(state.waiting.prefix(limit))
            state.waiting.removeFirst(group.count)
            return group
        }
    }
}
