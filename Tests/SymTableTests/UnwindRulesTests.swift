import TestSupport
import SymBytes
@testable import SymTable
import Testing

/// The unwind-rules section (`.csym` v4, with expressions v5): written and read back as given (against a naive
/// oracle), merged and deduplicated, and a hostile section gives `FormatError`, never a trap.
@Suite struct UnwindRulesTests {
    /// A table with `rules` and nothing else of note.
    static func table(_ rules: UnwindRules?) throws -> [UInt8] {
        var model = SampleModel.model()
        model.module.unwindRules = rules
        return try SymbolTableWriter.write(model)
    }

    /// Offset and size of the unwind-rules section (directory entry 10).
    static func section(_ bytes: [UInt8]) -> (offset: Int, size: Int) {
        func u64(_ at: Int) -> Int { (0..<8).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } }
        return (u64(88 + 16 * 10), u64(88 + 16 * 10 + 8))
    }

    static func setU32(_ bytes: inout [UInt8], at offset: Int, _ value: UInt32) {
        for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
    }

    /// A seeded random set of rules over ascending ranges with gaps, and the oracle of what each
    /// address must give.
    static func randomRules(seed: UInt64, wide: Bool) -> (rules: UnwindRules, oracle: [(Range<UInt64>, StoredUnwindRule?)]) {
        var random = SplitMix64(seed: seed)
        var pool: [StoredUnwindRule] = []
        for _ in 0..<random.int(1...40) {
            // Every kind, expressions (v5) of 0 to 40 bytes included.
            let registers = (0..<random.int(0...6)).map { index -> StoredRegisterRule in
                let register = UInt16(index * 2 + random.int(0...1))
                let kind = StoredRegisterRule.Kind(rawValue: UInt8(random.int(0...7)))!
                if kind == .expression || kind == .valueExpression {
                    return StoredRegisterRule(register: register, kind: kind,
                                              expression: (0..<random.int(0...40)).map { _ in UInt8(random.int(0...255)) })
                }
                return StoredRegisterRule(register: register, kind: kind, value: Int32(random.int(-4096...4096)))
            }
            if random.chance(20) {
                let expression = (0..<random.int(1...40)).map { _ in UInt8(random.int(0...255)) }
                pool.append(StoredUnwindRule(isSignalFrame: random.chance(10), returnAddressRegister: 16, cfaExpression: expression,
                                             registers: registers))
                continue
            }
            pool.append(StoredUnwindRule(isSignalFrame: random.chance(10), returnAddressRegister: 16, cfaRegister: UInt16(random.int(6...7)),
                                         cfaOffset: Int32(random.int(-64...4096)), registers: registers))
        }
        var builder = UnwindRules.Builder()
        var oracle: [(Range<UInt64>, StoredUnwindRule?)] = []
        var address: UInt64 = wide ? 0x7000_0000 : 0x40_0000
        for _ in 0..<random.int(1...300) {
            address += UInt64(random.int(0...16))
            if wide && random.chance(5) { address += 1 << 33 }
            let end = address + UInt64(random.int(1...64))
            let rule = random.chance(15) ? nil : pool[random.int(0...pool.count - 1)]
            builder.add(address..<end, rule: rule)
            oracle.append((address..<end, rule))
            address = end
        }
        return (builder.finish()!, oracle)
    }

    @Test(arguments: [(UInt64(1), false), (2, false), (3, true), (4, false), (5, true)])
    func roundTripMatchesTheOracle(seed: UInt64, wide: Bool) throws {
        let (rules, oracle) = Self.randomRules(seed: seed, wide: wide)
        let table = try SymbolTable(bytes: try Self.table(rules))
        #expect(table.hasUnwindRules)
        #expect(try table.unwindRule(at: oracle[0].0.lowerBound - 1) == nil)
        #expect(try table.unwindRule(at: oracle[oracle.count - 1].0.upperBound) == nil)
        for (range, rule) in oracle {
            for address in [range.lowerBound, range.upperBound - 1, range.lowerBound + (range.upperBound - range.lowerBound) / 2] {
                let found = try table.storedUnwindRule(at: address)
                #expect(found?.rule == rule, "at 0x\(String(address, radix: 16))")
                if let found { #expect(found.addresses.contains(range.lowerBound) && found.addresses.contains(range.upperBound - 1)) }
            }
        }
        // Rows are deduplicated: no more rules than distinct rules given.
        #expect(rules.ruleCount == Set(oracle.compactMap(\.1)).count)
    }

    @Test func adjacentEqualRulesMergeAndGapsHaveNoRule() throws {
        let rule = StoredUnwindRule(isSignalFrame: false, returnAddressRegister: 16, cfaRegister: 7, cfaOffset: 8,
                                    registers: [StoredRegisterRule(register: 16, kind: .offset, value: -8)])
        var builder = UnwindRules.Builder()
        builder.add(0x10..<0x20, rule: rule)
        builder.add(0x20..<0x30, rule: rule)
        builder.add(0x18..<0x40, rule: nil)  // overlaps: clipped to 0x30..<0x40
        builder.add(0x50..<0x60, rule: rule)
        let rules = try #require(builder.finish())
        // 0x10 rule, 0x30 none (with the gap to 0x50), 0x50 rule, 0x60 none.
        #expect(rules.rangeCount == 4 && rules.ruleCount == 1)
        let table = try SymbolTable(bytes: try Self.table(rules))
        #expect(try table.unwindRule(at: 0x2F)?.addresses == 0x10..<0x30)
        #expect(try table.unwindRule(at: 0x30) == nil && table.unwindRule(at: 0x4F) == nil)
        #expect(try table.unwindRule(at: 0x55)?.addresses == 0x50..<0x60)
        #expect(UnwindRules.Builder().finish() == nil)
    }

    @Test(arguments: [false, true])
    func truncatedSectionIsRejectedOnOpen(expressions: Bool) throws {
        let bytes = try expressions ? CompatibilityFixtureTests.v5Sample() : CompatibilityFixtureTests.v4Sample()
        let (offset, size) = Self.section(bytes)
        try #require(size > 0 && offset + size == bytes.count)
        // Size 0 is a table without rules; every other size must be refused.
        for length in 1..<size {
            var corrupt = Array(bytes[..<(offset + length)])
            for index in 0..<8 { corrupt[88 + 16 * 10 + 8 + index] = UInt8(truncatingIfNeeded: length >> (8 * index)) }
            #expect(throws: FormatError.self, "section of \(length) bytes") { try SymbolTable(bytes: corrupt) }
        }
    }

    @Test(arguments: [
        (8, UInt32.max),       // range count
        (8, 0),                // no range at all
        (12, UInt32.max),      // rule count
        (12, 1_000_000),
        (20, UInt32.max),      // rule data size
        (16, 0x0305),          // start width 5
        (16, 0x0004),          // rule field width 0
        (16, 0x0504),          // rule field width 5
        (16, 0x1_0104),        // reserved bytes
    ])
    func hugeOrForgedCountsAreRejectedOnOpen(field: Int, value: UInt32) throws {
        var bytes = try CompatibilityFixtureTests.v4Sample()
        let (offset, _) = Self.section(bytes)
        Self.setU32(&bytes, at: offset + field, value)
        #expect(throws: FormatError.self) { try SymbolTable(bytes: bytes) }
    }

    /// Starts out of order, repeated or overlapping: refused on open (a binary search over them
    /// would silently answer with another range's rule).
    @Test(arguments: [(2, UInt32(0)), (2, 1), (3, 0x60), (5, 0x48), (1, 0)])
    func unsortedOrOverlappingStartsAreRejectedOnOpen(range: Int, delta: UInt32) throws {
        var bytes = try CompatibilityFixtureTests.v4Sample()
        let (offset, _) = Self.section(bytes)
        // Compact starts, deltas from 0x1000: 0, 1, 4, 0x40, 0x48, 0x50.
        Self.setU32(&bytes, at: offset + 24 + 4 * range, delta)
        #expect(throws: FormatError.self) { try SymbolTable(bytes: bytes) }
    }

    @Test func outOfBoundsRulesThrowAtLookup() throws {
        let valid = try CompatibilityFixtureTests.v4Sample()
        let (offset, _) = Self.section(valid)
        let fields = offset + 24 + 6 * 4
        let offsets = fields + 6
        let data = offsets + 5 * 4
        // A range naming rule 200 of 4.
        var bytes = valid
        bytes[fields] = 200
        #expect(throws: FormatError.self) { try SymbolTable(bytes: bytes).unwindRule(at: 0x1000) }
        // A rule whose extent runs backwards or past the data.
        bytes = valid
        Self.setU32(&bytes, at: offsets + 4, 500)
        #expect(throws: FormatError.self) { try SymbolTable(bytes: bytes).unwindRule(at: 0x1000) }
        #expect(throws: FormatError.self) { try SymbolTable(bytes: bytes).unwindRule(at: 0x1002) }
        // A register count that does not fill the record.
        bytes = valid
        bytes[data + 9] = 3
        #expect(throws: FormatError.self) { try SymbolTable(bytes: bytes).unwindRule(at: 0x1000) }
        // Unknown flags, and an unknown register rule kind.
        bytes = valid
        bytes[data] = 4
        #expect(throws: FormatError.self) { try SymbolTable(bytes: bytes).unwindRule(at: 0x1000) }
        bytes = valid
        bytes[data + 10 + 2] = 9
        let table = try SymbolTable(bytes: bytes)
        let record = try #require(try table.unwindRule(at: 0x1000))
        #expect(throws: FormatError.self) { try table.registerRule(0, of: record) }
        #expect(throws: FormatError.self) { try table.registerRule(1, of: record) }
    }

    /// Expression lengths (v5) that do not fill their record, or claim more than a table
    /// stores: refused at lookup, never read past the record.
    @Test func forgedExpressionLengthsThrowAtLookup() throws {
        let valid = try CompatibilityFixtureTests.v5Sample()
        let table = try SymbolTable(bytes: valid)
        let plt = try #require(try table.unwindRule(at: 0x1040))
        let trampoline = try #require(try table.unwindRule(at: 0x1050))
        // The record's CFA offset field holds the CFA expression's length; a register rule's
        // value its expression's.
        let cfaLength = plt.registersOffset - StoredUnwindRule.fixedSize + 5
        let ripLength = trampoline.registersOffset + 3 * StoredUnwindRule.registerSize + 3
        for (at, value) in [(cfaLength, UInt32(12)), (cfaLength, 10), (cfaLength, UInt32.max), (cfaLength, 2000),
                            (ripLength, 4), (ripLength, UInt32.max), (ripLength, 0x7fff_ffff)] {
            var bytes = valid
            Self.setU32(&bytes, at: at, value)
            let address: UInt64 = at == cfaLength ? 0x1040 : 0x1050
            #expect(throws: FormatError.self, "0x\(String(value, radix: 16)) at \(at)") { try SymbolTable(bytes: bytes).storedUnwindRule(at: address) }
        }
    }
}
