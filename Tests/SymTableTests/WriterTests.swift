import TestSupport
import SymBytes
import SymTable
import Testing

/// Examples of the writer's rules and limits, each checked through the reader.
@Suite struct WriterTests {
    static let module = ModuleIdentity(buildID: [0xDE, 0xAD], machine: 183, is64Bit: false, name: "m")

    @Test func emptyModelGivesAnEmptyTable() throws {
        let table = try SymbolTable(bytes: SymbolTableWriter.write(SymbolModel(module: Self.module)))
        #expect(table.module == Self.module)
        #expect(table.statistics.ranges == 0)
        #expect(try table.forEachFrame(at: 0) { _ in } == 0)
        #expect(try table.range(containing: UInt64.max) == nil)
    }

    @Test func invalidModelsAreRejected() throws {
        var base = SymbolModel(module: Self.module)
        let name = base.appendString("f")
        base.ranges = [AddressRange(start: 0, end: 4)]
        base.scopes = [Scope(name: name, firstRange: 0, rangeCount: 1)]
        #expect(throws: Never.self) { try SymbolTableWriter.write(base) }

        var cases: [SymbolModel] = []
        var model = base
        model.scopes.append(Scope(name: name, parent: 1, firstRange: 0, rangeCount: 1))  // parent is itself
        cases.append(model)
        model = base
        model.scopes[0].rangeCount = 2  // range out of bounds
        cases.append(model)
        model = base
        model.scopes[0].firstRange = UInt32.max  // overflowing range index
        cases.append(model)
        model = base
        model.scopes[0].name = 99
        cases.append(model)
        model = base
        model.scopes.append(Scope(name: name, parent: 0, firstRange: 0, rangeCount: 1, callFile: 5))
        cases.append(model)
        model = base
        model.lines = [LineRow(address: 0, file: 3, line: 1), LineRow(address: 4, file: 0, line: 0, isEndSequence: true)]
        cases.append(model)
        model = base
        model.symbols = [SymbolEntry(name: 42, address: 0, size: 1)]
        cases.append(model)
        model = base
        model.files.append(SourceFile(directory: 0, name: 17))
        cases.append(model)
        model = base
        model.files = []
        cases.append(model)
        for (index, model) in cases.enumerated() {
            #expect("case \(index)") {
                try SymbolTableWriter.write(model)
            } throws: { error in
                (error as? FormatError)?.code == .invalidValue
            }
        }
    }

    @Test func unsortedSequenceRowsAreSortedStably() throws {
        var model = SymbolModel(module: Self.module)
        let name = model.appendString("f")
        model.files.append(SourceFile(directory: 0, name: model.appendString("a.c")))
        model.ranges = [AddressRange(start: 0x100, end: 0x200)]
        model.scopes = [Scope(name: name, firstRange: 0, rangeCount: 1)]
        model.lines = [
            LineRow(address: 0x120, file: 1, line: 3),
            LineRow(address: 0x100, file: 1, line: 1),
            LineRow(address: 0x110, file: 1, line: 2),
            LineRow(address: 0x110, file: 1, line: 22),  // same address, later in the array: wins
            LineRow(address: 0x130, file: 0, line: 0, isEndSequence: true),
        ]
        let table = try SymbolTable(bytes: SymbolTableWriter.write(model))
        #expect(try table.frames(at: 0x100).map(\.line) == [1])
        #expect(try table.frames(at: 0x115).map(\.line) == [22])
        #expect(try table.frames(at: 0x12F).map(\.line) == [3])
        #expect(try table.frames(at: 0x130).map(\.line) == [0])  // past the sequence: no row
    }

    @Test func lastSymbolOfSizeZeroCoversTheRestOfTheAddressSpace() throws {
        var model = SymbolModel(module: Self.module)
        model.symbols = [SymbolEntry(name: model.appendString("sized"), address: 0x10, size: 4),
                         SymbolEntry(name: model.appendString("open"), address: 0x20, size: 0)]
        let table = try SymbolTable(bytes: SymbolTableWriter.write(model))
        func name(_ address: UInt64) throws -> [String] { try table.frames(at: address).map { table.string($0.function) } }
        #expect(try name(0x13) == ["sized"])
        #expect(try name(0x14) == [])
        #expect(try name(0x20) == ["open"])
        #expect(try name(UInt64.max) == ["open"])
        #expect(try table.frames(at: 0x20).allSatisfy { $0.isSymbolOnly && !$0.isInlined })
    }

    @Test func rangeStartsAreCompactUnlessTheSpanExceeds4GiB() throws {
        for (span, compact) in [(UInt64(0xFFFF_FFFF), true), (0x1_0000_0000, false)] {
            var model = SymbolModel(module: Self.module)
            let first = model.appendString("first")
            let last = model.appendString("last")
            let base: UInt64 = 0x7000_0000_0000
            model.symbols = [SymbolEntry(name: first, address: base, size: 1),
                             SymbolEntry(name: last, address: base + span - 1, size: 1)]
            let bytes = try SymbolTableWriter.write(model)
            let layout = try TestLayout(bytes)
            #expect(layout.compact == compact)
            let table = try SymbolTable(bytes: bytes)
            #expect(table.statistics.ranges == 4)  // first, gap, last, gap
            #expect(try table.frames(at: base).map { table.string($0.function) } == ["first"])
            #expect(try table.frames(at: base + span - 1).map { table.string($0.function) } == ["last"])
            #expect(try table.frames(at: base + span).isEmpty)
            #expect(try table.frames(at: base - 1).isEmpty)
        }
    }

    @Test func neighbouringRowsWithTheSameLocationShareOneRange() throws {
        var model = SymbolModel(module: Self.module)
        let name = model.appendString("f")
        model.ranges = [AddressRange(start: 0, end: 0x40)]
        model.scopes = [Scope(name: name, firstRange: 0, rangeCount: 1)]
        model.lines = (0..<16).map { LineRow(address: UInt64($0) * 4, file: 0, line: $0 < 8 ? 1 : 2) }
            + [LineRow(address: 0x40, file: 0, line: 0, isEndSequence: true)]
        let table = try SymbolTable(bytes: SymbolTableWriter.write(model))
        #expect(table.statistics.ranges == 3)  // line 1, line 2, the gap after
        #expect(table.statistics.scopeRecords == 1)
    }

    @Test func stringsAreDeduplicatedByBytes() throws {
        var model = SymbolModel(module: Self.module)
        // The same text at three indices, and two canonically equal spellings of "café".
        let names = ["dup", "dup", "dup", "caf\u{E9}", "cafe\u{301}"].map { model.appendString($0) }
        model.symbols = names.enumerated().map { SymbolEntry(name: $1, address: UInt64($0) * 0x10, size: 4) }
        let table = try SymbolTable(bytes: SymbolTableWriter.write(model))
        #expect(table.statistics.names == 3)
        #expect(table.statistics.strings == 5)  // "", "dup", two cafés, the module name "m"
        let cafes = try [0x30, 0x40].map { try Array(table.string(table.frames(at: $0)[0].function).utf8) }
        #expect(cafes == [Array("caf\u{E9}".utf8), Array("cafe\u{301}".utf8)])
    }

    @Test func deepInlineNestingIsHandledWithoutRecursion() throws {
        var model = SymbolModel(module: Self.module)
        let name = model.appendString("f")
        let depth = 50_000
        model.ranges = [AddressRange(start: 0x1000, end: 0x2000)]
        model.scopes = (0..<depth).map { index in
            Scope(name: name, parent: index == 0 ? Scope.noParent : UInt32(index - 1), firstRange: 0, rangeCount: 1,
                  callLine: UInt32(index))
        }
        let table = try SymbolTable(bytes: SymbolTableWriter.write(model))
        var lines: [UInt32] = []
        #expect(try table.forEachFrame(at: 0x1800) { lines.append($0.line) } == depth)
        // Frame k (k > 0) is at the call site of scope depth-k, whose call line is depth-k.
        #expect(lines.first == 0)
        #expect(lines.last == 1)
        #expect(lines.dropFirst().elementsEqual((1..<depth).reversed().map { UInt32($0) }))
    }

    @Test func callerChainsDoNotMultiplyWithSymbols() throws {
        // A deep inline chain under many symbols: each symbol renames the physical frame, but the
        // call-site chain is shared, so the table grows with depth + symbols, not depth x symbols.
        var model = SymbolModel(module: Self.module)
        let name = model.appendString("f")
        let depth = 2_000
        let symbols = 2_000
        model.ranges = [AddressRange(start: 0x1000, end: 0x1000 + UInt64(symbols))]
        model.scopes = (0..<depth).map { index in
            Scope(name: name, parent: index == 0 ? Scope.noParent : UInt32(index - 1), firstRange: 0, rangeCount: 1)
        }
        model.symbols = (0..<symbols).map { index in
            SymbolEntry(name: model.appendString("symbol\(index)"), address: 0x1000 + UInt64(index), size: 1)
        }
        let table = try SymbolTable(bytes: SymbolTableWriter.write(model))
        #expect(table.statistics.sourceLocations == depth - 1)
        #expect(table.statistics.scopeRecords == symbols)
        for index in [0, 1, symbols / 2, symbols - 1] {
            let frames = try table.frames(at: 0x1000 + UInt64(index))
            #expect(frames.count == depth)
            #expect(frames.last.map { table.string($0.function) } == "symbol\(index)")
            #expect(frames.dropLast().allSatisfy { table.string($0.function) == "f" && $0.isInlined })
        }
    }

    @Test func tablesAreSmallerThanSymCacheWouldBe() throws {
        let model = RealisticModel.model(functions: 400, seed: 11)
        let bytes = try SymbolTableWriter.write(model)
        let table = try SymbolTable(bytes: bytes)
        // SymCache v7+ (getsentry/symbolic raw.rs): 80-byte header, 12-byte files, 16-byte functions,
        // a 4-byte range start plus a 16-byte source location for every range, 4-byte string length
        // prefixes. It has no columns, so count its ranges on the same model with columns zeroed.
        var columnless = model
        for index in columnless.lines.indices { columnless.lines[index].column = 0 }
        for index in columnless.scopes.indices { columnless.scopes[index].callColumn = 0 }
        let symcacheShaped = try SymbolTable(bytes: SymbolTableWriter.write(columnless)).statistics
        let layout = try TestLayout(bytes)
        let stringBytes = bytes.count - layout.strings
        let symcacheLowerBound = 80 + 12 * symcacheShaped.files + 16 * symcacheShaped.names
            + 20 * symcacheShaped.ranges + stringBytes + 3 * table.statistics.strings
        #expect(bytes.count < symcacheLowerBound)
        // Scope and call-site records are shared by many ranges.
        #expect(table.statistics.scopeRecords + table.statistics.sourceLocations < table.statistics.ranges / 4)
    }

    @Test func largerModelsRoundTrip() throws {
        let model = RealisticModel.model(functions: 300, seed: 5)
        let table = try SymbolTable(bytes: SymbolTableWriter.write(model))
        let oracle = ModelOracle(model)
        var random = SplitMix64(seed: 99)
        let low = model.ranges.map(\.start).min() ?? 0
        let high = model.ranges.map(\.end).max() ?? 0
        for _ in 0..<300 {
            let address = random.u64(low - 4...high + 4)
            #expect(try table.plainFrames(at: address) == oracle.frames(at: address))
        }
    }
}
