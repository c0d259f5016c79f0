import SymBytes
import SymELF
import Testing

/// Real binaries installed on the machine, checked against libelf and binutils readelf.
@Suite struct SystemFileTests {
    @Test("sections, segments and symbols agree with libelf", arguments: SystemFile.allCases)
    func agreesWithLibELF(_ system: SystemFile) throws {
        let path = try system.path
        let file = try ELFFile(path: path)
        #expect(file.path == path)
        try expectAgreement(file, withLibELFReading: try readBytes(path))
    }

    @Test("build-id agrees with readelf -n", arguments: SystemFile.allCases)
    func buildIDAgreesWithReadelf(_ system: SystemFile) throws {
        let path = try system.path
        let file = try ELFFile(path: path)
        #expect(file.buildIDHex == (try readelfBuildID(path)))
        #expect(file.buildID.map(hex) == file.buildIDHex)
    }

    @Test("load bias and first load offset agree with readelf -l", arguments: SystemFile.allCases)
    func loadBiasAgreesWithReadelf(_ system: SystemFile) throws {
        let path = try system.path
        let file = try ELFFile(path: path)
        let output = try Shell.run("readelf -lW \(Shell.quote(path))")
        let load = try #require(output.split(separator: "\n").first { $0.hasPrefix("  LOAD ") })
        let fields = load.split(separator: " ")
        #expect(file.firstLoadFileOffset == UInt64(fields[1].dropFirst(2), radix: 16))
        #expect(file.loadBias == UInt64(fields[2].dropFirst(2), radix: 16))
    }

    @Test("header and architecture agree with readelf -h", arguments: SystemFile.allCases)
    func headerAgreesWithReadelf(_ system: SystemFile) throws {
        let path = try system.path
        let file = try ELFFile(path: path)
        let output = try Shell.run("readelf -hW \(Shell.quote(path))")
        #expect(output.contains("Class:                             ELF64") == file.header.is64Bit)
        #expect(output.contains("little endian") == file.header.isLittleEndian)
        #expect(output.contains("Advanced Micro Devices X86-64"))
        #expect(file.architectureName == "x86_64")
        let type = output.contains("DYN (") ? ELF.ET_DYN : output.contains("EXEC (") ? ELF.ET_EXEC : 0
        #expect(file.header.type == type)
    }

    @Test("hasDWARF agrees with the section list readelf prints", arguments: SystemFile.allCases)
    func hasDWARFAgreesWithReadelf(_ system: SystemFile) throws {
        let path = try system.path
        let output = try Shell.run("readelf -SW \(Shell.quote(path))")
        let readelfSeesDWARF = output.split(separator: "\n").contains {
            ($0.contains(" .debug_info ") || $0.contains(" .zdebug_info ")) && !$0.contains("NOBITS")
        }
        #expect(try ELFFile(path: path).hasDWARF == readelfSeesDWARF)
    }

    @Test("libc's debug link names its debug file, whose CRC matches")
    func libcDebugLinkMatchesDebugFile() throws {
        let libc = try ELFFile(path: try SystemFile.libc.path)
        let link = try #require(libc.debugLink)
        let output = try Shell.run("readelf -wk \(Shell.quote(try SystemFile.libc.path))")
        #expect(output.contains("Separate debug info file: \(link.fileName)\n"))
        #expect(output.contains("CRC value: 0x\(String(link.crc, radix: 16))\n"))
        let debugPath = try SystemFile.libcDebug.path
        #expect(debugPath.hasSuffix("/" + link.fileName))
        let debugFile = try MappedFile(path: debugPath)
        #expect(withExtendedLifetime(debugFile) { gnuDebuglinkCRC32(debugFile.bytes) } == link.crc)
    }

    @Test("libc's debug file: NOBITS code is empty, zlib DWARF inflates as libelf does")
    func libcDebugFileContents() throws {
        let path = try SystemFile.libcDebug.path
        let file = try ELFFile(path: path)
        let text = try #require(file.section(named: ".text"))
        #expect(text.isNoBits && text.size > 0)
        #expect(try file.contents(of: text).isEmpty)
        #expect(file.hasDWARF)

        let oracle = try LibELFView(bytes: try readBytes(path), decompress: true)
        let compressed = file.sections.filter(\.isCompressed)
        #expect(!compressed.isEmpty)
        #expect(compressed.count == oracle.decompressed.count)
        for section in compressed {
            let contents = try file.contents(of: section)
            #expect(contents.copyBytes() == oracle.decompressed[section.name], "\(section.name)")
        }
    }
}
