import SymBytes
import SymTable
import Testing

/// Property: for seeded random models, every lookup in the written table equals the naive oracle.
@Suite struct RoundTripTests {
    static let seeds: [UInt64] = Array(0..<400)

    @Test(arguments: seeds)
    func lookupsMatchTheOracle(seed: UInt64) throws {
        let placement = RandomModels.Placement.allCases[Int(seed % 3)]
        let model = RandomModels.model(seed: seed, placement: placement)
        let oracle = ModelOracle(model)
        let table = try SymbolTable(bytes: SymbolTableWriter.write(model))

        #expect(table.module == model.module)
        for address in RandomModels.probeAddresses(for: model, oracle: oracle, seed: seed) {
            let expected = oracle.frames(at: address)
            let actual = try table.plainFrames(at: address)
            guard actual == expected else {
                Issue.record("seed \(seed) (\(placement)) address 0x\(String(address, radix: 16)): expected \(expected), got \(actual)")
                return
            }
        }
    }

    @Test(arguments: seeds.prefix(100))
    func rangesSplitOnlyWhereTheAnswerChanges(seed: UInt64) throws {
        let model = RandomModels.model(seed: seed, placement: .low)
        let oracle = ModelOracle(model)
        let table = try SymbolTable(bytes: SymbolTableWriter.write(model))
        guard table.statistics.ranges > 0 else {
            #expect(oracle.interestingAddresses().allSatisfy { oracle.frames(at: $0).isEmpty })
            return
        }
        // Walk the ranges in order: neighbours differ (else they would have been merged), every
        // address of a range answers like its start, and only the last range may be open-ended.
        var address = try firstStart(table)
        var previous: [PlainFrame]? = nil
        var count = 0
        while true {
            guard let range = try table.range(containing: address), range.start == address else {
                Issue.record("seed \(seed): no range starts at 0x\(String(address, radix: 16))")
                return
            }
            count += 1
            let frames = try table.plainFrames(at: range.start)
            #expect(frames == oracle.frames(at: range.start))
            #expect(frames.isEmpty == !range.hasFrames)
            #expect(previous != frames, "seed \(seed): ranges at 0x\(String(range.start, radix: 16)) not merged")
            if previous == nil { #expect(!frames.isEmpty, "a leading gap is implicit") }
            guard let end = range.end else { break }
            #expect(try table.plainFrames(at: end - 1) == frames)
            previous = frames
            address = end
        }
        #expect(count == table.statistics.ranges)
    }

    @Test(arguments: seeds.prefix(150))
    func rangeIndicesAgreeWithRangesAndWalkTheSameFrames(seed: UInt64) throws {
        let placement = RandomModels.Placement.allCases[Int(seed % 3)]
        let model = RandomModels.model(seed: seed, placement: placement)
        let oracle = ModelOracle(model)
        let table = try SymbolTable(bytes: SymbolTableWriter.write(model))
        for address in RandomModels.probeAddresses(for: model, oracle: oracle, seed: seed) + [0, UInt64.max] {
            let range = try table.range(containing: address)
            let index = table.rangeIndex(containing: address)
            #expect((index == nil) == (range == nil), "seed \(seed) 0x\(String(address, radix: 16))")
            guard let index, let range else { continue }
            #expect(index >= 0 && index < table.statistics.ranges)
            // Neighbouring addresses in one range share the index; the index walks the same frames.
            #expect(table.rangeIndex(containing: range.start) == index)
            if let end = range.end { #expect(table.rangeIndex(containing: end) == index + 1) }
            var walked: [Frame] = []
            var frames = table.frames(inRange: index)
            while let frame = try frames.next() { walked.append(frame) }
            #expect(try frames.next() == nil, "an exhausted walk stays exhausted")
            #expect(walked == (try table.frames(at: address)))
            // A cursor (the table passed to each step), its indices resolved here, answers as the
            // naive oracle does (the iterator wraps a cursor, so comparing the two would prove nothing).
            var cursor = SymbolTable.FrameCursor(range: index)
            var resolved: [PlainFrame] = []
            while let frame = try cursor.nextIndices(in: table) {
                let (directory, file) = try table.file(frame.file)
                resolved.append(PlainFrame(
                    function: Array(table.string(try table.functionName(frame.name)).utf8),
                    directory: Array(table.string(directory).utf8), file: Array(table.string(file).utf8),
                    line: frame.line, column: frame.column, isInlined: frame.isInlined, isSymbolOnly: frame.isSymbolOnly,
                    scopeFunction: Array(table.string(try table.functionName(frame.scopeName)).utf8)))
            }
            #expect(resolved == oracle.frames(at: address), "seed \(seed) 0x\(String(address, radix: 16))")
            #expect(try cursor.nextIndices(in: table) == nil, "an exhausted cursor stays exhausted")
        }
        // The batch search agrees with one search at a time (-1 also for ranges without frames).
        let probes = RandomModels.probeAddresses(for: model, oracle: oracle, seed: seed) + [0, 1, UInt64.max]
        var batch = [Int](repeating: -2, count: probes.count)
        probes.withUnsafeBufferPointer { addresses in
            batch.withUnsafeMutableBufferPointer { table.rangeIndices(addresses, into: $0) }
        }
        for (address, index) in zip(probes, batch) {
            let single = table.rangeIndex(containing: address)
            let hasFrames = try single.map { try table.forEachFrame(inRange: $0) { _ in } > 0 } ?? false
            #expect(index == (hasFrames ? single! : -1), "seed \(seed) 0x\(String(address, radix: 16))")
        }
        #expect(throws: FormatError.self) { _ = try table.functionName(UInt32(table.statistics.names)) }
        #expect(throws: FormatError.self) { _ = try table.file(UInt32(table.statistics.files)) }
        #expect(throws: FormatError.self) { _ = try table.forEachFrame(inRange: table.statistics.ranges) { _ in } }
        #expect(throws: FormatError.self) { _ = try table.forEachFrame(inRange: -1) { _ in } }
    }

    /// The first range start, found by probing (the API exposes ranges by address only).
    private func firstStart(_ table: SymbolTable) throws -> UInt64 {
        var low: UInt64 = 0
        var high = UInt64.max
        guard try table.range(containing: high) != nil else { return 0 }
        while low < high {
            let middle = low + (high - low) / 2
            if try table.range(containing: middle) != nil { high = middle } else { low = middle + 1 }
        }
        return low
    }

    @Test func tablesOpenFromAMappedFile() throws {
        let model = RandomModels.model(seed: 7, placement: .wide)
        let bytes = try SymbolTableWriter.write(model)
        let path = try TemporaryFile.write(bytes, name: "roundtrip.csym")
        defer { TemporaryFile.remove(path) }
        let table = try SymbolTable(file: MappedFile(path: path))
        let oracle = ModelOracle(model)
        #expect(table.statistics.byteCount == bytes.count)
        for address in oracle.interestingAddresses() {
            #expect(try table.plainFrames(at: address) == oracle.frames(at: address))
        }
    }
}
