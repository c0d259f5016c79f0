import TestSupport
import SymBytes
import SymTable
import Testing

/// A hostile or corrupt table must give `FormatError` or valid frames: never a trap or a hang.
@Suite struct HostileTableTests {
    /// Valid tables to corrupt: the compatibility sample and random models of each placement.
    static func validTables() throws -> [[UInt8]] {
        var tables = [try SymbolTableWriter.write(SampleModel.model()), try CompatibilityFixtureTests.v4Sample()]
        for seed in UInt64(1)...6 {
            let model = RandomModels.model(seed: seed * 101, placement: RandomModels.Placement.allCases[Int(seed % 3)])
            tables.append(try SymbolTableWriter.write(model))
        }
        return tables
    }

    /// Opens `bytes` and, when that succeeds, looks up `addresses` and resolves every string.
    /// Returns whether the table opened.
    @discardableResult
    static func exercise(_ bytes: [UInt8], addresses: [UInt64]) -> Bool {
        guard let table = try? SymbolTable(bytes: bytes) else { return false }
        let statistics = table.statistics
        _ = table.module
        for address in addresses {
            var frames = 0
            let result = try? table.forEachFrame(at: address) { frame in
                frames += 1
                table.withUTF8(frame.function) { _ in }
                _ = table.string(frame.file) + table.string(frame.directory)
            }
            // Chains point strictly backwards, so no lookup yields more frames than call sites + 1.
            #expect(frames <= statistics.sourceLocations + 1)
            if let result { #expect(result == frames) }
            _ = try? table.range(containing: address)
            if let record = try? table.unwindRule(at: address) {
                for index in 0..<record.registerCount { _ = try? table.registerRule(index, of: record) }
            }
        }
        // Finding functions by name indexes every range, scope and call-site record once.
        for name in ["main", "_start", "f", ""] { _ = try? table.address(ofFunction: name, offset: 4) }
        // Reading chains ahead follows the same corrupt records, and indices out of bounds, quietly.
        var ranges = [Int](repeating: 0, count: addresses.count)
        addresses.withUnsafeBufferPointer { keys in ranges.withUnsafeMutableBufferPointer { table.rangeIndices(keys, into: $0) } }
        ranges += [-1, Int.min, Int.max, statistics.ranges, statistics.ranges - 1, 0]
        var names = [UInt32](repeating: 0, count: 16)
        _ = ranges.withUnsafeBufferPointer { r in names.withUnsafeMutableBufferPointer { table.warmFrames(ofRanges: r, names: $0) } }
        // Reading names' strings ahead skips name records and string offsets out of bounds, quietly.
        names += [UInt32(statistics.names), UInt32(statistics.names) &- 1, .max, 0]
        _ = names.withUnsafeMutableBufferPointer { table.warmNames($0) }
        return true
    }

    /// Addresses at which `table` has ranges, plus a few outside.
    static func probes(_ bytes: [UInt8]) throws -> [UInt64] {
        let table = try SymbolTable(bytes: bytes)
        var addresses: [UInt64] = [0, 1, UInt64.max]
        var address: UInt64 = 0
        // Find range starts by walking from the first covered address found by probing.
        var low: UInt64 = 0
        var high = UInt64.max
        if try table.range(containing: high) != nil {
            while low < high {
                let middle = low + (high - low) / 2
                if try table.range(containing: middle) != nil { high = middle } else { low = middle + 1 }
            }
            address = low
            addresses.append(address &- 1)
            while let range = try table.range(containing: address), addresses.count < 400 {
                addresses += [range.start, range.start &+ 1]
                guard let end = range.end else { break }
                addresses.append(end &- 1)
                address = end
            }
        }
        return addresses
    }

    @Test func truncationAtEveryByteThrows() throws {
        for bytes in try Self.validTables() {
            for length in 0..<bytes.count {
                #expect(throws: FormatError.self, "length \(length) of \(bytes.count)") {
                    try SymbolTable(bytes: Array(bytes[..<length]))
                }
            }
            #expect(throws: Never.self) { try SymbolTable(bytes: bytes) }
        }
    }

    @Test(arguments: 0..<8)
    func bitFlipsNeverTrap(tableIndex: Int) throws {
        let bytes = try Self.validTables()[tableIndex]
        let addresses = try Self.probes(bytes)
        var random = SplitMix64(seed: UInt64(tableIndex) * 7919)
        var opened = 0
        for _ in 0..<1500 {
            var corrupt = bytes
            for _ in 0..<random.int(1...4) {
                // Half the flips land in the header and directory, where they do the most damage.
                let index = random.chance(50) ? random.int(0...min(231, bytes.count - 1)) : random.int(0...bytes.count - 1)
                corrupt[index] ^= UInt8(1) << UInt8(random.int(0...7))
            }
            if Self.exercise(corrupt, addresses: addresses) { opened += 1 }
        }
        // Flips in record data leave the header valid: lookups must then have run on corrupt records.
        #expect(opened > 0)
    }

    @Test(arguments: 0..<20)
    func randomBytesNeverTrap(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        for _ in 0..<200 {
            var bytes = (0..<random.int(0...400)).map { _ in UInt8.random(in: 0...255, using: &random) }
            if random.chance(50), bytes.count >= 8 {
                // A valid magic and version, so the reader gets past the first checks.
                bytes.replaceSubrange(0..<6, with: [0x43, 0x53, 0x59, 0x4D, UInt8(random.int(1...4)), 0])
            }
            Self.exercise(bytes, addresses: [0, 1, 0x1000, UInt64.max, random.next()])
        }
    }

    /// Forged header fields: each must be rejected on open with the right error class.
    @Test(arguments: [
        (HeaderPatch.u8(0, 0x42), FormatError.Code.badMagic),                 // magic
        (HeaderPatch.u16(4, 6), .unsupported),                                // version 6
        (HeaderPatch.u16(4, 2), .invalidValue),                               // v2 with v5's eleven sections
        (HeaderPatch.u16(4, 3), .invalidValue),                               // v3 with v5's eleven sections
        (HeaderPatch.u16(4, 0), .unsupported),                                // version 0
        (HeaderPatch.u16(6, 0x8000), .unsupported),                           // unknown flag
        (HeaderPatch.u8(10, 2), .invalidValue),                               // is64Bit not 0/1
        (HeaderPatch.u8(11, 7), .invalidValue),                               // section count
        (HeaderPatch.u8(11, 10), .invalidValue),                              // v3's section count in v5
        (HeaderPatch.u64(88 + 16 * 10 + 8, 1 << 40), .truncated),             // unwind rules past the end
        (HeaderPatch.u64(88 + 16 * 9 + 8, 1 << 40), .truncated),              // module layout past the end
        (HeaderPatch.u8(12, 5), .invalidValue),                               // string width > 4
        (HeaderPatch.u8(18, 255), .invalidValue),                             // call-site width
        (HeaderPatch.u8(19, 0), .invalidValue),                               // demangled block shift 0
        (HeaderPatch.u8(19, 11), .invalidValue),                              // demangled block shift > 10
        (HeaderPatch.u64(88 + 16 * 8 + 8, 3), .invalidValue),                 // demangled names under one offset
        (HeaderPatch.u64(88 + 16 * 8 + 8, 1 << 40), .truncated),              // demangled names past the end
        (HeaderPatch.u32(20, UInt32.max), .truncated),                        // module name offset
        (HeaderPatch.u32(36, UInt32.max), .invalidValue),                     // file count
        (HeaderPatch.u32(40, 1_000_000), .invalidValue),                      // name count
        (HeaderPatch.u32(44, UInt32.max), .invalidValue),                     // scope count
        (HeaderPatch.u32(48, 77), .invalidValue),                             // call-site count
        (HeaderPatch.u32(52, UInt32.max), .invalidValue),                     // range count
        (HeaderPatch.u64(88, UInt64.max), .invalidValue),                     // build-id offset over Int.max
        (HeaderPatch.u64(96, UInt64.max), .invalidValue),                     // build-id size over Int.max
        (HeaderPatch.u64(96, 1 << 40), .truncated),                           // build-id size past the end
        (HeaderPatch.u64(88 + 16 * 7, UInt64(Int.max)), .truncated),          // strings offset
        (HeaderPatch.u64(88 + 16 * 7 + 8, 1 << 40), .truncated),              // strings size
        (HeaderPatch.u64(88 + 16 * 3, 8), .invalidValue),                     // scopes inside the header
    ])
    func forgedHeaderFieldsAreRejected(patch: HeaderPatch, code: FormatError.Code) throws {
        var bytes = try SymbolTableWriter.write(SampleModel.model())
        patch.apply(to: &bytes)
        #expect {
            try SymbolTable(bytes: bytes)
        } throws: { error in
            (error as? FormatError)?.code == code
        }
    }

    /// A call site inlined into itself or a later record would loop: lookups must throw.
    @Test(arguments: [0, 1, 5])
    func cyclicOrForwardInlineChainsThrow(extra: Int) throws {
        var bytes = try SymbolTableWriter.write(SampleModel.model())
        let layout = try TestLayout(bytes)
        // The sample's deepest chain is at 0x1016: inner <- helper (call site) <- main (call site).
        #expect(try SymbolTable(bytes: bytes).frames(at: 0x1016).count == 3)
        let range = try layout.rangeIndex(bytes, containing: 0x1016)
        let scope = TestLayout.field(bytes, at: layout.scopeFieldOffset(range: range), width: layout.scopeWidth) - 1
        let firstCallSite = TestLayout.field(bytes, at: layout.scopeCallerOffset(scope), width: layout.callSiteWidth) - 2
        // helper's call site is inlined into main's; point it at itself (+0) or past it instead.
        let value = firstCallSite + extra + 2
        try #require(value < 1 << (8 * layout.callSiteWidth))
        TestLayout.setField(&bytes, at: layout.callSiteCallerOffset(firstCallSite), width: layout.callSiteWidth, value: value)
        let corrupt = try SymbolTable(bytes: bytes)
        let ranges = [try #require(corrupt.rangeIndex(containing: 0x1016))]
        var names = [UInt32](repeating: 0, count: 8)
        _ = ranges.withUnsafeBufferPointer { r in names.withUnsafeMutableBufferPointer { corrupt.warmFrames(ofRanges: r, names: $0) } }  // ends
        #expect {
            try corrupt.forEachFrame(at: 0x1016) { _ in }
        } throws: { error in
            (error as? FormatError)?.code == .invalidValue
        }
    }

    @Test func outOfBoundsRecordIndicesThrow() throws {
        let valid = try SymbolTableWriter.write(SampleModel.model())
        let layout = try TestLayout(valid)
        // Every range names the largest scope field its width allows: beyond the record count.
        var bytes = valid
        for index in 0..<layout.rangeCount {
            TestLayout.setField(&bytes, at: layout.scopeFieldOffset(range: index), width: layout.scopeWidth,
                                value: (1 << (8 * layout.scopeWidth)) - 1)
        }
        let table = try SymbolTable(bytes: bytes)
        #expect(throws: FormatError.self) { try table.frames(at: 0x1000) }
        // A call site marked symbol-only (caller field 1) is not a valid chain link.
        bytes = valid
        TestLayout.setField(&bytes, at: layout.callSiteCallerOffset(0), width: layout.callSiteWidth, value: 1)
        let marked = try SymbolTable(bytes: bytes)
        #expect(throws: FormatError.self) { try marked.frames(at: 0x1016) }
    }
}

/// A change to one little-endian header field.
enum HeaderPatch: Sendable, CustomTestStringConvertible {
    case u8(Int, UInt8)
    case u16(Int, UInt16)
    case u32(Int, UInt32)
    case u64(Int, UInt64)

    func apply(to bytes: inout [UInt8]) {
        func put(_ offset: Int, _ value: UInt64, _ size: Int) {
            for index in 0..<size { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(index))) }
        }
        switch self {
        case .u8(let offset, let value): put(offset, UInt64(value), 1)
        case .u16(let offset, let value): put(offset, UInt64(value), 2)
        case .u32(let offset, let value): put(offset, UInt64(value), 4)
        case .u64(let offset, let value): put(offset, value, 8)
        }
    }

    var testDescription: String {
        switch self {
        case .u8(let offset, let value): "byte \(offset) = \(value)"
        case .u16(let offset, let value): "u16 at \(offset) = \(value)"
        case .u32(let offset, let value): "u32 at \(offset) = \(value)"
        case .u64(let offset, let value): "u64 at \(offset) = \(value)"
        }
    }
}

/// The v2 layout (v1's fields at the same offsets) as docs/csym-format.md describes it, read independently of the library so tests
/// can forge records.
struct TestLayout {
    var compact: Bool
    var addressBase: UInt64
    var widths: [Int]  // string, file, line, column, name, scope, call site
    var counts: [Int]  // strings, files, names, scopes, call sites, ranges
    var sectionOffsets: [Int]

    var rangeCount: Int { counts[5] }
    var scopeWidth: Int { widths[5] }
    var callSiteWidth: Int { widths[6] }
    var rangeRecordSize: Int { widths[1] + widths[2] + widths[3] + widths[5] }
    var scopeRecordSize: Int { 2 * widths[4] + widths[6] }
    var callSiteRecordSize: Int { widths[1] + widths[2] + widths[3] + widths[4] + widths[6] }
    var rangeStarts: Int { sectionOffsets[1] }
    var rangeRecords: Int { sectionOffsets[2] }
    var scopes: Int { sectionOffsets[3] }
    var callSites: Int { sectionOffsets[4] }
    var strings: Int { sectionOffsets[7] }

    init(_ bytes: [UInt8]) throws {
        func value(_ offset: Int, _ size: Int) -> UInt64 {
            (0..<size).reduce(0) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
        }
        try #require(bytes.count >= 232)
        compact = value(6, 2) & 1 != 0
        addressBase = value(24, 8)
        widths = (12...18).map { Int(bytes[$0]) }
        counts = (0..<6).map { Int(value(32 + 4 * $0, 4)) }
        sectionOffsets = (0..<8).map { Int(value(88 + 16 * $0, 8)) }
    }

    static func field(_ bytes: [UInt8], at offset: Int, width: Int) -> Int {
        (0..<width).reduce(0) { $0 | Int(bytes[offset + $1]) << (8 * $1) }
    }

    static func setField(_ bytes: inout [UInt8], at offset: Int, width: Int, value: Int) {
        for index in 0..<width { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
    }

    /// The index of the range containing `address`.
    func rangeIndex(_ bytes: [UInt8], containing address: UInt64) throws -> Int {
        var found: Int? = nil
        for index in 0..<rangeCount {
            let start = compact
                ? addressBase + UInt64(Self.field(bytes, at: rangeStarts + index * 4, width: 4))
                : UInt64(Self.field(bytes, at: rangeStarts + index * 8, width: 8))
            if start <= address { found = index }
        }
        return try #require(found)
    }

    /// Offset of the scope field of range `index`.
    func scopeFieldOffset(range index: Int) -> Int {
        rangeRecords + index * rangeRecordSize + rangeRecordSize - scopeWidth
    }

    /// Offset of the caller field of scope record `index`.
    func scopeCallerOffset(_ index: Int) -> Int {
        scopes + index * scopeRecordSize + scopeRecordSize - callSiteWidth
    }

    /// Offset of the caller field of call-site record `index`.
    func callSiteCallerOffset(_ index: Int) -> Int {
        callSites + index * callSiteRecordSize + callSiteRecordSize - callSiteWidth
    }
}
