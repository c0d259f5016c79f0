import TestSupport
import SymBytes
import SymELF
import Testing

/// Hostile input generated from small valid files: every outcome must be a parse or a
/// `FormatError`, never a trap, hang or huge allocation.
@Suite struct HostileInputTests {
    /// Small valid files the mutations start from: both classes, both byte orders, compressed.
    enum Seed: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case x86_64Object, i386Object, powerpc64Object, mipsObject, zlibObject, elf32ZlibObject, bigEndianZlibObject
        case linkedProgram

        func bytes() throws -> [UInt8] {
            let fixtures = try Fixtures.shared.get()
            switch self {
            case .x86_64Object: return try readBytes(fixtures.objects[.x86_64]!)
            case .i386Object: return try readBytes(fixtures.objects[.i386]!)
            case .powerpc64Object: return try readBytes(fixtures.objects[.powerpc64]!)
            case .mipsObject: return try readBytes(fixtures.objects[.mips]!)
            case .zlibObject: return try readBytes(fixtures.objectZlib)
            case .elf32ZlibObject: return try readBytes(fixtures.object32Zlib)
            case .bigEndianZlibObject: return try readBytes(fixtures.objectBigEndianZlib)
            case .linkedProgram: return try readBytes(fixtures.linkedProgram)
            }
        }

        var testDescription: String { rawValue }
    }

    /// Parses `bytes` and, when that succeeds, reads everything the API offers, checking that no
    /// section inflates beyond the limits. Returns whether the file parsed.
    @discardableResult
    static func exercise(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let file: ELFFile
        do {
            file = try ELFFile(bytes: bytes)
        } catch {
            #expect(!error.message.isEmpty, sourceLocation: sourceLocation)
            return false
        }
        for section in file.sections {
            guard let contents = try? file.contents(of: section) else { continue }
            if section.isNoBits {
                #expect(contents.isEmpty, sourceLocation: sourceLocation)
            } else if section.isCompressed {
                #expect(UInt64(contents.count) <= section.size * ELFFile.maximumCompressionRatio,
                        sourceLocation: sourceLocation)
            } else {
                #expect(UInt64(contents.count) == section.size, sourceLocation: sourceLocation)
            }
            _ = contents.withUnsafeBytes { $0.reduce(0, &+) }
        }
        if let symbols = try? file.symbols() {
            #expect(symbols.count <= bytes.count / 16, sourceLocation: sourceLocation)
        }
        _ = try? file.sectionNotes()
        _ = try? file.segmentNotes()
        _ = (file.buildIDHex, file.debugLink, file.hasDWARF, file.loadBias, file.firstLoadFileOffset,
             file.architectureName, file.section(named: ".debug_line"))
        return true
    }

    @Test("truncation at every byte offset", arguments: Seed.allCases)
    func truncation(_ seed: Seed) throws {
        let bytes = try seed.bytes()
        let reference = try ELFFile(bytes: bytes)
        #expect(Self.exercise(bytes))
        // Nothing can parse without the whole section header table.
        let tableEnd = Int(reference.header.sectionHeaderOffset)
            + reference.sections.count * Int(reference.header.sectionHeaderEntrySize)
        for length in 0..<bytes.count {
            let parsed = Self.exercise(Array(bytes[0..<length]))
            if length < tableEnd {
                #expect(!parsed, "prefix of \(length) bytes parsed")
            }
        }
    }

    @Test("seeded byte flips: single and multi-byte, anywhere or in the headers", arguments: Seed.allCases)
    func byteFlips(_ seed: Seed) throws {
        let original = try seed.bytes()
        let reference = try ELFFile(bytes: original)
        let tableStart = Int(reference.header.sectionHeaderOffset)
        var parsedCount = 0
        let mutants = 400
        for mutant in 0..<mutants {
            var generator = SplitMix64(seed: UInt64(mutant) &* 0x1000 &+ UInt64(seed.rawValue.utf8.count))
            var bytes = original
            let flips = mutant % 3 == 0 ? 1 : Int.random(in: 2...8, using: &generator)
            for _ in 0..<flips {
                // Half of the flips aim at the structures the parser trusts most.
                let region: Range<Int> = switch Int.random(in: 0..<4, using: &generator) {
                case 0: 0..<(reference.header.is64Bit ? 64 : 52)
                case 1: tableStart..<bytes.count
                default: 0..<bytes.count
                }
                let offset = Int.random(in: region, using: &generator)
                if Bool.random(using: &generator) {
                    bytes[offset] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &generator)
                } else {
                    bytes[offset] = [0x00, 0xff, 0x7f, 0x80, UInt8.random(in: 0...255, using: &generator)]
                        .randomElement(using: &generator)!
                }
            }
            if Self.exercise(bytes) { parsedCount += 1 }
        }
        // The parser must not reject everything: most single flips land in section data.
        #expect(parsedCount > mutants / 10, "only \(parsedCount) of \(mutants) mutants parsed")
    }

    @Test("random buffers, with and without a valid ELF identification", arguments: 0..<4)
    func randomBuffers(_ batch: Int) {
        for index in 0..<200 {
            var generator = SplitMix64(seed: UInt64(batch * 1000 + index))
            let length = Int.random(in: 0...2048, using: &generator)
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if index % 2 == 0 {
                let identification: [UInt8] = [0x7f, 0x45, 0x4c, 0x46, UInt8.random(in: 1...2, using: &generator),
                                                UInt8.random(in: 1...2, using: &generator), 1]
                for (offset, byte) in identification.enumerated() where offset < bytes.count {
                    bytes[offset] = byte
                }
                Self.exercise(bytes)
            } else if bytes.starts(with: [0x7f, 0x45, 0x4c, 0x46]) == false {
                #expect(throws: FormatError.self) { try ELFFile(bytes: bytes) }
            }
        }
    }

    /// The x86_64 object, patched by `edit`, must be refused at `init` with `code`.
    private func expectRejected(_ code: FormatError.Code, sourceLocation: SourceLocation = #_sourceLocation,
                                _ edit: (inout [UInt8]) -> Void) throws {
        var bytes = try Seed.x86_64Object.bytes()
        edit(&bytes)
        let error = #expect(throws: FormatError.self, sourceLocation: sourceLocation) { try ELFFile(bytes: bytes) }
        #expect(error?.code == code, "\(String(describing: error))", sourceLocation: sourceLocation)
    }

    @Test("forged header counts and offsets are refused before allocating")
    func forgedHeader() throws {
        typealias L = ELF64Layout
        try expectRejected(.truncated) { patch(&$0, at: L.shnum, 0xfffe, width: 2) }
        try expectRejected(.invalidValue) { patch(&$0, at: L.shoff, .max, width: 8) }
        try expectRejected(.truncated) { patch(&$0, at: L.shoff, UInt64($0.count - 10), width: 8) }
        try expectRejected(.invalidValue) { patch(&$0, at: L.shentsize, 1, width: 2) }
        try expectRejected(.invalidValue) { bytes in
            patch(&bytes, at: L.shstrndx, peek(bytes, at: L.shnum, width: 2), width: 2)
        }
        try expectRejected(.invalidValue) { bytes in
            patch(&bytes, at: L.shnum, 0, width: 2)
            patch(&bytes, at: L.sectionHeader(bytes, 0) + L.shSize, .max, width: 8)
        }
        try expectRejected(.truncated) { bytes in
            patch(&bytes, at: L.shnum, 0, width: 2)
            patch(&bytes, at: L.sectionHeader(bytes, 0) + L.shSize, 1 << 40, width: 8)
        }
        try expectRejected(.truncated) { bytes in
            patch(&bytes, at: L.phoff, 64, width: 8)
            patch(&bytes, at: L.phnum, 0xfffe, width: 2)
            patch(&bytes, at: 54, 56, width: 2)  // e_phentsize
        }
        try expectRejected(.truncated) { bytes in
            patch(&bytes, at: L.phoff, 64, width: 8)
            patch(&bytes, at: L.phnum, UInt64(ELF.PN_XNUM), width: 2)
            patch(&bytes, at: 54, 56, width: 2)
            patch(&bytes, at: L.sectionHeader(bytes, 0) + L.shInfo, 0xffff_ffff, width: 4)
        }
        try expectRejected(.invalidValue) { bytes in
            let nameTable = L.sectionHeader(bytes, Int(peek(bytes, at: L.shstrndx, width: 2)))
            patch(&bytes, at: L.sectionHeader(bytes, 1) + L.shName,
                  peek(bytes, at: nameTable + L.shSize, width: 8) + 5, width: 4)
        }
        try expectRejected(.truncated) { bytes in
            let nameTable = L.sectionHeader(bytes, Int(peek(bytes, at: L.shstrndx, width: 2)))
            patch(&bytes, at: nameTable + L.shSize, 1 << 40, width: 8)
        }
        try expectRejected(.badMagic) { $0[1] = 0x46 }
        try expectRejected(.invalidValue) { $0[4] = 3 }
    }

    /// The index of the first section of `type` in the x86_64 object, and its bytes.
    private func objectSection(_ type: UInt32) throws -> (bytes: [UInt8], header: Int) {
        let bytes = try Seed.x86_64Object.bytes()
        let file = try ELFFile(bytes: bytes)
        let section = try #require(file.sections.first { $0.type == type })
        return (bytes, ELF64Layout.sectionHeader(bytes, section.index))
    }

    @Test("forged section ranges and symbol tables throw from contents(of:) and symbols()")
    func forgedSectionsAndSymbols() throws {
        typealias L = ELF64Layout
        // (what is forged, the error symbols() must throw, whether the table's own range is broken)
        let forgeries: [(String, FormatError.Code, Bool, (inout [UInt8], Int) -> Void)] = [
            ("offset near UInt64.max", .invalidValue, true, { patch(&$0, at: $1 + L.shOffset, .max - 5, width: 8) }),
            ("offset + size overflows", .truncated, true, { patch(&$0, at: $1 + L.shSize, UInt64(Int.max), width: 8) }),
            ("size past EOF", .truncated, true, { patch(&$0, at: $1 + L.shSize, 1 << 33, width: 8) }),
            ("string table link out of range", .invalidValue, false, { patch(&$0, at: $1 + L.shLink, 1000, width: 4) }),
            ("entry size 7", .invalidValue, false, { patch(&$0, at: $1 + 56, 7, width: 8) }),
            ("symbol name offset out of range", .invalidValue, false, { bytes, header in
                let start = Int(peek(bytes, at: header + L.shOffset, width: 8))
                patch(&bytes, at: start + 24, 0xffff_fff0, width: 4)
            }),
        ]
        for (label, code, rangeBroken, forge) in forgeries {
            var (bytes, header) = try objectSection(ELF.SHT_SYMTAB)
            forge(&bytes, header)
            let file = try ELFFile(bytes: bytes)
            let error = #expect(throws: FormatError.self, "\(label)") { try file.symbols() }
            #expect(error?.code == code, "\(label): \(String(describing: error))")
            let table = try #require(file.sections.first { $0.type == ELF.SHT_SYMTAB })
            if rangeBroken {
                #expect(throws: FormatError.self, "\(label)") { try file.contents(of: table) }
            } else {
                #expect(try file.contents(of: table).count == Int(table.size))
            }
        }
    }

    @Test("forged notes and debug links are refused")
    func forgedNotesAndDebugLink() throws {
        let program = try readBytes(try Fixtures.shared.get().program)
        let file = try ELFFile(bytes: program)
        let note = try #require(file.sections.first { $0.name == ".note.gnu.build-id" })
        for (field, value) in [(0, UInt64(0xffff_ffff)), (4, UInt64(0xffff_fff0)), (0, UInt64(note.size))] {
            var bytes = program
            patch(&bytes, at: Int(note.offset) + field, value, width: 4)
            let error = #expect(throws: FormatError.self) { try ELFFile(bytes: bytes) }
            #expect(error?.code == .truncated)
        }

        let libc = try readBytes(try SystemFile.libc.path)
        let link = try #require(try ELFFile(bytes: libc).sections.first { $0.name == ".gnu_debuglink" })
        var cut = libc
        patch(&cut, at: ELF64Layout.sectionHeader(libc, link.index) + ELF64Layout.shSize, 4, width: 8)
        let error = #expect(throws: FormatError.self) { try ELFFile(bytes: cut) }
        #expect(error?.code == .truncated)
    }

    /// A compressed section of `bytes` and the file offset of its compression header.
    private func compressedSection(_ bytes: [UInt8]) throws -> ELFSection {
        let file = try ELFFile(bytes: bytes)
        return try #require(file.sections.first { $0.name == ".debug_info" || $0.name == ".zdebug_info" })
    }

    /// Forges `bytes` with `edit`, then expects `contents(of:)` of its debug info to throw `code`,
    /// and its stream (`streamedContents(of:)`) too.
    private func expectContentsRejected(_ bytes: [UInt8], _ code: FormatError.Code, _ label: String,
                                        sourceLocation: SourceLocation = #_sourceLocation,
                                        _ edit: (inout [UInt8], ELFSection) -> Void) throws {
        var forged = bytes
        edit(&forged, try compressedSection(bytes))
        let file = try ELFFile(bytes: forged)
        let section = try compressedSection(forged)
        let error = #expect(throws: FormatError.self, "\(label)", sourceLocation: sourceLocation) {
            try file.contents(of: section)
        }
        #expect(error?.code == code, "\(label): \(String(describing: error))", sourceLocation: sourceLocation)
        // Streamed, the same forgery is refused when the stream is made or when it is read to the
        // end, by the reader or by the read-ahead thread (whose failure the reader throws).
        for readingAhead in [false, true] {
            let streamError = #expect(throws: FormatError.self, "\(label), streamed", sourceLocation: sourceLocation) {
                let stream = try #require(try file.streamedContents(of: section))
                if readingAhead { stream.startReadingAhead(lead: 1) }
                try stream.fill(upTo: stream.bytes.count)
            }
            #expect(streamError?.code == code, "\(label), streamed: \(String(describing: streamError))",
                    sourceLocation: sourceLocation)
        }
    }

    @Test("forged compression headers: 100 GB, ratio bombs, wrong sizes, unknown algorithms")
    func forgedCompressionHeaders() throws {
        let fixtures = try Fixtures.shared.get()
        for path in [fixtures.objectZlib, fixtures.programZstd] {
            let bytes = try readBytes(path)
            let declared = peek(bytes, at: Int(try compressedSection(bytes).offset) + 8, width: 8)
            let chSize = { (section: ELFSection) in Int(section.offset) + 8 }
            try expectContentsRejected(bytes, .limitExceeded, "100 GB") { patch(&$0, at: chSize($1), 100 << 30, width: 8) }
            try expectContentsRejected(bytes, .limitExceeded, "ratio") { bytes, section in
                patch(&bytes, at: chSize(section), (section.size - 24) * 1000 + 1, width: 8)
            }
            try expectContentsRejected(bytes, .decompression, "one more") { patch(&$0, at: chSize($1), declared + 1, width: 8) }
            try expectContentsRejected(bytes, .decompression, "one less") { patch(&$0, at: chSize($1), declared - 1, width: 8) }
            try expectContentsRejected(bytes, .unsupported, "type 3") { patch(&$0, at: Int($1.offset), 3, width: 4) }
            try expectContentsRejected(bytes, .decompression, "corrupt stream") { bytes, section in
                for offset in Int(section.offset) + 24..<Int(section.offset + section.size) { bytes[offset] ^= 0x5a }
            }
        }

        let elf32 = try readBytes(fixtures.object32Zlib)
        try expectContentsRejected(elf32, .limitExceeded, "ELF32 4 GB") { patch(&$0, at: Int($1.offset) + 4, 0xffff_ffff, width: 4) }

        let gnu = try readBytes(fixtures.programZlibGNU)
        try expectContentsRejected(gnu, .limitExceeded, "zdebug 100 GB") {
            patch(&$0, at: Int($1.offset) + 4, 100 << 30, width: 8, littleEndian: false)
        }
        try expectContentsRejected(gnu, .badMagic, "zdebug magic") { $0[Int($1.offset)] = 0x58 }
    }
}
