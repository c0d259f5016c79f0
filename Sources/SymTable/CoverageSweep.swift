/// A maximal address interval `[start, end)` over which one thing (a scope, a line row, a symbol)
/// is the answer; `end == nil` runs to the end of the address space.
struct Segment {
    var start: UInt64
    var end: UInt64?
    var value: UInt32
}

/// Resolves overlapping intervals into the sequence of winners: at each address, the covering
/// interval with the highest priority wins.
///
/// A sort and one sweep over the interval ends with a max-heap of the open values, so the cost is
/// O(n log n) in the number of intervals and never depends on the address span.
struct CoverageSweep {
    /// One candidate: `value` covers `[start, end)` with `priority` (higher wins). Every interval
    /// of one value must carry the same priority.
    struct Interval {
        var start: UInt64
        var end: UInt64
        var priority: UInt64
        var value: UInt32
    }

    private var intervals: [Interval] = []

    /// Adds a candidate interval; empty ones are ignored.
    mutating func add(start: UInt64, end: UInt64, priority: UInt64, value: UInt32) {
        guard start < end else { return }
        intervals.append(Interval(start: start, end: end, priority: priority, value: value))
    }

    /// The winners, sorted by address and disjoint; addresses covered by nothing are left out.
    /// `valueCount` bounds the values (they index a table of open counts).
    func winners(valueCount: Int) -> [Segment] {
        guard !intervals.isEmpty else { return [] }
        let byStart = intervals.indices.sorted { intervals[$0].start < intervals[$1].start }
        let byEnd = intervals.indices.sorted { intervals[$0].end < intervals[$1].end }
        // A value may cover an address through several of its own intervals: count them.
        var open = [UInt32](repeating: 0, count: valueCount)
        var heap = MaxHeap()
        var result: [Segment] = []
        var current: UInt32? = nil
        var currentStart: UInt64 = 0
        var nextStart = 0
        var nextEnd = 0
        while nextEnd < byEnd.count {
            let address = nextStart < byStart.count
                ? min(intervals[byStart[nextStart]].start, intervals[byEnd[nextEnd]].end)
                : intervals[byEnd[nextEnd]].end
            while nextEnd < byEnd.count, intervals[byEnd[nextEnd]].end == address {
                open[Int(intervals[byEnd[nextEnd]].value)] -= 1
                nextEnd += 1
            }
            while nextStart < byStart.count, intervals[byStart[nextStart]].start == address {
                let interval = intervals[byStart[nextStart]]
                open[Int(interval.value)] += 1
                if open[Int(interval.value)] == 1 {
                    heap.push(priority: interval.priority, value: interval.value)
                }
                nextStart += 1
            }
            // Closed values stay in the heap until they surface.
            while let top = heap.top, open[Int(top.value)] == 0 { heap.pop() }
            let winner = heap.top?.value
            if winner != current {
                if let current { result.append(Segment(start: currentStart, end: address, value: current)) }
                current = winner
                currentStart = address
            }
        }
        return result
    }
}
