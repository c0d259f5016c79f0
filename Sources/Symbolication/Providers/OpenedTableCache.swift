import SymBytes
import Synchronization

/// Opened (memory-mapped) tables kept for reuse, bounded by their total size in bytes: the least
/// recently used are dropped first. A table is opened once however many threads ask for it at
/// the same time (the others wait for it); a failure to open is not kept (the next request tries
/// again). The crash server keeps one (`--table-cache-mb`) behind its store provider.
///
/// A dropped table stays valid for whoever still holds it: it is unmapped when the last holder
/// lets it go. The budget counts file sizes (the mapping's size, not its resident pages).
public final class OpenedTableCache: Sendable {
    /// The server's default budget (`--table-cache-mb 512`).
    public static let defaultBudget = 512 << 20

    /// The most bytes of tables kept (a single larger table is still kept, alone).
    public let budget: Int
    private let state: Mutex<State>

    /// A cache keeping at most `budget` bytes of tables.
    public init(budget: Int) {
        self.budget = max(0, budget)
        state = Mutex(State())
    }

    /// The table kept under `key`, else the one `open` opens (kept under `key`). Concurrent
    /// calls for one key call `open` once between them.
    public func table(for key: String, open: () throws(FormatError) -> ModuleSymbols) throws(FormatError) -> ModuleSymbols {
        let slot = state.withLock { state -> Slot in
            if let node = state.index[key] {
                state.touch(node)
                return state.nodes[node].slot
            }
            if let pending = state.pending[key] { return pending }
            let slot = Slot()
            state.pending[key] = slot
            return slot
        }
        let outcome: Result<ModuleSymbols, FormatError> = slot.value.withLock { value in
            if let value { return .success(value) }
            do throws(FormatError) {
                let table = try open()
                value = table
                return .success(table)
            } catch {
                return .failure(error)
            }
        }
        // Whoever opened moves the table from pending to kept (once); a failure forgets the slot.
        let evicted = state.withLock { state -> [ModuleSymbols] in
            // (A thread that opened after another's failure finds no slot pending: it keeps the
            // table unless someone kept one meanwhile.)
            guard state.pending[key] === slot || (state.pending[key] == nil && state.index[key] == nil) else { return [] }
            state.pending[key] = nil
            guard case .success(let table) = outcome else { return [] }
            return state.insert(key, slot: slot, size: table.table.byteCount, budget: budget)
        }
        // Unmapping happens outside the lock.
        withExtendedLifetime(evicted) {}
        return try outcome.get()
    }

    /// The `.csym` table at `path`, kept under its path (see `table(for:open:)`).
    public func table(at path: String) throws(FormatError) -> ModuleSymbols {
        try table(for: path) { () throws(FormatError) in try ModuleSymbols(tableAt: path) }
    }

    /// Forgets the table under `key` (its file was replaced or removed).
    public func remove(_ key: String) {
        let removed = state.withLock { $0.remove(key) }
        withExtendedLifetime(removed) {}
    }

    /// The number of tables kept.
    public var count: Int { state.withLock { $0.index.count } }

    /// The bytes of the tables kept.
    public var byteCount: Int { state.withLock { $0.bytes } }

    /// Whether a table is kept under `key` (does not count as a use).
    public func contains(_ key: String) -> Bool { state.withLock { $0.index[key] != nil } }

    final class Slot: Sendable {
        let value = Mutex<ModuleSymbols?>(nil)
    }

    struct Node {
        var key: String
        var slot: Slot
        var size: Int
        var previous = -1
        var next = -1
    }

    /// Kept tables in a doubly linked list by recency (head: most recent), nodes in an array
    /// reused through a free list: every operation is O(1).
    struct State {
        var nodes: [Node] = []
        var free: [Int] = []
        var index: [String: Int] = [:]
        var pending: [String: Slot] = [:]
        var head = -1
        var tail = -1
        var bytes = 0

        mutating func unlink(_ node: Int) {
            let (previous, next) = (nodes[node].previous, nodes[node].next)
            if previous >= 0 { nodes[previous].next = next } else { head = next }
            if next >= 0 { nodes[next].previous = previous } else { tail = previous }
            nodes[node].previous = -1
            nodes[node].next = -1
        }

        mutating func pushFront(_ node: Int) {
            nodes[node].next = head
            nodes[node].previous = -1
            if head >= 0 { nodes[head].previous = node }
            head = node
            if tail < 0 { tail = node }
        }

        mutating func touch(_ node: Int) {
            guard head != node else { return }
            unlink(node)
            pushFront(node)
        }

        /// Keeps `slot` under `key` as the most recent, and drops the least recent until the
        /// budget holds (never the one just kept); returns the dropped tables.
        mutating func insert(_ key: String, slot: Slot, size: Int, budget: Int) -> [ModuleSymbols] {
            var dropped = remove(key).map { [$0] } ?? []
            let node = Node(key: key, slot: slot, size: size)
            let position: Int
            if let reused = free.popLast() {
                nodes[reused] = node
                position = reused
            } else {
                nodes.append(node)
                position = nodes.count - 1
            }
            index[key] = position
            pushFront(position)
            bytes += size
            while bytes > budget && tail >= 0 && tail != position {
                if let table = remove(nodes[tail].key) { dropped.append(table) }
            }
            return dropped
        }

        /// Drops the table under `key`; returns it.
        mutating func remove(_ key: String) -> ModuleSymbols? {
            guard let node = index.removeValue(forKey: key) else { return nil }
            unlink(node)
            bytes -= nodes[node].size
            let table = nodes[node].slot.value.withLock { $0 }
            nodes[node].slot = Slot()
            nodes[node].key = ""
            free.append(node)
            return table
        }
    }
}
