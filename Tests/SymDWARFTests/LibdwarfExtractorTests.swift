import SymDWARF
import SymELF
import SymTable
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct LibdwarfExtractorTests {
    @Test func extractsPython() throws {
        let elf = try ELFFile(path: "/usr/bin/python3.11d")
        let sections = try DWARFSections(elf: elf)
        var builder = ModelBuilder(module: ModuleIdentity(buildID: elf.buildID ?? [], machine: elf.header.machine,
                                                          is64Bit: true, name: "python3.11d"))
        var start = timespec()
        clock_gettime(CLOCK_MONOTONIC, &start)
        try LibdwarfExtractor.extract(sections, into: &builder)
        var end = timespec()
        clock_gettime(CLOCK_MONOTONIC, &end)
        let seconds = Double(end.tv_sec - start.tv_sec) + Double(end.tv_nsec - start.tv_nsec) / 1e9
        let model = builder.model
        print("libdwarf python3.11d: \(seconds)s scopes=\(model.scopes.count) inlined=\(model.scopes.filter(\.isInlined).count) lines=\(model.lines.count) files=\(model.files.count)")
        #expect(model.scopes.count > 1000)
        #expect(model.lines.count > 10000)
    }
}

