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
/// interval with the highest priority wins. A value's priority is its rank, then the value itself
/// (the higher wins), so no two values tie.
///
/// A sort and one sweep over the interval ends with a max-heap of the open values, so the cost is
/// O(n log n) in the number of intervals and never depends on the address span.
struct CoverageSweep {
    /// One candidate: `value` covers `[start, start + length)`. 16 bytes, not 24: a flattener
    /// holds one per scope range of the whole module, and ranges of 4 GiB or more are rare.
    private struct Interval {
        var start: UInt64
        var length: UInt32
        var value: UInt32
        var end: UInt64 { start + UInt64(length) }
    }

    /// A candidate too long for `Interval`.
    private struct LongInterval {
        var start: UInt64
        var end: UInt64
        var value: UInt32
    }

    private var intervals: [Interval] = []
    private var longIntervals: [LongInterval] = []
    /// The rank of each value (4 bytes: a flattener has one per scope of the module).
    private var ranks: [UInt32]

    /// Prepares a sweep over values `0..<valueCount` (they index tables of that size), with room
    /// for `intervalCount` intervals in one allocation (more may be added).
    init(valueCount: Int, intervalCount: Int = 0) {
        ranks = [UInt32](repeating: 0, count: valueCount)
        intervals.reserveCapacity(intervalCount)
    }

    /// Prepares a sweep over values `0..<ranks.count` ranked by `ranks`, which it takes over.
    init(ranks: consuming [UInt32], intervalCount: Int = 0) {
        self.ranks = ranks
        intervals.reserveCapacity(intervalCount)
    }

    /// The priority of `value`: its rank, then the value.
    @inline(__always)
    private func priority(_ value: UInt32) -> UInt64 {
        UInt64(ranks[Int(value)]) << 32 | UInt64(value)
    }

    /// Adds a candidate interval of `value` with rank `rank`; empty ones are ignored. Every
    /// interval of one value must carry the same rank.
    mutating func add(start: UInt64, end: UInt64, rank: UInt32, value: UInt32) {
        guard start < end else { return }
        ranks[Int(value)] = rank
        add(start: start, end: end, value: value)
    }

    /// Adds a candidate interval of `value`, ranked as given at `init(ranks:)`; empty ones are ignored.
    mutating func add(start: UInt64, end: UInt64, value: UInt32) {
        guard start < end else { return }
        if end - start < UInt64(UInt32.max) {
            intervals.append(Interval(start: start, length: UInt32(end - start), value: value))
        } else {
            longIntervals.append(LongInterval(start: start, end: end, value: value))
        }
    }

    /// The winners, sorted by address and disjoint; addresses covered by nothing are left out.
    consuming func winners() -> [Segment] {
        var result: [Segment] = []
        winners { result.append($0) }
        return result
    }

    /// Calls `emit` with each winner in address order (every one with an end).
    consuming func winners(_ emit: (Segment) -> Void) {
        let shortCount = intervals.count
        let total = shortCount + longIntervals.count
        guard total > 0 else { return }
        intervals.sort { $0.start < $1.start }
        longIntervals.sort { $0.start < $1.start }
        // Index `i` names `intervals[i]` below `shortCount`, else `longIntervals[i - shortCount]`.
        func end(_ index: UInt32) -> UInt64 {
            Int(index) < shortCount ? intervals[Int(index)].end : longIntervals[Int(index) - shortCount].end
        }
        func value(_ index: UInt32) -> UInt32 {
            Int(index) < shortCount ? intervals[Int(index)].value : longIntervals[Int(index) - shortCount].value
        }
        let byEnd = (0..<UInt32(total)).sorted { end($0) < end($1) }
        // A value may cover an address through several of its own intervals: count them.
        var open = [UInt32](repeating: 0, count: ranks.count)
        var heap = MaxHeap()
        var current: UInt32? = nil
        var currentStart: UInt64 = 0
        // The next starts of each list: the sweep takes the lower of the two.
        var nextShort = 0
        var nextLong = 0
        var nextEnd = 0
        func nextStart() -> (start: UInt64, value: UInt32)? {
            let short = nextShort < shortCount ? intervals[nextShort] : nil
            let long = nextLong < longIntervals.count ? longIntervals[nextLong] : nil
            switch (short, long) {
            case let (short?, long?):
                return short.start <= long.start ? (short.start, short.value) : (long.start, long.value)
            case let (short?, nil): return (short.start, short.value)
            case let (nil, long?): return (long.start, long.value)
            case (nil, nil): return nil
            }
        }
        func takeStart() {
            if nextShort < shortCount,
               nextLong >= longIntervals.count || intervals[nextShort].start <= longIntervals[nextLong].start {
                nextShort += 1
            } else {
                nextLong += 1
            }
        }
        while nextEnd < byEnd.count {
            let firstEnd = end(byEnd[nextEnd])
            let address = nextStart().map { min($0.start, firstEnd) } ?? firstEnd
            while nextEnd < byEnd.count, end(byEnd[nextEnd]) == address {
                open[Int(value(byEnd[nextEnd]))] -= 1
                nextEnd += 1
            }
            while let next = nextStart(), next.start == address {
                open[Int(next.value)] += 1
                if open[Int(next.value)] == 1 {
                    heap.push(priority: priority(next.value), value: next.value)
                }
                takeStart()
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
/// each ULEB128. The bytes are kept in blocks of 256 KiB (each mapped on its own by malloc) that
/// a cursor frees as soon as it has passed them, so the list shrinks while the table grows.
struct SegmentList {
    /// Bytes a block holds at most.
    static let blockSize = 256 << 10
    /// Longest coding of one segment: two 64-bit values and a 32-bit one.
    private static let maximumSegmentBytes = 10 + 10 + 5

    private var blocks: [[UInt8]] = []
    private var lastEnd: UInt64 = 0
    /// Number of segments.
    private(set) var count = 0

    /// Appends a segment starting at or after the last one's end; it must have an end.
    mutating func append(_ segment: Segment) {
        let end = segment.end!
        precondition(segment.start >= lastEnd && end > segment.start, "segments out of order")
        // A segment never straddles two blocks.
        if blocks.isEmpty || blocks[blocks.count - 1].count + Self.maximumSegmentBytes > Self.blockSize {
            var block: [UInt8] = []
            block.reserveCapacity(Self.blockSize)
            blocks.append(block)
        }
        let last = blocks.count - 1
        LEB128Coding.appendUnsigned(segment.start - lastEnd, to: &blocks[last])
        LEB128Coding.appendUnsigned(end - segment.start, to: &blocks[last])
        LEB128Coding.appendUnsigned(UInt64(segment.value), to: &blocks[last])
        lastEnd = end
        count += 1
    }

    /// Reads the segments in order: `current`, then `advance()`. Given the list's only copy, it
    /// frees each block once past it.
    struct Cursor {
        private var blocks: [[UInt8]]
        private var block = 0
        private var offset = 0
        private var remaining: Int
        private var lastEnd: UInt64 = 0
        /// The segment at the cursor; nil after the last.
        private(set) var current: Segment?

        init(_ list: consuming SegmentList) {
            remaining = list.count
            blocks = []
            swap(&blocks, &list.blocks)
            advance()
        }

        /// Moves to the next segment.
        mutating func advance() {
            guard remaining > 0 else {
                current = nil
                blocks = []
                return
            }
            remaining -= 1
            if offset >= blocks[block].count {
                blocks[block] = []
                block += 1
                offset = 0
            }
            current = blocks[block].withUnsafeBufferPointer { bytes in
                let start = lastEnd + LEB128Coding.unsigned(bytes, &offset)
                let end = start + LEB128Coding.unsigned(bytes, &offset)
                let value = UInt32(truncatingIfNeeded: LEB128Coding.unsigned(bytes, &offset))
                return Segment(start: start, end: end, value: value)
            }
            lastEnd = current!.end!
        }
    }
}
