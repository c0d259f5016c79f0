import Foundation
import TestSupport
import Testing

/// Issue 19, item 22: an invalid input line is previewed on stderr (its first 80 bytes, control
/// bytes escaped, then its length), never echoed whole, by `lookup` and the `llvm-symbolizer` drop-in.
@Suite struct InputPreviewTests {
    static let fixture = CLI.fixture("gcc-c-O2-dwarf5")
    /// A 1,000,000-byte line that is no address, with a terminal escape and a NUL in its preview.
    static let hostile = "\u{1b}[2J\u{0}" + String(repeating: "z", count: 1_000_000 - 5)

    @Test func lookupPreviewsAnInvalidLine() throws {
        let result = try CLI.run(["lookup", Self.fixture], input: Self.hostile + "\n0x0\n")
        #expect(result.status == 1)
        let expected = "crashsym: not a hex address: '\\x1b[2J\\x00" + String(repeating: "z", count: 80 - 5) + "… (1000000 bytes)'\n"
        #expect(result.stderr == expected)
    }

    @Test func lookupPreviewsAnInvalidArgument() throws {
        let result = try CLI.run(["lookup", Self.fixture, String(repeating: "q", count: 100_000)])
        #expect(result.status == 2)
        #expect(result.stderr.utf8.count < 400, "\(result.stderr.prefix(400))")
        #expect(result.stderr.contains("… (100000 bytes)'"))
    }

    @Test func llvmSymbolizerPreviewsAnInvalidLine() throws {
        let result = try CLI.run(["llvm-symbolizer"], input: Self.hostile + "\n")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(result.stderr.utf8.count < 300, "\(result.stderr.prefix(300))")
        #expect(result.stderr.contains("error: '\\x1b[2J\\x00" + String(repeating: "z", count: 75) + "… (1000000 bytes)': no module offset has been specified\n"), "\(result.stderr.prefix(300))")
    }

    @Test func aShortInvalidLineIsPrintedAsLLVMPrintsIt() throws {
        let result = try CLI.run(["llvm-symbolizer"], input: "zzz\n")
        let llvm = try Tool.run(DropIn.llvmSymbolizer, [], input: Data("zzz\n".utf8))
        #expect(llvm.stderr.hasSuffix("error: 'zzz': no module offset has been specified\n"))
        #expect(result.stdout == llvm.text)
        #expect(result.stderr.replacingOccurrences(of: "crashsym", with: "llvm-symbolizer")
            == llvm.stderr.replacingOccurrences(of: DropIn.llvmSymbolizer, with: "llvm-symbolizer"), "\(result.stderr) vs \(llvm.stderr)")
    }
}
