import SymBytes
import SymELF
import Testing

/// Objects compiled by clang for several architectures, classes and byte orders.
@Suite struct CrossArchitectureTests {
    private func object(_ target: CrossTarget) throws -> String {
        try #require(try Fixtures.shared.get().objects[target])
    }

    @Test("header: machine, class, byte order and architecture name", arguments: CrossTarget.allCases)
    func header(_ target: CrossTarget) throws {
        let file = try ELFFile(path: try object(target))
        #expect(file.architectureName == target.expectedArchitecture)
        #expect(file.header.machine == target.expectedMachine)
        #expect(file.header.is64Bit == target.is64Bit)
        #expect(file.header.isLittleEndian == target.isLittleEndian)
        #expect(file.header.type == ELF.ET_REL)
        #expect(file.programHeaders.isEmpty)
        #expect(file.loadBias == 0 && file.firstLoadFileOffset == 0)
        #expect(file.hasDWARF)
        #expect(file.buildID == nil)
    }

    @Test("sections and symbols agree with libelf", arguments: CrossTarget.allCases)
    func agreesWithLibELF(_ target: CrossTarget) throws {
        let path = try object(target)
        try expectAgreement(try ELFFile(path: path), withLibELFReading: try readBytes(path))
    }

    @Test("symbols of the C source have the kinds and sizes the source implies", arguments: CrossTarget.allCases)
    func symbolsMatchSource(_ target: CrossTarget) throws {
        let symbols = try ELFFile(path: try object(target)).symbols()
        let compute = try #require(symbols.first { $0.name == "compute" })
        #expect(compute.type == ELF.STT_FUNC && compute.binding == ELF.STB_GLOBAL && compute.isFunction)
        #expect(compute.size > 0 && compute.isDefined && !compute.isDynamic)
        let counter = try #require(symbols.first { $0.name == "counter" })
        #expect(counter.type == ELF.STT_OBJECT && counter.size == 4)
        let greeting = try #require(symbols.first { $0.name == "greeting" })
        #expect(greeting.type == ELF.STT_OBJECT && greeting.size == (target.is64Bit ? 8 : 4))
        #expect(symbols.contains { $0.type == ELF.STT_FILE && $0.name == "small.c" })
    }

    @Test("section contents equal what llvm-objcopy --dump-section writes", arguments: CrossTarget.allCases)
    func contentsMatchObjcopy(_ target: CrossTarget) throws {
        let path = try object(target)
        let file = try ELFFile(path: path)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let names = file.sections.map(\.name)
        let dumpable = file.sections.filter { section in
            section.index > 0 && !section.isNoBits && names.filter { $0 == section.name }.count == 1
        }
        #expect(dumpable.count > 5)
        let arguments = dumpable.map { "--dump-section \(Shell.quote($0.name))=\(directory.file("\($0.index)"))" }
        try Shell.run("llvm-objcopy \(arguments.joined(separator: " ")) \(path) \(directory.file("out.o"))")
        for section in dumpable {
            let expected = section.size == 0 ? [] : try readBytes(directory.file("\(section.index)"))
            #expect(try file.contents(of: section).copyBytes() == expected, "\(section.name)")
        }
    }
}
