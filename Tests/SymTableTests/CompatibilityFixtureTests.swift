import SymBytes
import SymTable
import Testing

/// The committed tables of every version must stay readable, and the writer must keep producing
/// the current version's (v5) byte for byte: a format change is deliberate (a new version and
/// fixture), never an accident.
///
/// Regenerate the v5 fixture after a deliberate change with
/// `CRASHSYM_RECORD=1 swift test --filter CompatibilityFixtureTests` (v1 to v4 are no longer written).
@Suite(.serialized) struct CompatibilityFixtureTests {
    static func fixturePath(_ name: String) -> String {
        // Tests/SymTableTests/<this file> -> package root.
        var parts = String(#filePath).split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/") + "/Fixtures/csym/" + name
    }

    static let v1Path = fixturePath("v1-sample.csym")
    static let v2Path = fixturePath("v2-sample.csym")
    static let v3Path = fixturePath("v3-sample.csym")
    static let v4Path = fixturePath("v4-sample.csym")
    static let v5Path = fixturePath("v5-sample.csym")

    /// The layout the v3 fixture records: a module linked at 0x400000 (its code, at 0x1000 in
    /// the sample model, is in the second, executable segment).
    static let sampleLayout = ModuleLayout(mappingBase: 0x400000 & ~0xfff, mappingOffset: 0, segments: [
        .init(virtualAddress: 0x0, memorySize: 0x1000, fileOffset: 0, flags: 4),
        .init(virtualAddress: 0x1000, memorySize: 0x1000, fileOffset: 0x1000, flags: 5),
    ])

    /// The stored forms of the v2 fixture: `c++filt`'s demangling of the sample's two C++ names
    /// (the writer stores whatever its provider gives; crashsym's converter gives Swift names only).
    struct SampleForms: StoredNameProvider {
        static let forms = ["_Z6helperi": "helper(int)", "_Z5innerv": "inner()"]

        func withStoredForm(of name: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
            guard var form = Self.forms[String(decoding: name, as: UTF8.self)] else { return }
            form.withUTF8 { body(UnsafeRawBufferPointer($0)) }
        }
    }

    /// The unwind rules the v4 fixture stores, x86_64 style over the sample's code at
    /// 0x1000..<0x1050: a prologue (push rbp; mov rsp, rbp), a body by rbp, a stretch whose CFA is
    /// an expression (no rule: absent from the table), and a signal trampoline with every kind of
    /// register rule.
    static func sampleUnwindRules() -> UnwindRules? {
        let ra = StoredRegisterRule(register: 16, kind: .offset, value: -8)
        let rbp = StoredRegisterRule(register: 6, kind: .offset, value: -16)
        var builder = UnwindRules.Builder()
        builder.add(0x1000..<0x1001, rule: StoredUnwindRule(isSignalFrame: false, returnAddressRegister: 16, cfaRegister: 7,
                                                            cfaOffset: 8, registers: [ra]))
        builder.add(0x1001..<0x1004, rule: StoredUnwindRule(isSignalFrame: false, returnAddressRegister: 16, cfaRegister: 7,
                                                            cfaOffset: 16, registers: [rbp, ra]))
        builder.add(0x1004..<0x1020, rule: StoredUnwindRule(isSignalFrame: false, returnAddressRegister: 16, cfaRegister: 6,
                                                            cfaOffset: 16, registers: [rbp, ra]))
        // Same rule, adjacent: merges with the range before.
        builder.add(0x1020..<0x1040, rule: StoredUnwindRule(isSignalFrame: false, returnAddressRegister: 16, cfaRegister: 6,
                                                            cfaOffset: 16, registers: [rbp, ra]))
        builder.add(0x1040..<0x1048, rule: nil)
        builder.add(0x1048..<0x1050, rule: sampleSignalRule)
        return builder.finish()
    }

    static let sampleSignalRule = StoredUnwindRule(isSignalFrame: true, returnAddressRegister: 16, cfaRegister: 7, cfaOffset: 160, registers: [
        StoredRegisterRule(register: 3, kind: .unknown),
        StoredRegisterRule(register: 7, kind: .valueOffset, value: 0),
        StoredRegisterRule(register: 12, kind: .register, value: 13),
        StoredRegisterRule(register: 13, kind: .sameValue),
        StoredRegisterRule(register: 14, kind: .undefined),
    ])

    /// The v3 fixture's model: the sample model with its layout (and, written, the stored forms).
    static func v3Model() -> SymbolModel {
        var model = SampleModel.model()
        model.module.layout = sampleLayout
        return model
    }

    /// The v4 fixture's model: the v3 sample with unwind rules.
    static func v4Model() -> SymbolModel {
        var model = v3Model()
        model.module.unwindRules = sampleUnwindRules()
        return model
    }

    /// The v4 fixture's rules as the current writer writes them (the v4 fixture's bytes but the
    /// version field).
    static func v4Sample() throws -> [UInt8] { try SymbolTableWriter.write(v4Model(), storedNames: SampleForms()) }

    /// x86_64 PLT entries' CFA (GNU ld's `.eh_frame` for `.plt`): rsp + 8, and 8 more past the
    /// entry's push (`DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_lit11;
    /// DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus`).
    static let pltCFA: [UInt8] = [0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22]

    /// glibc's x86_64 `__restore_rt`: the CFA is the saved rsp in the `ucontext`
    /// (`DW_OP_breg7 160; DW_OP_deref`), rip saved at rsp + 168 (`DW_OP_breg7 168`), and a
    /// register whose value an expression gives (`DW_OP_breg7 40`).
    static let sampleExpressionSignalRule = StoredUnwindRule(isSignalFrame: true, returnAddressRegister: 16,
                                                             cfaExpression: [0x77, 0xa0, 0x01, 0x06], registers: [
        StoredRegisterRule(register: 3, kind: .unknown),
        StoredRegisterRule(register: 6, kind: .valueExpression, expression: [0x77, 0x28]),
        StoredRegisterRule(register: 12, kind: .register, value: 13),
        StoredRegisterRule(register: 16, kind: .expression, expression: [0x77, 0xa8, 0x01]),
    ])

    /// The unwind rules the v5 fixture stores: the v4 sample's, with the stretch at 0x1040 a PLT
    /// entry (CFA by expression) and a second trampoline at 0x1050..<0x1058 described by
    /// expressions (`sampleExpressionSignalRule`).
    static func sampleV5UnwindRules() -> UnwindRules? {
        let ra = StoredRegisterRule(register: 16, kind: .offset, value: -8)
        let rbp = StoredRegisterRule(register: 6, kind: .offset, value: -16)
        var builder = UnwindRules.Builder()
        builder.add(0x1000..<0x1001, rule: StoredUnwindRule(isSignalFrame: false, returnAddressRegister: 16, cfaRegister: 7,
                                                            cfaOffset: 8, registers: [ra]))
        builder.add(0x1001..<0x1004, rule: StoredUnwindRule(isSignalFrame: false, returnAddressRegister: 16, cfaRegister: 7,
                                                            cfaOffset: 16, registers: [rbp, ra]))
        builder.add(0x1004..<0x1040, rule: StoredUnwindRule(isSignalFrame: false, returnAddressRegister: 16, cfaRegister: 6,
                                                            cfaOffset: 16, registers: [rbp, ra]))
        builder.add(0x1040..<0x1048, rule: StoredUnwindRule(isSignalFrame: false, returnAddressRegister: 16, cfaExpression: pltCFA,
                                                            registers: [ra]))
        builder.add(0x1048..<0x1050, rule: sampleSignalRule)
        builder.add(0x1050..<0x1058, rule: sampleExpressionSignalRule)
        return builder.finish()
    }

    /// The v5 fixture: the v3 sample with the v5 unwind rules.
    static func v5Sample() throws -> [UInt8] {
        var model = v3Model()
        model.module.unwindRules = sampleV5UnwindRules()
        return try SymbolTableWriter.write(model, storedNames: SampleForms())
    }

    @Test func writerReproducesTheV5Fixture() throws {
        let bytes = try Self.v5Sample()
        if TemporaryFile.environment("CRASHSYM_RECORD") == "1" {
            try TemporaryFile.writeFile(bytes, to: Self.v5Path)
        }
        let file = try MappedFile(path: Self.v5Path)
        #expect(Array(file.bytes) == bytes, "the writer no longer produces v5-sample.csym; see docs/csym-format.md")
    }

    /// The v4 table (rules without expressions) reads as it did: the v5 writer writes the same
    /// rules into the same bytes but the version field.
    @Test func v4FixtureStillOpensAsTheV5WriterWritesItsRules() throws {
        let file = try MappedFile(path: Self.v4Path)
        let v4 = withExtendedLifetime(file) { Array(file.bytes) }
        let v5 = try SymbolTableWriter.write(Self.v4Model(), storedNames: SampleForms())
        #expect(v4[4] == 4 && v5[4] == 5 && v4.count == v5.count)
        let (old, current) = (Self.withoutNames(v4), Self.withoutNames(v5))
        #expect(Array(old[0..<4]) == Array(current[0..<4]) && Array(old[5...]) == Array(current[5...]))
    }

    @Test func v5FixtureStoresTheExpressions() throws {
        let table = try SymbolTable(file: MappedFile(path: Self.v5Path))
        #expect(table.hasUnwindRules && table.module.layout == Self.sampleLayout)
        // The v4 rules' section (184 bytes) with the PLT rule (10 + 7 fixed, 11 of expression,
        // one more offset) and the trampoline's (10 + 4 × 7 fixed, 4 + 2 + 3 of expressions, one
        // more offset, one more range start and field).
        #expect(table.byteCount == 802 + (17 + 11 + 4) + (38 + 9 + 4) + 4 + 1)
        let plt = try #require(try table.storedUnwindRule(at: 0x1047))
        #expect(plt.addresses == 0x1040..<0x1048 && plt.rule.cfaExpression == Self.pltCFA && plt.rule.cfaOffset == 0)
        let record = try #require(try table.unwindRule(at: 0x1040))
        #expect(record.cfaIsExpression && record.registerCount == 1)
        #expect(try table.storedUnwindRule(at: 0x104F)?.rule == Self.sampleSignalRule)
        let trampoline = try #require(try table.storedUnwindRule(at: 0x1050))
        #expect(trampoline.addresses == 0x1050..<0x1058 && trampoline.rule == Self.sampleExpressionSignalRule)
        #expect(try table.registerRule(3, of: try #require(try table.unwindRule(at: 0x1057))).expression == [0x77, 0xa8, 0x01])
        #expect(try table.unwindRule(at: 0x1058) == nil)
    }

    @Test("A version 4 table whose rule claims an expression is refused, not read past its record")
    func v4RecordWithAnExpressionIsRefused() throws {
        var bytes = try Self.v5Sample()
        bytes[4] = 4
        let table = try SymbolTable(bytes: bytes)
        #expect(try table.unwindRule(at: 0x1000) != nil)
        #expect(throws: FormatError.self) { try table.unwindRule(at: 0x1040) }
        #expect(throws: FormatError.self) { try table.storedUnwindRule(at: 0x1050) }
    }

    /// The v3 table (no unwind rules) reads as it did: its sections are the v5 writer's, byte for
    /// byte, apart from the header and directory.
    @Test func v3FixtureStillOpensWithoutUnwindRules() throws {
        let table = try SymbolTable(file: MappedFile(path: Self.v3Path))
        #expect(table.byteCount == 602 && !table.hasUnwindRules)
        #expect(try table.unwindRule(at: 0x1000) == nil)
        let file = try MappedFile(path: Self.v3Path)
        let v3 = withExtendedLifetime(file) { Array(file.bytes) }
        #expect(v3[4] == 3 && v3[11] == 10)
        let current = try SymbolTableWriter.write(Self.v3Model(), storedNames: SampleForms())
        #expect(current[4] == 5 && current[11] == 11)
        #expect(Array(Self.withoutNames(current)[264...]) == Array(Self.withoutNames(v3)[248...]))
    }

    @Test func v4FixtureStoresTheUnwindRules() throws {
        let table = try SymbolTable(file: MappedFile(path: Self.v4Path))
        #expect(table.hasUnwindRules && table.module.layout == Self.sampleLayout)
        // 602 bytes of v3, 16 more of directory, and the unwind rules derived by hand: header 24,
        // 5 ranges (0x1000, 0x1001, 0x1004, 0x1040 none, 0x1048; 0x1050 none) are 6 starts of
        // 4 bytes and 6 rule fields of 1, 4 rules + 1 offsets of 4, rule data 17 + 24 + 24 + 45.
        #expect(table.byteCount == 602 + 16 + 24 + 6 * 4 + 6 + 5 * 4 + (17 + 24 + 24 + 45))
        let prologue = try #require(try table.storedUnwindRule(at: 0x1000))
        #expect(prologue.addresses == 0x1000..<0x1001 && prologue.rule.cfaRegister == 7 && prologue.rule.cfaOffset == 8)
        #expect(prologue.rule.registers == [StoredRegisterRule(register: 16, kind: .offset, value: -8)])
        #expect(try table.storedUnwindRule(at: 0x1003)?.addresses == 0x1001..<0x1004)
        let body = try #require(try table.storedUnwindRule(at: 0x103F))
        #expect(body.addresses == 0x1004..<0x1040 && body.rule.cfaRegister == 6 && body.rule.registers.count == 2)
        #expect(try table.unwindRule(at: 0x1040) == nil && table.unwindRule(at: 0x1047) == nil)
        let signal = try #require(try table.storedUnwindRule(at: 0x104F))
        #expect(signal.addresses == 0x1048..<0x1050 && signal.rule == Self.sampleSignalRule)
        #expect(try table.unwindRule(at: 0x1050) == nil && table.unwindRule(at: 0xFFF) == nil
                && table.unwindRule(at: 0) == nil && table.unwindRule(at: .max) == nil)
    }

    /// The v2 table (no layout record) reads as it did: its sections are the v3 writer's, byte
    /// for byte, apart from the header, the directory and the layout record.
    @Test func v2FixtureStillOpensWithoutALayout() throws {
        let table = try SymbolTable(file: MappedFile(path: Self.v2Path))
        #expect(table.byteCount == 498 && table.module.layout == nil)
        let file = try MappedFile(path: Self.v2Path)
        let v2 = withExtendedLifetime(file) { Array(file.bytes) }
        #expect(v2[4] == 2 && v2[11] == 9)
        let current = try SymbolTableWriter.write(SampleModel.model(), storedNames: SampleForms())
        #expect(current[4] == 5 && current[11] == 11)
        #expect(Array(Self.withoutNames(current)[264...]) == Array(Self.withoutNames(v2)[232...]))
    }

    @Test(arguments: ["v3-sample.csym", "v4-sample.csym", "v5-sample.csym"])
    func fixtureRecordsTheLayout(fixture: String) throws {
        let table = try SymbolTable(file: MappedFile(path: Self.fixturePath(fixture)))
        #expect(table.module.layout == Self.sampleLayout)
        #expect(table.module.layout?.codeRanges == [0x1000..<0x2000])
        // 498 bytes of v2, 16 more of directory, 24 + 2 × 32 of layout record.
        if fixture == "v3-sample.csym" { #expect(table.byteCount == 498 + 16 + 24 + 64) }
    }

    /// The v1 table answers as it did, and stores no demangled names.
    @Test func v1FixtureStillOpensAndAnswers() throws {
        let table = try SymbolTable(file: MappedFile(path: Self.v1Path))
        #expect(table.byteCount == 423)
        #expect(!table.hasStoredDemangledNames)
        var scratch = DecompressionScratch()
        let block = try table.demangledNames(inBlockOf: 1, into: &scratch)
        #expect(!block.hasNames && block.name(ofRecord: 1) == nil)
        // Its v1 header: 216 bytes, 8 sections, reserved byte 0; the v5 writer's sections after
        // the header (and its 4 bytes of empty demangled names; no layout, no unwind rules) are the same bytes.
        let file = try MappedFile(path: Self.v1Path)
        let v1 = withExtendedLifetime(file) { Array(file.bytes) }
        #expect(v1[4] == 1 && v1[11] == 8 && v1[19] == 0)
        let current = try SymbolTableWriter.write(SampleModel.model())
        #expect(Array(Self.withoutNames(current)[(264 + 4)...]) == Array(Self.withoutNames(v1)[216...]))
    }

    @Test func v2FixtureStoresTheGivenForms() throws {
        let table = try SymbolTable(file: MappedFile(path: Self.v2Path))
        #expect(table.hasStoredDemangledNames && table.demangledBlockSize == 64)
        var scratch = DecompressionScratch()
        var stored: [String: String] = [:]
        for index in 0..<UInt32(table.statistics.names) {
            let block = try table.demangledNames(inBlockOf: index, into: &scratch)
            #expect(block.first == 0 && block.count == 5)
            if let form = block.name(ofRecord: index) {
                stored[table.string(try table.functionName(index))] = String(decoding: form, as: UTF8.self)
            }
        }
        #expect(stored == SampleForms.forms)
    }

    @Test func sampleSizeFollowsTheDocumentedLayout() throws {
        let bytes = try SymbolTableWriter.write(SampleModel.model())
        // Derived by hand from the sample model and docs/csym-format.md. Every field is 1 byte wide
        // (at most 5 names, 4 files and scope records; lines <= 11, columns <= 9; callers <= 3).
        //   header and section directory (11 entries)              264
        //   demangled names: nothing stored, one offset              4
        //   build-id                                               20
        //   8 range starts, compact (4 bytes)                      32  0x1000 0x1010 0x1014 0x1018 0x1020 0x1040 0x1048, gap 0x1050
        //   8 range records (file, line, column, scope)            32
        //   4 scope records (name, physical name, caller)          12  sample_main shown as main; helper, inner (physical shown as "main"); _start
        //   2 call-site records (file, line, column, name, caller)  10  main.c:10:5 sample_main, helper.h:3:7 helper
        //   4 files (directory, name)                               8  ??, main.c, helper.h, start.S
        //   5 function names                                        5  main, sample_main, _Z6helperi, _Z5innerv, _start
        //   strings: 11 strings, 77 bytes + 11 length bytes        88
        //   module layout: none recorded                            0
        //   unwind rules: none                                      0
        #expect(bytes.count == 264 + 4 + 20 + 32 + 32 + 12 + 10 + 8 + 5 + 88)
        let statistics = try SymbolTable(bytes: bytes).statistics
        #expect(statistics == SymbolTable.Statistics(
            functions: 1, inlinedScopes: 2, lineRows: 8, symbols: 2, ranges: 8, scopeRecords: 4, sourceLocations: 2,
            files: 4, names: 5, strings: 11, byteCount: 475))
    }

    /// `bytes` (a table of any version) with the sections that hold names or point into them
    /// zeroed (scope and call-site records, files, function names, strings, demangled names), by
    /// its own section directory: since conversion 11 the writer keeps the DWARF name of a
    /// physical frame that a symbol renames (the sample's `sample_main` under `main`), which
    /// moves the names' first-use order and so their indices and offsets (same sizes); the other
    /// sections (build-id, range starts and records, layout, unwind rules) must stay byte for
    /// byte, and `fixtureLookups` checks that the old fixtures still answer as documented.
    static func withoutNames(_ bytes: [UInt8]) -> [UInt8] {
        var result = bytes
        func field(_ offset: Int) -> Int {
            (0..<8).reduce(0) { $0 | Int(bytes[offset + $1]) << (8 * $1) }
        }
        for section in 3...min(8, Int(bytes[11]) - 1) {
            let entry = 88 + 16 * section
            let (start, size) = (field(entry), field(entry + 8))
            for index in start..<(start + size) { result[index] = 0 }
        }
        return result
    }

    /// The physical frame's DWARF name beside the symbol's (conversion 11): the current writer
    /// keeps `sample_main` under the symbol `main`, in the innermost frame and at the end of an
    /// inline chain; tables written before keep only the symbol's name there.
    @Test func physicalFramesKeepTheirDWARFName() throws {
        let table = try SymbolTable(bytes: try Self.v5Sample())
        for address: UInt64 in [0x1000, 0x1030] {
            let frame = try #require(try table.frames(at: address).last)
            #expect(table.string(frame.function) == "main" && table.string(frame.scopeFunction) == "sample_main")
        }
        let chain = try table.frames(at: 0x1016)
        #expect(chain.map { table.string($0.function) } == ["_Z5innerv", "_Z6helperi", "main"])
        #expect(chain.map { table.string($0.scopeFunction) } == ["_Z5innerv", "_Z6helperi", "sample_main"])
        let symbolOnly = try #require(try table.frames(at: 0x1044).first)
        #expect(table.string(symbolOnly.scopeFunction) == "_start")
        for fixture in ["v1-sample.csym", "v4-sample.csym"] {
            let old = try SymbolTable(file: MappedFile(path: Self.fixturePath(fixture)))
            let frame = try #require(try old.frames(at: 0x1000).last)
            #expect(old.string(frame.function) == "main" && old.string(frame.scopeFunction) == "main")
            #expect(try old.frames(at: 0x1016).last.map { old.string($0.scopeFunction) } == "sample_main")
        }
    }

    /// Expected frames, derived by hand from the sample model and the lookup rules.
    static let expectations: [(address: UInt64, frames: [String])] = [
        (0x0FFF, []),
        (0x1000, ["main /src|main.c:5:1"]),
        (0x100F, ["main /src|main.c:5:1"]),
        (0x1012, ["_Z6helperi /src|helper.h:2:3 inlined", "main /src|main.c:10:5"]),
        (0x1016, ["_Z5innerv /src|helper.h:3:9 inlined", "_Z6helperi /src|helper.h:3:7 inlined", "main /src|main.c:10:5"]),
        (0x101F, ["_Z6helperi /src|helper.h:4:1 inlined", "main /src|main.c:10:5"]),
        (0x1030, ["main /src|main.c:11:1"]),
        (0x1044, ["_start /src|start.S:1:0 symbol-only"]),
        (0x104F, ["_start |:0:0 symbol-only"]),
        (0x1050, []),
        (UInt64.max, []),
    ]

    @Test(arguments: ["v1-sample.csym", "v2-sample.csym", "v3-sample.csym", "v4-sample.csym", "v5-sample.csym"])
    func fixtureLookups(fixture: String) throws {
        let table = try SymbolTable(file: MappedFile(path: Self.fixturePath(fixture)))
        #expect(table.module == ModuleIdentity(buildID: Array(0..<20), machine: 62, is64Bit: true, name: "libsample.so",
                                               layout: fixture >= "v3-sample.csym" ? Self.sampleLayout : nil))
        #expect(table.module.buildIDHex == "000102030405060708090a0b0c0d0e0f10111213")
        for (address, expected) in Self.expectations {
            #expect(try table.plainFrames(at: address).map(\.description) == expected, "at 0x\(String(address, radix: 16))")
        }
    }
}
