#if canImport(Glibc)
import Glibc
#endif
import SymBytes
import SymDWARF
import SymELF
import SymTable
import TestSupport
import Testing

/// The DWARF reader gives back the pages of file-mapped sections as it walks them: what it
/// extracts must be exactly what it extracts from the same bytes in memory it owns (which it never
/// releases), whatever the thread count.
///
/// Every extraction runs under `HangGuard` (a bound counted from its own start), not a
/// `.timeLimit`: a full run once timed a test of these out at 120 s although each takes about
/// 2 s of CPU (1.1 to 4.9 s alone), because the trait's clock also runs while the test waits for
/// a thread of the cooperative pool, which other suites' blocking tests hold for minutes.
@Suite struct PageReleaseTests {
    /// How long one extraction may run: the largest (libc's debug file) takes seconds alone, a few
    /// times that on a loaded 2-core machine.
    static let extractionBound = 120.0

    static let corpora: [String] = ["gcc-c-O2-dwarf5", "clang-cpp-O2-dwarf5", "gcc-cpp-O2-dwarf5", "rust-O2",
                                    "gcc-c-O2-dwarf5-zlib-gnu"].map { DecoderAgreementTests.root + "/Fixtures/elf/" + $0 }
        + ["/usr/bin/python3.11d"]

    static func model(_ elf: ELFFile, threads: Int, streaming: Bool = false,
                      minimumSplitBytes: Int = 1 << 20) throws -> SymbolModel {
        try HangGuard.run(within: extractionBound, "\(elf.path): extraction, \(threads) threads, streaming \(streaming)") {
            var builder = ModelBuilder(module: ModuleIdentity(buildID: [], machine: 62, is64Bit: true, name: "m"))
            let sections = try DWARFSections(elf: elf, streaming: streaming ? DWARFReader.streamableSections : [])
            try DWARFReader.extract(sections, into: &builder, threads: threads, minimumSplitBytes: minimumSplitBytes)
            return builder.model
        }
    }

    /// The model of `elf` with its compressed `.debug_info` and `.debug_line` streamed through
    /// one walker, as `dump` of one file on two cores does.
    static func streamedModel(_ elf: ELFFile) throws -> SymbolModel {
        try model(elf, threads: 2, streaming: true, minimumSplitBytes: DWARFReader.defaultMinimumSplitBytes)
    }

    static func expectSame(_ left: SymbolModel, _ right: SymbolModel, _ what: String) {
        #expect(left.strings == right.strings, "\(what): strings")
        #expect(left.files == right.files, "\(what): files")
        #expect(left.scopes == right.scopes, "\(what): scopes")
        #expect(left.ranges == right.ranges, "\(what): ranges")
        #expect(left.lines == right.lines, "\(what): lines")
    }

    @Test(arguments: corpora)
    func releasingPagesChangesNothing(path: String) throws {
        let mapped = try ELFFile(path: path)
        let file = try MappedFile(path: path)
        let owned = try ELFFile(bytes: Array(file.bytes), path: path)
        let compressed = mapped.section(named: ".debug_info")?.isCompressed ?? false
        #expect(try DWARFSections(elf: mapped).fileMapped.contains(".debug_info") == !compressed)
        #expect(try DWARFSections(elf: owned).fileMapped.isEmpty, "memory the process owns is never released")
        let reference = try Self.model(owned, threads: 1)
        #expect(reference.lines.count > 100)
        for threads in [1, 2] {
            // Twice over the same mapping: the second walk reads pages the first one released.
            Self.expectSame(try Self.model(mapped, threads: threads), reference, "\(path) threads \(threads)")
            Self.expectSame(try Self.model(mapped, threads: threads), reference, "\(path) threads \(threads), again")
        }
    }

    /// Compressed files whose `.debug_info` the reader streams: libc's debug file (zlib, 2,063
    /// units in 5.8 MB, so many windows), and zlib and zstd copies of fixtures whose units refer to
    /// each other (rustc's `DW_FORM_ref_addr`: the section is then decompressed whole for the walk).
    static func streamedCorpora(copiesIn directory: String) throws -> [(path: String, original: String, crossUnit: Bool)] {
        let libc = "/lib/x86_64-linux-gnu/libc.so.6"
        let note = String(decoding: try DWARFReaderShell.run("readelf -n \(libc) | awk '/Build ID/ { print $3 }'"),
                          as: UTF8.self).filter { $0.isHexDigit }
        let debugFile = "/usr/lib/debug/.build-id/\(note.prefix(2))/\(note.dropFirst(2)).debug"
        var corpora = [(path: debugFile, original: debugFile, crossUnit: false)]
        for (fixture, algorithm) in [("rust-O2", "zlib"), ("rust-O2-dwarf5-v0", "zstd"), ("gcc-cpp-O2-dwarf5", "zstd")] {
            let original = "\(DecoderAgreementTests.root)/Fixtures/elf/\(fixture)"
            let copy = "\(directory)/\(fixture)-\(algorithm)"
            try DWARFReaderShell.run("objcopy --compress-debug-sections=\(algorithm) \(original) \(copy)")
            corpora.append((copy, original, fixture.hasPrefix("rust")))
        }
        return corpora
    }

    @Test("a streamed .debug_info gives the model of the whole section")
    func streamingChangesNothing() throws {
        let directory = try DWARFReaderShell.temporaryDirectory("page-release-streamed")
        defer { _ = try? DWARFReaderShell.run("rm -rf \(directory)") }
        for (path, original, crossUnit) in try Self.streamedCorpora(copiesIn: directory) {
            let file = try ELFFile(path: path)
            try #require(file.section(named: ".debug_info")?.isCompressed == true, "\(path) is compressed")
            let abbreviations = String(decoding: try DWARFReaderShell.run("llvm-dwarfdump --debug-abbrev \(original)"), as: UTF8.self)
            #expect(abbreviations.contains("DW_FORM_ref_addr") == crossUnit, "\(path): references across units")
            let reference = try Self.model(file, threads: 1)
            #expect(reference.lines.count > 100)
            // Streamed through one walker (two threads: the second decompresses).
            Self.expectSame(try Self.streamedModel(file), reference, "\(path) streamed")
            // With one thread, no core to spare: decompressed whole, once.
            Self.expectSame(try Self.model(file, threads: 1, streaming: true), reference, "\(path) one thread")
            // Split between two walkers, the section is decompressed whole again.
            Self.expectSame(try Self.model(file, threads: 2, streaming: true, minimumSplitBytes: 1), reference,
                            "\(path) streamed, two threads")
        }
    }

    @Test("a streamed .debug_info with damaged units throws or yields a model, never traps or hangs")
    func damagedStreamedInput() throws {
        let original = "\(DecoderAgreementTests.root)/Fixtures/elf/gcc-cpp-O2-dwarf5"
        let file = try MappedFile(path: original)
        let section = try #require(try ELFFile(path: original).section(named: ".debug_info"))
        let directory = try DWARFReaderShell.temporaryDirectory("page-release-damaged")
        defer { _ = try? DWARFReaderShell.run("rm -rf \(directory)") }
        var failures = 0
        for seed in 0..<40 {
            // Damage the DIEs (a few bytes, or a run of 0xff), then compress the copy.
            var random = SplitMix64(seed: UInt64(seed))
            var bytes = Array(file.bytes)
            let start = Int(section.offset), count = Int(section.size)
            if seed % 2 == 0 {
                for _ in 0..<3 { bytes[start + Int.random(in: 0..<count, using: &random)] ^= UInt8.random(in: 1...255, using: &random) }
            } else {
                let offset = start + Int.random(in: 0..<(count - 16), using: &random)
                for index in offset..<(offset + 16) { bytes[index] = 0xff }
            }
            let damaged = "\(directory)/damaged", compressed = "\(directory)/compressed-\(seed)"
            let descriptor = open(damaged, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            try #require(descriptor >= 0)
            _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            close(descriptor)
            try DWARFReaderShell.run("objcopy --compress-debug-sections=zlib \(damaged) \(compressed)")
            do {
                _ = try Self.streamedModel(try ELFFile(path: compressed))
            } catch {
                failures += 1
            }
        }
        #expect(failures > 0, "some damage breaks the input")
    }

    /// A line table of one sequence at `address`: `rows` rows in `file`.
    static func lineTable(_ address: UInt64, _ file: String, rows: Int) -> [UInt8] {
        let standard: [UInt8] = [0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1]
        var program = DWARFReaderForge()
        program.bytes([0, 9, 2]); program.u64(address)  // DW_LNE_set_address
        for _ in 0..<rows { program.u8(31) }            // special opcodes: a row each
        program.bytes([2, 4])                           // DW_LNS_advance_pc 4
        program.bytes([0, 1, 1])                        // DW_LNE_end_sequence
        return DWARFReaderTests.legacyLineTable(version: 4, minimumInstructionLength: 1, lineBase: -3, lineRange: 12,
                                                standardLengths: standard, directories: [], files: [(file, 0)],
                                                program: program.bytes)
    }

    /// Units (DWARF 4, one DIE each) whose line tables are at `offsets` of `.debug_line`.
    static func unitsWithLineTables(at offsets: [Int]) -> (info: [UInt8], abbreviations: [UInt8]) {
        let abbreviations = DWARFReaderForge.abbreviations([
            (1, DWARFReaderTests.Code.compileUnit, false, [(DWARFReaderTests.Code.stmtList, DWARFReaderTests.Code.secOffset, nil)]),
        ])
        var info: [UInt8] = []
        for offset in offsets {
            var body = DWARFReaderForge()
            body.uleb(1)
            body.u32(UInt32(offset))
            info += DWARFReaderForge.unit(version: 4, body: body.bytes)
        }
        return (info, abbreviations)
    }

    /// An ELF file (a DWARF-less fixture) holding `sections`, zlib-compressed where that makes
    /// them smaller, written as `directory/name.elf`.
    static func compressedELF(_ sections: [String: [UInt8]], named name: String, in directory: String) throws -> ELFFile {
        var arguments = ""
        for (section, bytes) in sections {
            let path = "\(directory)/\(name)\(section)"
            let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            try #require(descriptor >= 0)
            _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            close(descriptor)
            arguments += " --add-section \(section)=\(path)"
        }
        let host = "\(DecoderAgreementTests.root)/Fixtures/elf/gcc-c-O2-dwarf5-strip-all"
        let elf = "\(directory)/\(name).elf"
        try DWARFReaderShell.run("objcopy\(arguments) \(host) \(elf).plain && objcopy --compress-debug-sections=zlib \(elf).plain \(elf)")
        let file = try ELFFile(path: elf)
        // (objcopy leaves a section uncompressed when compressing would not shrink it: the tiny
        // `.debug_info` here.)
        try #require(file.section(named: ".debug_line")?.isCompressed == true)
        return file
    }

    @Test("line tables out of section order: a streamed .debug_line is read whole, the model unchanged")
    func streamedLineTablesOutOfOrder() throws {
        // Three units, each with a line table of one sequence; `.debug_line` holds the tables in
        // unit order, or the first unit's last. The first and last tables are bigger than a
        // stream gives back at a time, so that streaming the tables as if they were in section
        // order would give back the first unit's before it is read.
        let first = Self.lineTable(0x100000, "/a.c", rows: 400_000), second = Self.lineTable(0x200000, "/b.c", rows: 1),
            third = Self.lineTable(0x300000, "/c.c", rows: 400_000)
        #expect(first.count > 384 << 10 && third.count > 384 << 10)
        let directory = try DWARFReaderShell.temporaryDirectory("page-release-line-order")
        defer { _ = try? DWARFReaderShell.run("rm -rf \(directory)") }
        let (second0, third0) = (first.count, first.count + second.count)
        for (name, offsets) in [("in-order", [0, second0, third0]), ("out-of-order", [second0, third0, 0])] {
            let (info, abbreviations) = Self.unitsWithLineTables(at: offsets)
            let sections = [".debug_info": info, ".debug_abbrev": abbreviations, ".debug_line": first + second + third]
            let reference = try DWARFReaderTests.outcome(sections).get()
            #expect(reference.lines.count > 800_000)
            let file = try Self.compressedELF(sections, named: name, in: directory)
            Self.expectSame(try Self.streamedModel(file), reference, "\(name), streamed")
        }
    }

    @Test("units the walk splits after all (they share a big line table) read the streamed sections whole")
    func streamedButSplit() throws {
        // Three units on two big line tables, the last two sharing one: their weights (unit and
        // table bytes each) add up to more than the sections hold, so a split threshold just
        // above the sections' size chooses to stream, and `plan` then splits the units between
        // two walkers anyway (the first two, the last). Streamed, the second walker would give
        // back the first table while the first walker reads it.
        let first = Self.lineTable(0x100000, "/a.c", rows: 400_000), second = Self.lineTable(0x200000, "/b.c", rows: 400_000)
        let table = first + second
        let (info, abbreviations) = Self.unitsWithLineTables(at: [0, first.count, first.count])
        let sections = [".debug_info": info, ".debug_abbrev": abbreviations, ".debug_line": table]
        let reference = try DWARFReaderTests.outcome(sections).get()
        #expect(reference.lines.count > 800_000)
        let directory = try DWARFReaderShell.temporaryDirectory("page-release-split")
        defer { _ = try? DWARFReaderShell.run("rm -rf \(directory)") }
        let file = try Self.compressedELF(sections, named: "shared", in: directory)
        let threshold = info.count + table.count + 1
        Self.expectSame(try Self.model(file, threads: 2, streaming: true, minimumSplitBytes: threshold), reference,
                        "split after all")
    }

    @Test("the hang guard counts from the work's start: work started late passes, work that outruns the bound throws")
    func hangGuardCountsFromTheStart() throws {
        // Scheduled late (as a test waiting for a pool thread): the bound has not started yet.
        usleep(300_000)
        #expect(try HangGuard.run(within: 10, "quick") { 42 } == 42)
        #expect(throws: HangGuard.Exceeded.self) { try HangGuard.run(within: 0.1, "slow") { usleep(600_000) } }
        struct Failure: Error {}
        #expect(throws: Failure.self) { try HangGuard.run(within: 1, "failing") { throw Failure() } }
    }
}
