import SymBytes
import SymDWARF
import SymELF
import SymTable
import Testing

/// The DWARF reader gives back the pages of file-mapped sections as it walks them: what it
/// extracts must be exactly what it extracts from the same bytes in memory it owns (which it never
/// releases), whatever the thread count.
@Suite struct PageReleaseTests {
    static let corpora: [String] = ["gcc-c-O2-dwarf5", "clang-cpp-O2-dwarf5", "gcc-cpp-O2-dwarf5", "rust-O2",
                                    "gcc-c-O2-dwarf5-zlib-gnu"].map { DecoderAgreementTests.root + "/Fixtures/elf/" + $0 }
        + ["/usr/bin/python3.11d"]

    static func model(_ elf: ELFFile, threads: Int) throws -> SymbolModel {
        var builder = ModelBuilder(module: ModuleIdentity(buildID: [], machine: 62, is64Bit: true, name: "m"))
        try DWARFReader.extract(DWARFSections(elf: elf), into: &builder, threads: threads, minimumSplitBytes: 1 << 20)
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
}
