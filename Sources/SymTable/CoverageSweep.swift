/// A maximal address interval `[start, end)` over which one thing (a scope, a line row, a symbol)
/// is the answer; `end == nil` runs to the end of the address space. 24 bytes: a flattener holds
/// one per scope boundary.
struct Segment {
    var start: UInt64
    private var storedEnd: UInt64
    var value: UInt32
    private var isOpenEnded: Bool

    init(start: UInt64, end: UInt64?, value: UInt32) {
        self.start = start
        storedEnd = end ?? 0
        self.value = value
        isOpenEnded = end == nil
    }

    /// One past the last address; nil for the end of the address space.
    var end: UInt64? { isOpenEnded ? nil : storedEnd }
}

/// Resolves overlapping intervals into the sequence of winners: at each address, the covering
/// interval with the highest priority wins.
///
/// A sort and one sweep over the interval ends with a max-heap of the open values, so the cost is
/// O(n log n) in the number of intervals and never depends on the address span.
struct CoverageSweep {
    /// One candidate: `value` covers `[start, end)`.
    private struct Interval {
        var start: UInt64
        var end: UInt64
        var value: UInt32
    }

    private var intervals: [Interval] = []
    /// The priority of each value (higher wins): every interval of a value has its value's.
    private var priorities: [UInt64]

    /// Prepares a sweep over values `0..<valueCount` (they index tables of that size).
    init(valueCount: Int) {
        priorities = [UInt64](repeating: 0, count: valueCount)
    }

    /// Adds a candidate interval; empty ones are ignored. Every interval of one value must carry
    /// the same priority.
    mutating func add(start: UInt64, end: UInt64, priority: UInt64, value: UInt32) {
        guard start < end else { return }
        priorities[Int(value)] = priority
        intervals.append(Interval(start: start, end: end, value: value))
    }

    /// The winners, sorted by address and disjoint; addresses covered by nothing are left out.
    consuming func winners() -> [Segment] {
        var result: [Segment] = []
        winners { result.append($0) }
        return result
    }

    /// Calls `emit` with each winner in address order (every one with an end).
    consuming func winners(_ emit: (Segment) -> Void) {
        guard !intervals.isEmpty else { return }
        intervals.sort { $0.start < $1.start }
        let byEnd = (0..<UInt32(intervals.count)).sorted { intervals[Int($0)].end < intervals[Int($1)].end }
        // A value may cover an address through several of its own intervals: count them.
        var open = [UInt32](repeating: 0, count: priorities.count)
        var heap = MaxHeap()
        var current: UInt32? = nil
        var currentStart: UInt64 = 0
        var nextStart = 0
        var nextEnd = 0
        while nextEnd < byEnd.count {
            let address = nextStart < intervals.count
                ? min(intervals[nextStart].start, intervals[Int(byEnd[nextEnd])].end)
                : intervals[Int(byEnd[nextEnd])].end
            while nextEnd < byEnd.count, intervals[Int(byEnd[nextEnd])].end == address {
                open[Int(intervals[Int(byEnd[nextEnd])].value)] -= 1
                nextEnd += 1
            }
            while nextStart < intervals.count, intervals[nextStart].start == address {
                let value = intervals[nextStart].value
                open[Int(value)] += 1
                if open[Int(value)] == 1 {
                    heap.push(priority: priorities[Int(value)], value: value)
                }
                nextStart += 1
            }
            // Closed values stay in the heap until they surface.
            while let top = heap.top, open[Int(top.value)] == 0 { heap.pop() }
            let winner = heap.top?.value
            if winner != current {
                if let current { emit(Segment(start: currentStart, end: address, value: current)) }
                current = winner
                currentStart = address
            }
        }
    }
}

/// Disjoint segments with ends, in address order, coded in bytes (about 5 a segment instead of
/// 24): the flattener holds one per scope boundary of the whole module while it walks them once.
///
/// A segment is coded as its distance from the previous segment's end, its length and its value,
/// each ULEB128.
struct SegmentList {
    private var bytes: [UInt8] = []
    private var lastEnd: UInt64 = 0
    /// Number of segments.
    private(set) var count = 0

    /// Appends a segment starting at or after the last one's end; it must have an end.
    mutating func append(_ segment: Segment) {
        let end = segment.end!
        precondition(segment.start >= lastEnd && end > segment.start, "segments out of order")
        LEB128Coding.appendUnsigned(segment.start - lastEnd, to: &bytes)
        LEB128Coding.appendUnsigned(end - segment.start, to: &bytes)
        LEB128Coding.appendUnsigned(UInt64(segment.value), to: &bytes)
        lastEnd = end
        count += 1
    }

    /// Reads the segments in order: `current`, then `advance()`.
    struct Cursor {
        private let bytes: [UInt8]
        private var offset = 0
        private var remaining: Int
        private var lastEnd: UInt64 = 0
        /// The segment at the cursor; nil after the last.
        private(set) var current: Segment?

        init(_ list: SegmentList) {
            bytes = list.bytes
            remaining = list.count
            advance()
        }

        /// Moves to the next segment.
        mutating func advance() {
            guard remaining > 0 else {
                current = nil
                return
            }
            remaining -= 1
            current = bytes.withUnsafeBufferPointer { bytes in
                let start = lastEnd + LEB128Coding.unsigned(bytes, &offset)
                let end = start + LEB128Coding.unsigned(bytes, &offset)
                let value = UInt32(truncatingIfNeeded: LEB128Coding.unsigned(bytes, &offset))
                return Segment(start: start, end: end, value: value)
            }
            lastEnd = current!.end!
        }
    }
}
