import SymBytes
@testable import SymELF
import TestSupport
import Testing

/// Compressed copies made by binutils objcopy and llvm-objcopy, compared with their originals.
@Suite struct CompressionTests {
    enum Variant: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case zlib, zlibGNU, zstd, elf32Zlib, bigEndianZlib, smallZstd

        /// (uncompressed original, compressed copy)
        func paths() throws -> (original: String, compressed: String) {
            let fixtures = try Fixtures.shared.get()
            switch self {
            case .zlib: return (fixtures.program, fixtures.programZlib)
            case .zlibGNU: return (fixtures.program, fixtures.programZlibGNU)
            case .zstd: return (fixtures.program, fixtures.programZstd)
            case .elf32Zlib: return (fixtures.objects[.i386]!, fixtures.object32Zlib)
            case .bigEndianZlib: return (fixtures.objects[.powerpc64]!, fixtures.objectBigEndianZlib)
            case .smallZstd: return (fixtures.directory.file("small-exe"), fixtures.linkedProgram)
            }
        }

        /// The `ch_type` readelf -t names for this variant, nil for GNU `.zdebug` sections.
        var readelfAlgorithm: String? {
            switch self {
            case .zlibGNU: nil
            case .zstd, .smallZstd: "ZSTD"
            default: "ZLIB"
            }
        }

        var testDescription: String { rawValue }
    }

    @Test("decompressed sections equal the uncompressed original byte for byte", arguments: Variant.allCases)
    func decompressedEqualsOriginal(_ variant: Variant) throws {
        let (originalPath, compressedPath) = try variant.paths()
        let original = try ELFFile(path: originalPath)
        let compressed = try ELFFile(path: compressedPath)
        let compressedSections = compressed.sections.filter(\.isCompressed)
        #expect(compressedSections.contains { $0.name.hasSuffix("debug_info") })
        for section in compressedSections {
            let originalName = section.name.hasPrefix(".zdebug") ? ".debug" + section.name.dropFirst(7) : section.name
            let twin = try #require(original.sections.first { $0.name == originalName })
            #expect(!twin.isCompressed)
            let inflated = try compressed.contents(of: section)
            #expect(inflated.count == Int(twin.size), "\(section.name)")
            #expect(inflated.copyBytes() == (try original.contents(of: twin).copyBytes()), "\(section.name)")
            // The compressed bytes' pages were given back after inflating: they read the same again.
            #expect(try compressed.contents(of: section).copyBytes() == inflated.copyBytes(), "\(section.name) again")
        }
    }

    @Test("streamed sections equal the decompressed ones, read in any steps, released and rewound",
          arguments: Variant.allCases, [false, true])
    func streamedEqualsDecompressed(_ variant: Variant, readingAhead: Bool) throws {
        let (_, compressedPath) = try variant.paths()
        let file = try ELFFile(path: compressedPath)
        var generator = SplitMix64(seed: 7)
        for section in file.sections.filter(\.isCompressed) {
            let whole = try file.contents(of: section).copyBytes()
            let stream = try #require(try file.streamedContents(of: section))
            #expect(stream.bytes.count == whole.count, "\(section.name)")
            // A lead far below the steps asked for: the read-ahead thread goes past it to reach them.
            if readingAhead { #expect(stream.startReadingAhead(lead: 1)) }
            // Small steps and big ones, each checked as it arrives; pages behind are given back
            // now and then.
            var checked = 0
            while checked < whole.count {
                let step = Bool.random(using: &generator) ? 9000 : 600_000
                let next = min(whole.count, checked + Int.random(in: 1...step, using: &generator))
                try stream.fill(upTo: next)
                #expect(stream.filled >= next)
                #expect(Array(stream.bytes[checked..<next]) == Array(whole[checked..<next]), "\(section.name) at \(checked)")
                if Bool.random(using: &generator) { stream.release(below: checked) }
                // Stopped half-way, the reader decompresses the rest itself.
                if readingAhead && checked < whole.count / 2 && next >= whole.count / 2 { stream.stopReadingAhead() }
                checked = next
            }
            #expect(stream.filled == whole.count)
            // A page given back reads as zeros (never out of bounds); a rewind brings it back.
            stream.release(below: whole.count)
            if whole.count >= 8192 {
                #expect(stream.bytes[0..<4096].allSatisfy { $0 == 0 }, "\(section.name) released")
            }
            try stream.rewind()
            #expect(stream.filled == 0)
            if readingAhead { stream.startReadingAhead(lead: 4096) }
            try stream.fill(upTo: whole.count)
            #expect(Array(stream.bytes) == whole, "\(section.name) after rewind")
        }
        // An uncompressed section has no stream: it is read where it lies.
        let plain = try #require(file.sections.first { !$0.isCompressed && $0.size > 0 && !$0.isNoBits })
        #expect(try file.streamedContents(of: plain) == nil)
    }

    /// Guards against a deadlock, not against slowness: a reader that asks for bytes far past
    /// the read-ahead thread's lead must be served (the thread goes past its lead to reach what the
    /// reader waits for), or `fill` would wait forever. The time limit only turns such a hang into
    /// a failure; it is far above the few seconds the test takes on an idle machine, because a busy
    /// 2-core CI machine decompresses libc's .debug_info twice many times slower.
    @Test("reading ahead over libc's debug file: a reader far past the lead is not left waiting",
          .timeLimit(.minutes(10)))
    func readAheadPastTheLead() throws {
        let file = try ELFFile(path: try SystemFile.libcDebug.path)
        let section = try #require(file.section(named: ".debug_info"))
        let whole = try file.contents(of: section).copyBytes()
        #expect(whole.count > 4 * SectionStream.step)
        let stream = try #require(try file.streamedContents(of: section))
        // No lead at all: the thread decompresses only what the reader waits for, here all at once.
        #expect(stream.startReadingAhead(lead: 0))
        try stream.fill(upTo: whole.count)
        #expect(Array(stream.bytes) == whole)
        // Again in unit-sized steps, each released behind, with the lead `dump` uses.
        try stream.rewind()
        #expect(stream.startReadingAhead(lead: 256 << 10))
        var offset = 0
        while offset < whole.count {
            let next = min(whole.count, offset + 3000)
            try stream.fill(upTo: next)
            #expect(stream.bytes[offset..<next].elementsEqual(whole[offset..<next]))
            stream.release(below: offset)
            offset = next
        }
        stream.stopReadingAhead()
    }

    @Test("the copies really use the algorithm under test", arguments: Variant.allCases)
    func copiesUseTheAlgorithm(_ variant: Variant) throws {
        let (_, compressedPath) = try variant.paths()
        let compressed = try ELFFile(path: compressedPath)
        let output = try Shell.run("readelf -tW \(compressedPath)")
        if let algorithm = variant.readelfAlgorithm {
            #expect(output.contains("\(algorithm), "))
            #expect(compressed.sections.contains { $0.flags & ELF.SHF_COMPRESSED != 0 })
        } else {
            #expect(compressed.sections.contains { $0.name == ".zdebug_info" })
            #expect(!compressed.sections.contains { $0.flags & ELF.SHF_COMPRESSED != 0 })
        }
    }

    @Test("asking for .debug_X finds GNU's .zdebug_X")
    func zdebugLookup() throws {
        let file = try ELFFile(path: try Fixtures.shared.get().programZlibGNU)
        #expect(file.section(named: ".debug_info")?.name == ".zdebug_info")
        #expect(file.section(named: ".debug_line")?.name == ".zdebug_line")
        #expect(file.section(named: ".debug_nonexistent") == nil)
        #expect(file.hasDWARF)
    }

    @Test("zlib and zlib-gnu inflate exactly as libelf's elf_compress does",
          arguments: [Variant.zlib, .zlibGNU, .elf32Zlib, .bigEndianZlib])
    func agreesWithLibELFDecompression(_ variant: Variant) throws {
        let (_, compressedPath) = try variant.paths()
        let file = try ELFFile(path: compressedPath)
        let oracle = try LibELFView(bytes: try readBytes(compressedPath), decompress: true)
        let compressed = file.sections.filter(\.isCompressed)
        #expect(compressed.count == oracle.decompressed.count)
        for section in compressed {
            #expect(try file.contents(of: section).copyBytes() == oracle.decompressed[section.name],
                    "\(section.name)")
        }
    }

    @Test("compressed copies agree with libelf on headers and symbols", arguments: Variant.allCases)
    func compressedCopiesAgreeWithLibELF(_ variant: Variant) throws {
        let (_, compressedPath) = try variant.paths()
        try expectAgreement(try ELFFile(path: compressedPath), withLibELFReading: try readBytes(compressedPath))
    }
}
