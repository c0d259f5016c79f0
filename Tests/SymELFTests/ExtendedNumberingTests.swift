import SymELF
import Testing

/// Extended numbering (gABI: `e_shnum` 0, `SHN_XINDEX`, `PN_XNUM`), forged on real files and
/// checked against the unforged parse and libelf.
@Suite struct ExtendedNumberingTests {
    @Test("e_shnum = 0 and e_shstrndx = SHN_XINDEX read from section 0")
    func sectionCountAndNameIndexFromSectionZero() throws {
        let original = try readBytes(try Fixtures.shared.get().objects[.x86_64]!)
        var forged = original
        let count = peek(original, at: ELF64Layout.shnum, width: 2)
        let nameIndex = peek(original, at: ELF64Layout.shstrndx, width: 2)
        let zero = ELF64Layout.sectionHeader(original, 0)
        patch(&forged, at: ELF64Layout.shnum, 0, width: 2)
        patch(&forged, at: zero + ELF64Layout.shSize, count, width: 8)
        patch(&forged, at: ELF64Layout.shstrndx, UInt64(ELF.SHN_XINDEX), width: 2)
        patch(&forged, at: zero + ELF64Layout.shLink, nameIndex, width: 4)

        let file = try ELFFile(bytes: forged)
        let reference = try ELFFile(bytes: original)
        #expect(file.sections.count == Int(count))
        #expect(file.sections.map(\.name) == reference.sections.map(\.name))
        #expect(try file.symbols() == reference.symbols())
        try expectAgreement(file, withLibELFReading: forged)
    }

    @Test("e_phnum = PN_XNUM reads the count from section 0's sh_info")
    func programHeaderCountFromSectionZero() throws {
        let original = try readBytes(try Fixtures.shared.get().program)
        var forged = original
        let count = peek(original, at: ELF64Layout.phnum, width: 2)
        patch(&forged, at: ELF64Layout.phnum, UInt64(ELF.PN_XNUM), width: 2)
        patch(&forged, at: ELF64Layout.sectionHeader(original, 0) + ELF64Layout.shInfo, count, width: 4)
        let file = try ELFFile(bytes: forged)
        #expect(file.programHeaders == (try ELFFile(bytes: original)).programHeaders)
        #expect(file.programHeaders.count == Int(count))
        try expectAgreement(file, withLibELFReading: forged)
    }
}
