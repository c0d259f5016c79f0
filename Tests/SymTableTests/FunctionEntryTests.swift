import SymTable
import Testing

/// `SymbolTable.address(ofFunction:offset:)`: a function's entry found by name in the table alone
/// (how a glibc backtrace's `func+0x…` frame is placed without the ELF file).
@Suite struct FunctionEntryTests {
    @Test("names the physical frame shows are found at their start; inlined, overridden and dropped names are not")
    func sample() throws {
        let table = try SymbolTable(bytes: try SymbolTableWriter.write(SampleModel.model()))
        // `main` (the symbol's name over DWARF's `sample_main`) runs 0x1000..<0x1040, inlined ranges included.
        #expect(try table.address(ofFunction: "main", offset: 0) == 0x1000)
        #expect(try table.address(ofFunction: "main", offset: 0x14) == 0x1014)
        // A return address one past the function (a call that ends it) is still the function's.
        #expect(try table.address(ofFunction: "main", offset: 0x40) == 0x1040)
        #expect(try table.address(ofFunction: "main", offset: 0x41) == nil)
        #expect(try table.address(ofFunction: "_start", offset: 4) == 0x1044)
        // The alias the symbol de-duplication dropped, the DWARF name the symbol replaced and an
        // inlined function are no physical frame's name.
        #expect(try table.address(ofFunction: "__alias", offset: 0) == nil)
        #expect(try table.address(ofFunction: "sample_main", offset: 0) == nil)
        #expect(try table.address(ofFunction: "_Z6helperi", offset: 0) == nil)
        #expect(try table.address(ofFunction: "", offset: 0) == nil)
        #expect(try table.address(ofFunction: "mai", offset: 0) == nil)
    }

    /// A function with a cold part placed before it (gcc's `.text.unlikely`), and two static
    /// functions of one name, all by DWARF alone (no symbols).
    static func splitModel() -> SymbolModel {
        var model = SymbolModel(module: ModuleIdentity(buildID: [1, 2, 3, 4], machine: 62, is64Bit: true, name: "split"))
        let f = model.appendString("f")
        let g = model.appendString("g")
        let g2 = model.appendString("g")  // not interned here: the writer deduplicates by bytes
        let h = model.appendString("h")
        model.ranges = [AddressRange(start: 0x1100, end: 0x1120), AddressRange(start: 0x3000, end: 0x3100),
                        AddressRange(start: 0x4000, end: 0x4010), AddressRange(start: 0x5000, end: 0x5100),
                        AddressRange(start: 0x5100, end: 0x5180)]
        model.scopes = [Scope(name: f, firstRange: 0, rangeCount: 2), Scope(name: g, firstRange: 2, rangeCount: 1),
                        Scope(name: g2, firstRange: 3, rangeCount: 1), Scope(name: h, firstRange: 4, rangeCount: 1)]
        return model
    }

    @Test("of several functions of one name, the one the offset reaches; none when several do")
    func severalRuns() throws {
        let table = try SymbolTable(bytes: try SymbolTableWriter.write(Self.splitModel()))
        // Only the main part of `f` is long enough for 0x80; 0x10 lies in both parts.
        #expect(try table.address(ofFunction: "f", offset: 0x80) == 0x3080)
        #expect(try table.address(ofFunction: "f", offset: 0x10) == nil)
        // A pc tells them apart: the module is loaded at a page-aligned bias, so the low 12 bits
        // of the pc are those of the address.
        #expect(try table.address(ofFunction: "f", offset: 0x10, loadedAt: 0x7f00_1234_5010) == 0x3010)
        #expect(try table.address(ofFunction: "f", offset: 0x10, loadedAt: 0x7f00_1234_5110) == 0x1110)
        #expect(try table.address(ofFunction: "f", offset: 0x10, loadedAt: 0x7f00_1234_5111) == nil)
        #expect(try table.address(ofFunction: "g", offset: 0x50) == 0x5050)
        #expect(try table.address(ofFunction: "g", offset: 0) == nil)
        // `h` directly follows the second `g`: runs end where the name changes.
        #expect(try table.address(ofFunction: "h", offset: 0x10) == 0x5110)
        #expect(try table.address(ofFunction: "g", offset: 0x101) == nil)
    }

    @Test("on random models, every answer is a range start plus the offset, and its physical frame has that name")
    func randomModels() throws {
        var answered = 0
        for seed in UInt64(1)...12 {
            let model = RandomModels.model(seed: seed &* 7919, placement: RandomModels.Placement.allCases[Int(seed % 3)])
            let table = try SymbolTable(bytes: try SymbolTableWriter.write(model))
            var names = Set<String>()
            for index in 0..<model.strings.count { names.insert(model.strings.withBytes(of: index) { String(decoding: $0, as: UTF8.self) }) }
            for name in names.sorted() {
                guard let entry = try table.address(ofFunction: name, offset: 0) else { continue }
                answered += 1
                // The physical (last) frame at the entry bears the name, and the address before
                // it does not (or is in no function).
                #expect(try table.plainFrames(at: entry).last.map { String(decoding: $0.function, as: UTF8.self) } == name,
                        "seed \(seed) \(name)")
                if entry > 0 {
                    let before = try table.plainFrames(at: entry - 1).last.map { String(decoding: $0.function, as: UTF8.self) }
                    #expect(before != name, "seed \(seed) \(name)")
                }
            }
        }
        #expect(answered > 12)
    }
}
