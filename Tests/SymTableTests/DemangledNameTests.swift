import TestSupport
import SymBytes
import SymTable
import Testing

/// The demangled-names section (v2): stored forms read back for the right records, in blocks, and
/// every ill-formed section an error, never a trap.
@Suite struct DemangledNameTests {
    /// Stores a form for names starting `$s` (the Swift prefix): the name reversed, with a marker,
    /// so that a form read back for the wrong record cannot match. Nothing for other names.
    struct ReversedSwiftNames: StoredNameProvider {
        func withStoredForm(of name: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
            guard let form = Self.form(of: Array(name)) else { return }
            form.withUnsafeBytes { body($0) }
        }

        /// The expected stored form of `name`.
        static func form(of name: [UInt8]) -> [UInt8]? {
            guard name.starts(with: "$s".utf8) else { return nil }
            return Array("demangled ".utf8) + name.reversed()
        }
    }

    /// A model of `count` symbol-only functions, 16 bytes apart, named `$sN<i>` (Swift-shaped)
    /// where `isSwift(i)` and `c_function_<i>` otherwise.
    static func model(count: Int, isSwift: (Int) -> Bool) -> SymbolModel {
        var model = SymbolModel(module: ModuleIdentity(buildID: [1, 2, 3, 4], machine: 62, is64Bit: true, name: "m.so"))
        for index in 0..<count {
            let name = model.appendString(isSwift(index) ? "$sN\(index)" : "c_function_\(index)")
            model.symbols.append(SymbolEntry(name: name, address: 0x1000 + UInt64(index) * 16, size: 16))
        }
        return model
    }

    /// Checks every record of `table` against the provider: the stored form of each Swift-shaped
    /// name, none for the others; blocks cover their records, and blocks without forms say so.
    static func checkRoundTrip(_ table: SymbolTable) throws {
        let names = table.statistics.names
        var scratch = DecompressionScratch()
        var index = 0
        while index < names {
            let block = try table.demangledNames(inBlockOf: UInt32(index), into: &scratch)
            #expect(Int(block.first) == index - index % 64)
            #expect(block.count == min(64, names - Int(block.first)))
            var anyStored = false
            for position in 0..<block.count {
                let record = block.first + UInt32(position)
                var name: [UInt8] = []
                table.withUTF8(try table.functionName(record)) { name = Array($0) }
                let expected = ReversedSwiftNames.form(of: name)
                #expect(block[position].map(Array.init) == expected, "record \(record) (\(String(decoding: name, as: UTF8.self)))")
                #expect(block.name(ofRecord: record).map(Array.init) == expected)
                anyStored = anyStored || expected != nil
            }
            #expect(block.hasNames == anyStored)
            #expect(block.name(ofRecord: block.first + UInt32(block.count)) == nil)
            index = Int(block.first) + block.count
        }
        #expect(throws: FormatError.self) { try table.demangledNames(inBlockOf: UInt32(names), into: &scratch) }
    }

    @Test(arguments: [1, 63, 64, 65, 130, 1000, 3001])
    func roundTripAllSwift(count: Int) throws {
        let bytes = try SymbolTableWriter.write(Self.model(count: count) { _ in true }, storedNames: ReversedSwiftNames())
        let table = try SymbolTable(bytes: bytes)
        #expect(table.hasStoredDemangledNames)
        try Self.checkRoundTrip(table)
    }

    /// Swift and C names mixed, including whole blocks with nothing stored (records 64..<192 are C).
    @Test(arguments: [1, 2])
    func roundTripMixed(threads: Int) throws {
        let model = Self.model(count: 3001) { index in !(64..<192).contains(index) && index % 3 != 0 }
        let bytes = try SymbolTableWriter.write(model, storedNames: ReversedSwiftNames(), threads: threads)
        let table = try SymbolTable(bytes: bytes)
        try Self.checkRoundTrip(table)
        // The writer's output does not depend on how many threads made it.
        let other = try SymbolTableWriter.write(model, storedNames: ReversedSwiftNames(), threads: 3 - threads)
        #expect(other == bytes)
    }

    /// With no stored form at all, the section is one zero offset and the table answers as one
    /// written without a provider, byte for byte.
    @Test func nothingStoredIsOneOffset() throws {
        let model = Self.model(count: 200) { _ in false }
        let bytes = try SymbolTableWriter.write(model, storedNames: ReversedSwiftNames())
        #expect(bytes == (try SymbolTableWriter.write(model)))
        let table = try SymbolTable(bytes: bytes)
        #expect(!table.hasStoredDemangledNames)
        try Self.checkRoundTrip(table)
        let entry = 88 + 16 * 8
        #expect(Self.u64(bytes, entry + 8) == 4)
        #expect(Array(bytes[Int(Self.u64(bytes, entry))...].prefix(4)) == [0, 0, 0, 0])
    }

    /// Forms longer than `maximumStoredNameLength` (64 KiB) are not stored: lookup demangles those.
    @Test func overlongFormsAreNotStored() throws {
        struct Long: StoredNameProvider {
            func withStoredForm(of name: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
                let length = name.elementsEqual("$sN1".utf8) ? 1 << 16 : (1 << 16) + 1
                [UInt8](repeating: 0x61, count: length).withUnsafeBytes { body($0) }
            }
        }
        let table = try SymbolTable(bytes: try SymbolTableWriter.write(Self.model(count: 3) { _ in true }, storedNames: Long()))
        var scratch = DecompressionScratch()
        let block = try table.demangledNames(inBlockOf: 0, into: &scratch)
        for position in 0..<3 {
            let name = table.string(try table.functionName(UInt32(position)))
            #expect(block[position]?.count == (name == "$sN1" ? 1 << 16 : nil))
        }
    }

    // MARK: Hostile sections

    static func u64(_ bytes: [UInt8], _ offset: Int) -> UInt64 {
        (0..<8).reduce(0) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
    }

    static func u32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 | UInt32(bytes[offset + $1]) << (8 * UInt32($1)) }
    }

    static func put32(_ bytes: inout [UInt8], _ offset: Int, _ value: UInt32) {
        for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(index))) }
    }

    /// A valid table with 200 Swift names (4 blocks), and where its section lies.
    static func storedTable() throws -> (bytes: [UInt8], section: Int, size: Int) {
        let bytes = try SymbolTableWriter.write(Self.model(count: 200) { _ in true }, storedNames: ReversedSwiftNames())
        let entry = 88 + 16 * 8
        return (bytes, Int(u64(bytes, entry)), Int(u64(bytes, entry + 8)))
    }

    /// `table` with its demangled-names section replaced by `section`, appended at the end.
    static func replacingSection(_ table: [UInt8], with section: [UInt8]) -> [UInt8] {
        var bytes = table
        let entry = 88 + 16 * 8
        for index in 0..<8 {
            bytes[entry + index] = UInt8(truncatingIfNeeded: UInt64(table.count) >> (8 * UInt64(index)))
            bytes[entry + 8 + index] = UInt8(truncatingIfNeeded: UInt64(section.count) >> (8 * UInt64(index)))
        }
        return bytes + section
    }

    /// Opens `bytes` and reads every block: returns the error codes met (open failure first).
    static func readAll(_ bytes: [UInt8]) -> [FormatError.Code] {
        let table: SymbolTable
        do { table = try SymbolTable(bytes: bytes) } catch { return [error.code] }
        var scratch = DecompressionScratch()
        var codes: [FormatError.Code] = []
        var index = 0
        while index < table.statistics.names {
            do {
                let block = try table.demangledNames(inBlockOf: UInt32(index), into: &scratch)
                for position in 0..<block.count { _ = block[position]?.reduce(0, &+) }
            } catch {
                codes.append(error.code)
            }
            index += 64
        }
        return codes
    }

    @Test func validSectionReadsWithoutErrors() throws {
        #expect(Self.readAll(try Self.storedTable().bytes).isEmpty)
    }

    @Test func truncatedOffsetsAreRejectedOnOpen() throws {
        let (bytes, section, size) = try Self.storedTable()
        // 4 blocks: 5 offsets (20 bytes). Any section shorter than that, or whose last offset is
        // not the data's size, is refused on open.
        for length in [0, 3, 8, 19, 20, size - 1] {
            let forged = Self.replacingSection(bytes, with: Array(bytes[section..<(section + length)]))
            #expect(Self.readAll(forged) == [.invalidValue], "section cut to \(length) bytes")
        }
        // A single zero offset is a valid section: nothing stored.
        #expect(Self.readAll(Self.replacingSection(bytes, with: [0, 0, 0, 0])) == [])
        var firstNotZero = Array(bytes[section..<(section + size)])
        Self.put32(&firstNotZero, 0, 1)
        #expect(Self.readAll(Self.replacingSection(bytes, with: firstNotZero)) == [.invalidValue])
    }

    @Test func offsetsOutOfOrderOrBoundsFailTheirBlocks() throws {
        let (bytes, section, size) = try Self.storedTable()
        let original = Array(bytes[section..<(section + size)])
        let dataSize = UInt32(size - 20)
        // Block 1 starts past block 2's start (out of order), then past the data (out of bounds).
        for value in [Self.u32(original, 12) + 1, dataSize + 1, UInt32.max] {
            var forged = original
            Self.put32(&forged, 8, value)
            let codes = Self.readAll(Self.replacingSection(bytes, with: forged))
            #expect(codes.contains(.invalidValue), "offset[2] = \(value): \(codes)")
        }
        // Block 0 made empty (offset[1] = 0): block 1 then starts inside block 0's frame, which fails.
        var forged = original
        Self.put32(&forged, 4, 0)
        #expect(!Self.readAll(Self.replacingSection(bytes, with: forged)).isEmpty)
    }

    @Test func corruptFramesFail() throws {
        let (bytes, section, size) = try Self.storedTable()
        let original = Array(bytes[section..<(section + size)])
        let frame0 = 20..<(20 + Int(Self.u32(original, 4)))
        let expected = try Self.storedForms(bytes)
        // Every byte of the first frame flipped in turn: zstd's checksum or structure catches it,
        // or the flip hit bits the decoder ignores and the names read back unchanged. Never
        // other names.
        var caught = 0
        for index in frame0 {
            var forged = original
            forged[index] ^= 0x5A
            let table = Self.replacingSection(bytes, with: forged)
            let codes = Self.readAll(table)
            if codes.isEmpty {
                #expect(try Self.storedForms(table) == expected, "byte \(index - 20) of the frame flipped")
            } else {
                #expect(codes.count == 1, "byte \(index - 20) of the frame flipped: \(codes)")
                caught += 1
            }
        }
        #expect(caught * 10 >= frame0.count * 9, "\(caught) of \(frame0.count) flips caught")
    }

    /// Every record's stored form in `bytes`, in record order.
    static func storedForms(_ bytes: [UInt8]) throws -> [[UInt8]?] {
        let table = try SymbolTable(bytes: bytes)
        var scratch = DecompressionScratch()
        var forms: [[UInt8]?] = []
        while forms.count < table.statistics.names {
            let block = try table.demangledNames(inBlockOf: UInt32(forms.count), into: &scratch)
            for position in 0..<block.count { forms.append(block[position].map(Array.init)) }
        }
        return forms
    }

    /// Frames made by hand after RFC 8878 (zstd): a 4-byte magic, a frame header descriptor, an
    /// optional window descriptor, the content size, then one RLE block of `byte` repeated.
    static func rleFrame(contentSize: UInt32?, runLength: Int, byte: UInt8) -> [UInt8] {
        var frame: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD]
        if let contentSize {
            // Frame_Content_Size_flag 2 (4 bytes), Single_Segment_flag: no window descriptor.
            frame.append(0xA0)
            frame += (0..<4).map { UInt8(truncatingIfNeeded: contentSize >> (8 * UInt32($0))) }
        } else {
            // No content size; a window descriptor of 2^20 bytes.
            frame += [0x00, 0x50]
        }
        // Block header: Last_Block 1, Block_Type 1 (RLE), Block_Size = run length.
        let header = UInt32(runLength) << 3 | 1 << 1 | 1
        frame += [UInt8(header & 0xFF), UInt8((header >> 8) & 0xFF), UInt8(header >> 16), byte]
        return frame
    }

    /// `table`'s section with block 0 replaced by `frame` (other blocks moved along).
    static func withFirstFrame(_ frame: [UInt8]) throws -> [UInt8] {
        let (bytes, section, size) = try Self.storedTable()
        let original = Array(bytes[section..<(section + size)])
        let oldLength = Int(Self.u32(original, 4))
        var forged = Array(original[0..<20]) + frame + Array(original[(20 + oldLength)...])
        for index in 1...4 {
            Self.put32(&forged, 4 * index, UInt32(Int(Self.u32(original, 4 * index)) - oldLength + frame.count))
        }
        return Self.replacingSection(bytes, with: forged)
    }

    @Test func framesOverTheCapOrOfUnknownSizeAreRefused() throws {
        // 256 bytes of 0xFF: 64 records, each the length 0xFFFF_FFFF alone (no stored name). A
        // valid hand-made frame, as a control: zstd and the entries' parser accept it.
        #expect(Self.readAll(try Self.withFirstFrame(Self.rleFrame(contentSize: 256, runLength: 256, byte: 0xFF))) == [])
        // 256 zero bytes: 64 empty names (length 0), also valid.
        #expect(Self.readAll(try Self.withFirstFrame(Self.rleFrame(contentSize: 256, runLength: 256, byte: 0))) == [])
        // Over the cap (8 MiB), declared in the header: refused before any allocation.
        let huge = Self.rleFrame(contentSize: 9 << 20, runLength: 1, byte: 0)
        #expect(Self.readAll(try Self.withFirstFrame(huge)) == [.limitExceeded])
        // No declared size.
        #expect(Self.readAll(try Self.withFirstFrame(Self.rleFrame(contentSize: nil, runLength: 256, byte: 0xFF))) == [.limitExceeded])
        // Declared size other than the content: 256 bytes declared as 257.
        #expect(Self.readAll(try Self.withFirstFrame(Self.rleFrame(contentSize: 257, runLength: 256, byte: 0xFF))) == [.decompression])
        // Two frames in one block.
        let two = Self.rleFrame(contentSize: 128, runLength: 128, byte: 0xFF) + Self.rleFrame(contentSize: 128, runLength: 128, byte: 0xFF)
        #expect(Self.readAll(try Self.withFirstFrame(two)) == [.decompression])
        // Entries that do not fill the frame: 257 bytes of 0xFF for 64 records.
        #expect(Self.readAll(try Self.withFirstFrame(Self.rleFrame(contentSize: 257, runLength: 257, byte: 0xFF))) == [.invalidValue])
        // A length past the frame's end: 256 bytes of 0x7F (a name of 0x7F7F7F7F bytes first).
        #expect(Self.readAll(try Self.withFirstFrame(Self.rleFrame(contentSize: 256, runLength: 256, byte: 0x7F))) == [.truncated])
        // The block ends inside a length: 255 bytes of 0xFF (63 records and 3 bytes).
        #expect(Self.readAll(try Self.withFirstFrame(Self.rleFrame(contentSize: 255, runLength: 255, byte: 0xFF))) == [.truncated])
    }

    @Test func wrongBlockShiftNeverTraps() throws {
        let (bytes, _, _) = try Self.storedTable()
        for shift: UInt8 in [0, 11, 255] {
            var forged = bytes
            forged[19] = shift
            #expect(Self.readAll(forged) == [.invalidValue], "shift \(shift)")
        }
        // Valid shifts other than the writer's: the block count no longer matches the offsets
        // (refused on open), or the blocks hold the wrong number of records (refused on read).
        for shift: UInt8 in [1, 5, 7, 8, 10] {
            var forged = bytes
            forged[19] = shift
            #expect(!Self.readAll(forged).isEmpty, "shift \(shift)")
        }
    }

    @Test(arguments: 0..<4)
    func bitFlipsInTheSectionNeverTrap(seed: UInt64) throws {
        let (bytes, section, size) = try Self.storedTable()
        var random = SplitMix64(seed: seed &* 0x9E37_79B9 &+ 17)
        var failed = 0
        for _ in 0..<400 {
            var forged = bytes
            for _ in 0..<random.int(1...3) {
                forged[section + random.int(0...size - 1)] ^= UInt8(1) << UInt8(random.int(0...7))
            }
            if !Self.readAll(forged).isEmpty { failed += 1 }
        }
        // Almost every flip is caught (by the offsets' checks or zstd's checksum); none traps.
        #expect(failed > 300)
    }
}
