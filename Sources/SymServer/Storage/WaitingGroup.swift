import Synchronization

/// Work waiting to be done together (group commit): callers add their element; the first caller
/// finding no loop running starts one, which takes every waiting element (at most `limit`) each
/// round until none waits. The one queue of the crash store's ingestion commits, the directory
/// object store's syncs and the crash service's packs (whose groups are also bounded in bytes).
final class WaitingGroup<Element: Sendable>: Sendable {
    private let state = Mutex<(waiting: [Element], running: Bool)>(([], false))
    private let limit: Int
    /// With `weight`: a group takes elements while their total weight stays within this (always
    /// at least one element).
    private let weightLimit: Int
    private let weight: (@Sendable (Element) -> Int)?

    init(limit: Int = 256, weightLimit: Int = .max, weight: (@Sendable (Element) -> Int)? = nil) {
        self.limit = limit
        self.weightLimit = weightLimit
        self.weight = weight
    }

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
            var count = min(limit, state.waiting.count)
            if let weight {
                var total = 0
                for (index, element) in state.waiting.prefix(count).enumerated() {
                    total += weight(element)
                    if total > weightLimit && index > 0 {
                        count = index
                        break
                    }
                }
            }
            let group = Array(state.waiting.prefix(count))
            state.waiting.removeFirst(count)
            return group
        }
    }
}
