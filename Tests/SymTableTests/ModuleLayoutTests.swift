import SymBytes
import SymTable
import Testing

/// The module layout record of `.csym` v3: written and read back as given, absent when not
/// known, and refused (never trusted, never a trap) when its counts or reserved fields lie.
@Suite struct ModuleLayoutTests {
    static let layout = ModuleLayout(mappingBase: 0x400000, mappingOffset: 0, segments: [
        .init(virtualAddress: 0x400000, memorySize: 0x5f0, fileOffset: 0, flags: 4),
        .init(virtualAddress: 0x401000, memorySize: 0x2a5, fileOffset: 0x1000, flags: 5),
        .init(virtualAddress: 0x403e10, memorySize: 0x230, fileOffset: 0x2e10, flags: 6),
    ])

    static func table(_ layout: ModuleLayout?) throws -> [UInt8] {
        var model = SampleModel.model()
        model.module.layout = layout
        return try SymbolTableWriter.write(model)
    }

    /// The record's offset and size, from the directory's tenth entry.
    static func extent(_ bytes: [UInt8]) -> (offset: Int, size: Int) {
        func value(_ at: Int) -> Int { (0..<8).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } }
        return (value(88 + 9 * 16), value(88 + 9 * 16 + 8))
    }

    @Test func theLayoutRoundTrips() throws {
        let table = try SymbolTable(bytes: try Self.table(Self.layout))
        #expect(table.module.layout == Self.layout)
        #expect(table.module.layout?.codeRanges == [0x401000..<0x4012a5])
        #expect(try SymbolTable(bytes: try Self.table(nil)).module.layout == nil)
        let empty = ModuleLayout(mappingBase: 0x1000, mappingOffset: 0x1000, segments: [])
        #expect(try SymbolTable(bytes: try Self.table(empty)).module.layout == empty)
        #expect(Self.extent(try Self.table(Self.layout)).size == 24 + 3 * 32)
    }

    @Test func aSegmentReachingTheTopOfTheAddressSpaceDoesNotWrap() {
        let segment = ModuleLayout.Segment(virtualAddress: UInt64.max - 4, memorySize: 100, fileOffset: 0, flags: 5)
        #expect(segment.addresses == (UInt64.max - 4)..<UInt64.max)
    }

    /// Counts that do not fill the section, reserved fields set, a section too small: refused.
    @Test func aLyingRecordIsRefused() throws {
        let bytes = try Self.table(Self.layout)
        let (offset, _) = Self.extent(bytes)
        for (field, value) in [(offset + 16, UInt8(4)), (offset + 16, 2), (offset + 19, 0x80), (offset + 20, 1),
                               (offset + 24 + 28, 1), (offset + 24 + 64 + 31, 1)] {
            var hostile = bytes
            hostile[field] = value
            #expect(throws: FormatError.self, "byte \(field - offset) of the record = \(value)") { try SymbolTable(bytes: hostile) }
        }
        // A section declared shorter than the fixed part.
        var short = bytes
        short[88 + 9 * 16 + 8] = 8
        #expect(throws: FormatError.self) { try SymbolTable(bytes: short) }
    }

    /// Every truncation of a table with a layout throws, never traps.
    @Test func everyTruncationThrows() throws {
        let bytes = try Self.table(Self.layout)
        for length in 0..<bytes.count {
            #expect(throws: FormatError.self) { try SymbolTable(bytes: Array(bytes.prefix(length))) }
        }
    }
}
