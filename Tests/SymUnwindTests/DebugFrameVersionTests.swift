import Foundation
import SymUnwind
import Testing
import TestSupport

/// `.debug_frame` in the forms no fixture has: a CIE of version 3 (DWARF 3: the return-address
/// register as a ULEB128) written by GNU as, checked against readelf's interpretation of the
/// same section; and the 64-bit DWARF format (lengths escaped by 0xffffffff, 8-byte CIE ids and
/// pointers), the same records rewritten, which must give the same rows.
@Suite struct DebugFrameVersionTests {
    static let assembly = """
        \t.cfi_sections .debug_frame
        \t.text
        \t.globl f
        f:
        \t.cfi_startproc
        \tpushq %rbp
        \t.cfi_def_cfa_offset 16
        \t.cfi_offset %rbp, -16
        \tmovq %rsp, %rbp
        \t.cfi_def_cfa_register %rbp
        \tpushq %rbx
        \t.cfi_offset %rbx, -24
        \tnop
        \tpopq %rbx
        \t.cfi_restore %rbx
        \tpopq %rbp
        \t.cfi_def_cfa %rsp, 8
        \tret
        \t.cfi_endproc

        """

    /// The object GNU as makes of `assembly` with CIE version 3.
    static func object() throws -> String {
        let base = NSTemporaryDirectory() + "crashsym-cie3-" + UUID().uuidString
        try assembly.write(toFile: base + ".s", atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: base + ".s") }
        let run = try Tool.run("/usr/bin/as", ["--gdwarf-cie-version=3", base + ".s", "-o", base + ".o"])
        try #require(run.status == 0, "as: \(run.stderr)")
        return base + ".o"
    }

    static let names: [UInt16: String] = [3: "rbx", 6: "rbp", 7: "rsp", 16: "ra"]

    /// readelf --debug-dump=frames-interp's rows of the FDEs: address and column → value.
    static func readelfRows(_ path: String) throws -> [(UInt64, [String: String])] {
        let text = try Tool.output("/usr/bin/readelf", ["--debug-dump=frames-interp", path])
        var rows: [(UInt64, [String: String])] = []
        var columns: [String] = []
        var inFDE = false
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ").map(String.init)
            if words.count >= 4 && words[3] == "FDE" { inFDE = true; continue }
            if words.count >= 4 && words[3] == "CIE" { inFDE = false; continue }
            if words.first == "LOC" { columns = words; continue }
            guard inFDE, words.count == columns.count, let address = UInt64(words[0], radix: 16) else { continue }
            rows.append((address, Dictionary(uniqueKeysWithValues: zip(columns.dropFirst(), words.dropFirst()))))
        }
        return rows
    }

    /// Our row in readelf's notation for `columns`.
    static func readelfText(_ row: UnwindRow, columns: [String]) -> [String: String] {
        var result: [String: String] = [:]
        if case .registerOffset(let register, let offset) = row.cfa {
            result["CFA"] = (names[register] ?? "r\(register)") + (offset < 0 ? "\(offset)" : "+\(offset)")
        }
        for column in columns where column != "CFA" {
            guard let number = names.first(where: { $0.value == column })?.key else { continue }
            switch row.rule(for: number) {
            case nil, .undefined: result[column] = "u"
            case .offset(let offset): result[column] = "c" + (offset < 0 ? "\(offset)" : "+\(offset)")
            case let other: result[column] = "\(String(describing: other))"
            }
        }
        return result
    }

    /// The records of a 32-bit `.debug_frame` rewritten in the 64-bit DWARF format.
    static func sixtyFourBit(_ bytes: [UInt8]) -> [UInt8] {
        func u32(_ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(bytes[at + $1]) << (8 * UInt32($1)) } }
        func le(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) } }
        var output: [UInt8] = []
        var newOffset: [Int: Int] = [:]
        var offset = 0
        while offset + 8 <= bytes.count {
            let length = Int(u32(offset)), id = u32(offset + 4)
            newOffset[offset] = output.count
            let pointer: UInt64 = id == 0xffff_ffff ? UInt64.max : UInt64(newOffset[Int(id)] ?? 0)
            output += [0xff, 0xff, 0xff, 0xff] + le(UInt64(length + 4)) + le(pointer) + bytes[(offset + 8)..<(offset + 4 + length)]
            offset += 4 + length
        }
        return output
    }

    @Test("CIE version 3 (GNU as): every row readelf interprets, and the same rows in the 64-bit DWARF format")
    func version3And64Bit() throws {
        let path = try Self.object()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let section = try #require(try UnwindFixtures.section(".debug_frame", of: path))
        #expect(section.bytes[8] == 3, "CIE version \(section.bytes[8])")
        let cfi = CallFrameInfoTests.read(section.bytes, address: 0, kind: .debugFrame)
        #expect(cfi.diagnostics.isEmpty)
        let entry = try #require(cfi.entries.first)
        #expect(cfi.entries.count == 1 && entry.start == 0 && entry.end == 9 && entry.returnAddressRegister == 16)
        let expected = try Self.readelfRows(path)
        #expect(expected.count == 6)
        #expect(entry.rows.map(\.address) == expected.map(\.0))
        for (row, (address, columns)) in zip(entry.rows, expected) {
            #expect(Self.readelfText(row, columns: Array(columns.keys)) == columns, "0x\(String(address, radix: 16))")
        }
        let wide = Self.sixtyFourBit(section.bytes)
        #expect(wide.count == section.bytes.count + 2 * 12)
        let wideCFI = CallFrameInfoTests.read(wide, address: 0, kind: .debugFrame)
        #expect(wideCFI.diagnostics.isEmpty)
        #expect(wideCFI.entries == cfi.entries)
    }
}
