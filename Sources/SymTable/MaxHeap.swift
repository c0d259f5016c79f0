/// A binary max-heap of (priority, value) pairs ordered by priority.
struct MaxHeap {
    /// One entry.
    struct Entry {
        var priority: UInt64
        var value: UInt32
    }

    private var entries: [Entry] = []

    /// The entry with the highest priority.
    var top: Entry? { entries.first }

    /// Inserts an entry.
    mutating func push(priority: UInt64, value: UInt32) {
        entries.append(Entry(priority: priority, value: value))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[parent].priority < entries[child].priority else { break }
            entries.swapAt(parent, child)
            child = parent
        }
    }

    /// Removes the entry with the highest priority.
    mutating func pop() {
        guard !entries.isEmpty else { return }
        entries.swapAt(0, entries.count - 1)
        entries.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var largest = parent
            if left < entries.count, entries[left].priority > entries[largest].priority { largest = left }
            if right < entries.count, entries[right].priority > entries[largest].priority { largest = right }
            guard largest != parent else { break }
            entries.swapAt(parent, largest)
            parent = largest
        }
    }
}
