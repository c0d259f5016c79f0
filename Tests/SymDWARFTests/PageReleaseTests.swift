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
@Suite struct PageReleaseTests {
    static let corpora: [String] = ["gcc-c-O2-dwarf5", "clang-cpp-O2-dwarf5", "gcc-cpp-O2-dwarf5", "rust-O2",
                                    "gcc-c-O2-dwarf5-zlib-gnu"].map { DecoderAgreementTests.root + "/Fixtures/elf/" + $0 }
        + ["/usr/bin/python3.11d"]

    static func model(_ elf: ELFFile, threads: Int, streaming: Bool = false,
                      minimumSplitBytes: Int = 1 << 20) throws -> SymbolModel {
        var builder = ModelBuilder(module: ModuleIdentity(buildID: [], machine: 62, is64Bit: true, name: "m"))
        let sections = try DWARFSections(elf: elf, streaming: streaming ? [".debug_info"] : [])
        try DWARFReader.extract(sections, into: &builder, threads: threads, minimumSplitBytes: minimumSplitBytes)
        return builder.model
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

    @Test("a streamed .debug_info gives the model of the whole section", .timeLimit(.minutes(5)))
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
            Self.expectSame(try Self.model(file, threads: 1, streaming: true), reference, "\(path) streamed")
            // Split between two walkers, the section is decompressed whole again.
            Self.expectSame(try Self.model(file, threads: 2, streaming: true, minimumSplitBytes: 1), reference,
                            "\(path) streamed, two threads")
        }
    }

    @Test("a streamed .debug_info with damaged units throws or yields a model, never traps or hangs",
          .timeLimit(.minutes(3)))
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
                _ = try Self.model(try ELFFile(path: compressed), threads: 1, streaming: true)
            } catch {
                failures += 1
            }
        }
        #expect(failures > 0, "some damage breaks the input")
    }
}
