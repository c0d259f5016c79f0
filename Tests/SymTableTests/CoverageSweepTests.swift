import TestSupport
import Testing
@testable import SymTable

/// `CoverageSweep`, which resolves the scopes' and sequences' overlapping ranges: its winners match
/// a brute-force oracle (highest priority among the covering intervals, per elementary interval),
/// with short intervals, ones of 4 GiB and more (kept apart, 24 bytes instead of 16) and both mixed;
/// and `SegmentList`, where the winners are kept.
@Suite struct CoverageSweepTests {
    /// The oracle: every elementary interval between two interval ends, its highest-priority
    /// covering value, neighbours with the same winner joined.
    static func oracle(_ intervals: [(start: UInt64, end: UInt64, value: UInt32)],
                       priorities: [UInt64]) -> [(UInt64, UInt64, UInt32)] {
        let bounds = Set(intervals.flatMap { [$0.start, $0.end] }).sorted()
        var result: [(UInt64, UInt64, UInt32)] = []
        for (low, high) in zip(bounds, bounds.dropFirst()) {
            let covering = intervals.filter { $0.start <= low && high <= $0.end && $0.start < $0.end }
            guard let winner = covering.max(by: { priorities[Int($0.value)] < priorities[Int($1.value)] })?.value else {
                continue
            }
            if let last = result.last, last.1 == low, last.2 == winner {
                result[result.count - 1].1 = high
            } else {
                result.append((low, high, winner))
            }
        }
        return result
    }

    @Test(arguments: [(0, 0), (1, 0), (2, 1), (3, 3), (4, 8), (5, 20)])
    func matchesTheOracle(seed: UInt64, longShare: Int) {
        var generator = SplitMix64(seed: seed)
        let valueCount = 24
        // Ranks with ties (as the flattener's depths have); the value breaks them, the higher winning.
        let ranks = (0..<UInt32(valueCount)).map { _ in UInt32.random(in: 0..<6, using: &generator) }
        let priorities = ranks.indices.map { UInt64(ranks[$0]) << 32 | UInt64($0) }
        for _ in 0..<40 {
            var intervals: [(start: UInt64, end: UInt64, value: UInt32)] = []
            for _ in 0..<Int.random(in: 0...30, using: &generator) {
                let isLong = Int.random(in: 0..<20, using: &generator) < longShare
                // Starts near each other (overlaps) in a space above 4 GiB, lengths short or huge.
                let start = (1 << 33) + UInt64.random(in: 0..<200, using: &generator) * (isLong ? 1 << 28 : 1)
                let length = isLong ? UInt64.random(in: (UInt64(UInt32.max) - 2)...(1 << 36), using: &generator)
                                    : UInt64.random(in: 0..<60, using: &generator)
                intervals.append((start, start + length, UInt32.random(in: 0..<UInt32(valueCount), using: &generator)))
            }
            var sweep = CoverageSweep(valueCount: valueCount, intervalCount: intervals.count / 2)
            for interval in intervals {
                sweep.add(start: interval.start, end: interval.end, rank: ranks[Int(interval.value)],
                          value: interval.value)
            }
            let winners = sweep.winners().map { ($0.start, $0.end!, $0.value) }
            let expected = Self.oracle(intervals, priorities: priorities)
            #expect(winners.count == expected.count)
            for (got, want) in zip(winners, expected) {
                #expect(got == want)
            }
        }
    }

    @Test func anIntervalToTheTopOfTheAddressSpace() {
        var sweep = CoverageSweep(valueCount: 2)
        sweep.add(start: 0x1000, end: .max, rank: 1, value: 0)
        sweep.add(start: 0x2000, end: 0x3000, rank: 2, value: 1)
        let winners = sweep.winners().map { ($0.start, $0.end!, $0.value) }
        #expect(winners.count == 3)
        #expect(winners.first! == (0x1000, 0x2000, 0))
        #expect(winners.dropFirst().first! == (0x2000, 0x3000, 1))
        #expect(winners.last! == (0x3000, .max, 0))
    }

    /// Ranks given up front (the flattener hands over its depths) rank as ranks given per interval.
    @Test func ranksTakenOverRankAsGiven() {
        var generator = SplitMix64(seed: 9)
        let ranks = (0..<16).map { _ in UInt32.random(in: 0..<3, using: &generator) }
        let intervals = (0..<200).map { _ in
            let start = UInt64.random(in: 0..<500, using: &generator)
            return (start: start, end: start + UInt64.random(in: 1..<40, using: &generator),
                    value: UInt32.random(in: 0..<16, using: &generator))
        }
        var given = CoverageSweep(valueCount: ranks.count)
        var takenOver = CoverageSweep(ranks: ranks)
        for interval in intervals {
            given.add(start: interval.start, end: interval.end, rank: ranks[Int(interval.value)], value: interval.value)
            takenOver.add(start: interval.start, end: interval.end, value: interval.value)
        }
        let expected = Self.oracle(intervals, priorities: ranks.indices.map { UInt64(ranks[$0]) << 32 | UInt64($0) })
        for winners in [given.winners(), takenOver.winners()] {
            #expect(winners.map { [$0.start, $0.end!, UInt64($0.value)] } == expected.map { [$0.0, $0.1, UInt64($0.2)] })
        }
    }

    /// `SegmentList` keeps its bytes in blocks that its cursor frees behind itself: segments come
    /// back exactly across many blocks, with big and small gaps, lengths and values.
    @Test func segmentListsComeBackAcrossBlocks() {
        var generator = SplitMix64(seed: 42)
        var segments: [Segment] = []
        var list = SegmentList()
        var address: UInt64 = 0x400000
        for _ in 0..<200_000 {
            let big = Int.random(in: 0..<100, using: &generator) == 0
            let start = address + (big ? UInt64.random(in: 0...(1 << 40), using: &generator) : UInt64.random(in: 0..<3, using: &generator))
            let end = start + (big ? UInt64.random(in: 1...(1 << 40), using: &generator) : UInt64.random(in: 1..<300, using: &generator))
            let value = big ? UInt32.random(in: 0...UInt32.max, using: &generator) : UInt32.random(in: 0..<1000, using: &generator)
            let segment = Segment(start: start, end: end, value: value)
            segments.append(segment)
            list.append(segment)
            address = end
        }
        #expect(list.count == segments.count)
        var cursor = SegmentList.Cursor(list)
        var read = 0
        while let segment = cursor.current, read < segments.count {
            #expect(segment.start == segments[read].start && segment.end == segments[read].end
                    && segment.value == segments[read].value)
            read += 1
            cursor.advance()
        }
        #expect(read == segments.count)
        #expect(cursor.current == nil)
    }
}
