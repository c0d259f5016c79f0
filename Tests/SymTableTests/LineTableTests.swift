import SymBytes
import SymTable
import Testing
import TestSupport

/// The writer's compact line rows (`LineTable`): rows come back exactly as coded, file maps apply
/// to taken-over chunks, and a table written from coded rows is the table written from the model.
@Suite struct LineTableTests {
    /// Seeded rows in sequences: unsorted ones, equal addresses, empty bodies, extreme values,
    /// and rows after the last end-of-sequence row.
    static func rows(seed: UInt64, files: Int) -> [LineRow] {
        var random = SplitMix64(seed: seed)
        var rows: [LineRow] = []
        for _ in 0..<random.int(0...12) {
            var address = random.chance(10) ? UInt64.max - random.u64(0...0x1000) : random.u64(0...0xFFFF_FFFF_FFFF)
            for _ in 0..<random.int(0...30) {
                // Mostly increasing, sometimes back (a sequence out of address order) or equal.
                address = random.chance(10) ? address &- random.u64(0...0x40) : address &+ random.u64(0...0x40)
                rows.append(LineRow(address: address, file: UInt32(random.int(0...files - 1)),
                                    line: random.chance(5) ? UInt32.max - UInt32(random.int(0...3)) : UInt32(random.int(0...5000)),
                                    column: random.chance(5) ? UInt32.max : UInt32(random.int(0...200))))
            }
            rows.append(LineRow(address: address &+ random.u64(0...0x40), file: UInt32(random.int(0...files - 1)),
                                line: UInt32(random.int(0...9)), column: 0, isEndSequence: true))
        }
        for _ in 0..<random.int(0...2) {
            rows.append(LineRow(address: random.u64(0...0xFFFF), file: UInt32(random.int(0...files - 1)), line: 1))
        }
        return rows
    }

    /// The rows up to and including the last end-of-sequence row: the ones a table keeps.
    static func kept(_ rows: [LineRow]) -> [LineRow] {
        Array(rows[..<(rows.lastIndex { $0.isEndSequence }.map { $0 + 1 } ?? 0)])
    }

    @Test(arguments: 0..<200 as Range<UInt64>)
    func rowsComeBackExactly(seed: UInt64) {
        let rows = Self.rows(seed: seed, files: 40)
        let table = LineTable(rows)
        #expect(table.rows == Self.kept(rows))
        #expect(table.rowCount == rows.count)
        #expect(table.largestFile == rows.map(\.file).max() ?? 0)
        #expect(table.sequenceCount == rows.filter(\.isEndSequence).count)
        // The point of the type: a few bytes a row, not a `LineRow`'s 24 (this data has wide values).
        #expect(table.byteCount <= 12 * max(1, table.rows.count))
    }

    @Test(arguments: 0..<100 as Range<UInt64>)
    func takenOverSequencesUseTheirFileMap(seed: UInt64) {
        var random = SplitMix64(seed: seed ^ 0xABCD)
        let first = Self.rows(seed: seed, files: 6)
        let second = Self.rows(seed: seed + 1000, files: 6)
        let map: [UInt32] = (0..<6).map { _ in UInt32(random.int(0...50)) }
        var part = LineTable(second)
        // A part that was itself taken over, with a map of its own: maps compose.
        if random.chance(50) {
            var inner = LineTable()
            inner.append(part, sequences: [0..<part.sequenceCount], fileMap: [5, 4, 3, 2, 1, 0])
            part = inner
        }
        let inner = part.rows
        var table = LineTable(first)
        let keptFirst = Self.kept(first)
        // Some sequences only, in two runs, as the DWARF reader's merge takes them.
        let count = part.sequenceCount
        let cut = random.int(0...count)
        let ranges = [0..<(cut / 2), cut..<count]
        table.append(part, sequences: ranges, fileMap: map)

        var expected = keptFirst
        var sequence = 0
        var index = 0
        while index < inner.count {
            let end = inner[index...].firstIndex { $0.isEndSequence }!
            if ranges.contains(where: { $0.contains(sequence) }) {
                expected += inner[index...end].map { row in
                    var row = row
                    row.file = map[Int(row.file)]
                    return row
                }
            }
            sequence += 1
            index = end + 1
        }
        #expect(table.rows == expected)
        // At least every row's file (what the writer checks against the model's files), at most
        // what the map can name.
        #expect(expected.allSatisfy { $0.file <= table.largestFile })
        #expect(table.largestFile <= max(first.map(\.file).max() ?? 0, map.max()!))
        #expect(table.rowCount == first.count + expected.count - keptFirst.count)
    }

    @Test(arguments: 0..<150 as Range<UInt64>)
    func tablesFromCodedRowsEqualTablesFromTheModel(seed: UInt64) throws {
        let placement = RandomModels.Placement.allCases[Int(seed % 3)]
        let model = RandomModels.model(seed: seed, placement: placement)
        var bare = model
        bare.lines = []
        #expect(try SymbolTableWriter.write(bare, lines: LineTable(model.lines)) == SymbolTableWriter.write(model))
    }

    @Test func rowsInBothTheModelAndATableAreRejected() {
        var model = SampleModel.model()
        let lines = LineTable(model.lines)
        #expect(throws: FormatError.self) { try SymbolTableWriter.write(model, lines: lines) }
        model.lines = []
        var bad = LineTable()
        bad.appendSequence([LineRow(address: 0x1000, file: UInt32(model.files.count), line: 1),
                            LineRow(address: 0x1010, file: 0, line: 0, isEndSequence: true)])
        #expect(throws: FormatError.self) { try SymbolTableWriter.write(model, lines: bad) }
    }
}
