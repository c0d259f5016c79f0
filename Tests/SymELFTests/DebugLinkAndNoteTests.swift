import TestSupport
import SymBytes
import SymELF
import Testing

/// `.gnu_debuglink`, its CRC, and build-id notes on files made by binutils in the test.
@Suite struct DebugLinkAndNoteTests {
    @Test("debug link written by objcopy --add-gnu-debuglink: name and CRC")
    func objcopyDebugLink() throws {
        let program = try Fixtures.shared.get().program
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try Shell.run("""
            cd \(directory.path) && cp \(program) app && objcopy --only-keep-debug app app.debug \
            && objcopy --strip-debug --add-gnu-debuglink=app.debug app app.stripped
            """)
        let stripped = try ELFFile(path: directory.file("app.stripped"))
        let debug = try ELFFile(path: directory.file("app.debug"))
        let link = try #require(stripped.debugLink)
        #expect(link.fileName == "app.debug")

        let output = try Shell.run("readelf -wk \(directory.file("app.stripped"))")
        #expect(output.contains("CRC value: 0x\(String(link.crc, radix: 16))\n"))
        let debugBytes = try MappedFile(path: directory.file("app.debug"))
        #expect(withExtendedLifetime(debugBytes) { gnuDebuglinkCRC32(debugBytes.bytes) } == link.crc)

        #expect(!stripped.hasDWARF && debug.hasDWARF)
        let original = try ELFFile(path: program)
        #expect(debug.debugLink == nil && original.debugLink == nil)
        let readelfID = try readelfBuildID(program)
        #expect(stripped.buildIDHex == readelfID && debug.buildIDHex == readelfID)
    }

    @Test("the CRC is CRC-32/IEEE: its check value and gzip's independent trailer agree",
          arguments: [0, 1, 9, 1000, 70_000] as [Int])
    func crcMatchesGzip(_ length: Int) throws {
        var generator = SplitMix64(seed: UInt64(length))
        let data = length == 9 ? Array("123456789".utf8) : (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let crc = data.withUnsafeBytes { gnuDebuglinkCRC32($0) }
        if length == 9 { #expect(crc == 0xCBF4_3926) }
        if length == 0 { #expect(crc == 0) }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try writeBytes(data, to: directory.file("data"))
        // A gzip member ends with the CRC-32 of the data, little-endian, then the length.
        try Shell.run("gzip -n -k \(directory.file("data"))")
        let member = try readBytes(directory.file("data.gz"))
        #expect(crc == UInt32(peek(member, at: member.count - 8, width: 4)))
    }

    @Test("build-id is found in PT_NOTE segments when there is no section table")
    func buildIDFromSegments() throws {
        let program = try Fixtures.shared.get().program
        var bytes = try readBytes(program)
        patch(&bytes, at: ELF64Layout.shoff, 0, width: 8)
        patch(&bytes, at: ELF64Layout.shnum, 0, width: 2)
        patch(&bytes, at: ELF64Layout.shstrndx, 0, width: 2)
        let file = try ELFFile(bytes: bytes)
        #expect(file.sections.isEmpty)
        #expect(file.buildIDHex == (try readelfBuildID(program)))
        #expect(try file.segmentNotes().contains { $0.name == "GNU" && $0.type == ELF.NT_GNU_BUILD_ID })
    }

    @Test("notes in sections agree with readelf -n: owners, types and the 8-aligned property note")
    func sectionNotesAgreeWithReadelf() throws {
        let path = "/bin/ls"
        let notes = try ELFFile(path: path).sectionNotes()
        let output = try Shell.run("readelf -nW \(path)")
        let owners = output.split(separator: "\n").filter { $0.hasPrefix("  GNU ") }
        #expect(notes.count == owners.count)
        #expect(notes.allSatisfy { $0.name == "GNU" })
        // NT_GNU_PROPERTY_TYPE_0 (5) lives in the 8-aligned .note.gnu.property section.
        #expect(notes.contains { $0.type == 5 } == output.contains("NT_GNU_PROPERTY_TYPE_0"))
        #expect(notes.contains { $0.type == 1 } == output.contains("NT_GNU_ABI_TAG"))
        #expect(try ELFFile(path: path).segmentNotes() == notes)
    }

    @Test("uncompressed contents point into the mapping and keep it alive")
    func zeroCopyContents() throws {
        let program = try Fixtures.shared.get().program
        let expected = try readBytes(program)
        let (contents, section): (SectionContents, ELFSection) = try {
            let mapped = try MappedFile(path: program)
            let file = try ELFFile(file: mapped)
            let text = try #require(file.section(named: ".text"))
            let contents = try file.contents(of: text)
            withExtendedLifetime(mapped) {
                #expect(contents.withUnsafeBytes { $0.baseAddress } == mapped.bytes.baseAddress! + Int(text.offset))
            }
            return (contents, text)
        }()
        // The file and mapping objects are gone; the contents still read the mapped bytes.
        #expect(contents.copyBytes() == Array(expected[Int(section.offset)..<Int(section.offset + section.size)]))
    }
}
