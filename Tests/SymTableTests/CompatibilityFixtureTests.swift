import SymBytes
import SymTable
import Testing

/// The committed tables of every version must stay readable, and the writer must keep producing
/// the current version's (v3) byte for byte: a format change is deliberate (a new version and
/// fixture), never an accident.
///
/// Regenerate the v3 fixture after a deliberate change with
/// `CRASHSYM_RECORD=1 swift test --filter CompatibilityFixtureTests` (v1 and v2 are no longer written).
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

    /// The v3 fixture: the sample model with its layout, and the stored forms.
    static func v3Sample() throws -> [UInt8] {
        var model = SampleModel.model()
        model.module.layout = sampleLayout
        return try SymbolTableWriter.write(model, storedNames: SampleForms())
    }

    @Test func writerReproducesTheV3Fixture() throws {
        let bytes = try Self.v3Sample()
        if TemporaryFile.environment("CRASHSYM_RECORD") == "1" {
            try TemporaryFile.writeFile(bytes, to: Self.v3Path)
        }
        let file = try MappedFile(path: Self.v3Path)
        #expect(Array(file.bytes) == bytes, "the writer no longer produces v3-sample.csym; see docs/csym-format.md")
    }

    /// The v2 table (no layout record) reads as it did: its sections are the v3 writer's, byte
    /// for byte, apart from the header, the directory and the layout record.
    @Test func v2FixtureStillOpensWithoutALayout() throws {
        let table = try SymbolTable(file: MappedFile(path: Self.v2Path))
        #expect(table.byteCount == 498 && table.module.layout == nil)
        let file = try MappedFile(path: Self.v2Path)
        let v2 = withExtendedLifetime(file) { Array(file.bytes) }
        #expect(v2[4] == 2 && v2[11] == 9)
        let v3 = try SymbolTableWriter.write(SampleModel.model(), storedNames: SampleForms())
        #expect(v3[4] == 3 && v3[11] == 10)
        #expect(Array(v3[248...]) == Array(v2[232...]))
    }

    @Test func v3FixtureRecordsTheLayout() throws {
        let table = try SymbolTable(file: MappedFile(path: Self.v3Path))
        #expect(table.module.layout == Self.sampleLayout)
        #expect(table.module.layout?.codeRanges == [0x1000..<0x2000])
        // 498 bytes of v2, 16 more of directory, 24 + 2 × 32 of layout record.
        #expect(table.byteCount == 498 + 16 + 24 + 64)
    }

    /// The v1 table answers as it did, and stores no demangled names.
    @Test func v1FixtureStillOpensAndAnswers() throws {
        let table = try SymbolTable(file: MappedFile(path: Self.v1Path))
        #expect(table.byteCount == 423)
        #expect(!table.hasStoredDemangledNames)
        var scratch = DecompressionScratch()
        let block = try table.demangledNames(inBlockOf: 1, into: &scratch)
        #expect(!block.hasNames && block.name(ofRecord: 1) == nil)
        // Its v1 header: 216 bytes, 8 sections, reserved byte 0; the v3 writer's sections after
        // the header (and its 4 bytes of empty demangled names; no layout) are the same bytes.
        let file = try MappedFile(path: Self.v1Path)
        let v1 = withExtendedLifetime(file) { Array(file.bytes) }
        #expect(v1[4] == 1 && v1[11] == 8 && v1[19] == 0)
        let v3 = try SymbolTableWriter.write(SampleModel.model())
        #expect(Array(v3[(248 + 4)...]) == Array(v1[216...]))
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
        //   header and section directory (10 entries)              248
        //   demangled names: nothing stored, one offset              4
        //   build-id                                               20
        //   8 range starts, compact (4 bytes)                      32  0x1000 0x1010 0x1014 0x1018 0x1020 0x1040 0x1048, gap 0x1050
        //   8 range records (file, line, column, scope)            32
        //   4 scope records (name, physical name, caller)          12  main; helper, inner (physical shown as "main"); _start
        //   2 call-site records (file, line, column, name, caller)  10  main.c:10:5 sample_main, helper.h:3:7 helper
        //   4 files (directory, name)                               8  ??, main.c, helper.h, start.S
        //   5 function names                                        5  main, _Z6helperi, sample_main, _Z5innerv, _start
        //   strings: 11 strings, 77 bytes + 11 length bytes        88
        //   module layout: none recorded                            0
        #expect(bytes.count == 248 + 4 + 20 + 32 + 32 + 12 + 10 + 8 + 5 + 88)
        let statistics = try SymbolTable(bytes: bytes).statistics
        #expect(statistics == SymbolTable.Statistics(
            functions: 1, inlinedScopes: 2, lineRows: 8, symbols: 2, ranges: 8, scopeRecords: 4, sourceLocations: 2,
            files: 4, names: 5, strings: 11, byteCount: 459))
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

    @Test(arguments: ["v1-sample.csym", "v2-sample.csym", "v3-sample.csym"])
    func fixtureLookups(fixture: String) throws {
        let table = try SymbolTable(file: MappedFile(path: Self.fixturePath(fixture)))
        #expect(table.module == ModuleIdentity(buildID: Array(0..<20), machine: 62, is64Bit: true, name: "libsample.so",
                                               layout: fixture == "v3-sample.csym" ? Self.sampleLayout : nil))
        #expect(table.module.buildIDHex == "000102030405060708090a0b0c0d0e0f10111213")
        for (address, expected) in Self.expectations {
            #expect(try table.plainFrames(at: address).map(\.description) == expected, "at 0x\(String(address, radix: 16))")
        }
    }
}
