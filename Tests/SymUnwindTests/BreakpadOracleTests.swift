import Foundation
import SymBytes
import SymELF
import SymUnwind
import Symbolication
import Testing
import TestSupport

/// `dump --format breakpad`'s CFI against Breakpad's own (the reference `crash_linux.sym`) and
/// Sentry's `symbolic` (`CfiCache`): the rules must agree at every address, and each range
/// where they do not is one of the explained differences below, checked against our own rows.
@Suite struct BreakpadOracleTests {
    /// Why the peer's rules and ours may differ in a range.
    enum Explanation: String {
        /// The CFA is a DWARF expression Breakpad's postfix cannot say (the PLT's `rsp + 8 +
        /// ((rip & 15) >= 11) << 3`): we write no rule there, the peers keep the rule of the
        /// row before it, which is wrong there.
        case inexpressibleCFA
        /// The FDE uses `DW_CFA_expression` rules (glibc's `__restore_rt`: CFA and registers in
        /// the signal frame): symbolic drops the whole FDE, we translate them to postfix
        /// (`$rsp 160 + ^`).
        case expressionRules
        /// On a link-register machine the return address's rule was restored to none (an
        /// AArch64 epilogue after `ldp x29, x30`): the return address is back in x30, which we
        /// say (`.ra: x30`); symbolic keeps the stale saved-slot rule, which reads below sp.
        case restoredLinkRegister
    }

    /// Classifies a difference with our own rows, or nil when nothing explains it.
    static func explain(_ difference: EvaluatedCFI.Difference, cfi: CallFrameInfo, base: UInt64) -> Explanation? {
        let address = difference.start + base
        guard let entry = cfi.entry(at: address), let row = entry.row(at: address) else { return nil }
        let hasExpressionRule = entry.rows.contains { row in
            if case .expression = row.cfa { return true }
            return row.registers.contains {
                if case .expression = $0.rule { return true }
                if case .valueExpression = $0.rule { return true }
                return false
            }
        }
        if case .expression = row.cfa, difference.ours.isEmpty, !difference.reference.isEmpty {
            return .inexpressibleCFA
        }
        if difference.reference.isEmpty, !difference.ours.isEmpty, hasExpressionRule { return .expressionRules }
        if difference.reference.count == 1, difference.ours.count == 1, row.rule(for: entry.returnAddressRegister) == nil {
            var reference = difference.reference.first!, ours = difference.ours.first!
            if ours[".ra"] == "x30" || ours[".ra"] == "lr" {
                reference[".ra"] = nil
                ours[".ra"] = nil
                if reference == ours { return .restoredLinkRegister }
            }
        }
        return nil
    }

    /// Compares our `.sym` text of `path` with `reference`; returns the bytes per explanation.
    static func compare(_ path: String, reference: String, debugFile: String? = nil) throws -> [Explanation: UInt64] {
        let binary = try ELFFile(path: path)
        let debug = try debugFile.map { try ELFFile(path: $0) }
        let ours = try BreakpadWriter.symbolFile(binary: binary, debugFile: debug)
        let cfi = try CallFrameInfo.read(binary: binary, debugFile: debug)
        let base = BreakpadWriter.loadAddress(of: binary)
        let expected = EvaluatedCFI(text: reference), actual = EvaluatedCFI(text: ours)
        #expect(!expected.spans.isEmpty && !actual.spans.isEmpty)
        var explained: [Explanation: UInt64] = [:]
        var unexplained: [EvaluatedCFI.Difference] = []
        for difference in expected.differences(from: actual) {
            if let why = explain(difference, cfi: cfi, base: base) {
                explained[why, default: 0] += difference.end - difference.start
            } else {
                unexplained.append(difference)
            }
        }
        #expect(unexplained.count == 0, "\(path): \(unexplained.count) unexplained differences, first: \(unexplained.prefix(3).map { "0x\(String($0.start, radix: 16))..0x\(String($0.end, radix: 16)) reference \($0.reference) ours \($0.ours)" })")
        return explained
    }

    @Test("crash_linux: Breakpad's own CFI, the same rules at every address but the PLT's")
    func breakpadReference() throws {
        let reference = try String(contentsOfFile: UnwindFixtures.reference + "/crash_linux.sym", encoding: .utf8)
        let explained = try Self.compare(UnwindFixtures.reference + "/crash_linux", reference: reference)
        // .plt is 0x1a90..0x1f00 (0x470 bytes); its first 16 bytes have plain rules.
        #expect(explained == [.inexpressibleCFA: 0x460])
    }

    @Test("crash_linux: Breakpad's module id and code id from the build-id")
    func moduleID() throws {
        let file = try ELFFile(path: UnwindFixtures.reference + "/crash_linux")
        #expect(BreakpadWriter.moduleID(buildID: file.buildID ?? []) == "D2554CDB926136C4B9766A086583B9B50")
        let text = try BreakpadWriter.symbolFile(binary: file)
        let lines = text.split(separator: "\n").prefix(2)
        #expect(lines == ["MODULE Linux x86_64 D2554CDB926136C4B9766A086583B9B50 crash_linux",
                          "INFO CODE_ID DB4C55D26192C436B9766A086583B9B5A6D2E271"])
        // Addresses are relative to the load address 0x400000: main is at 0x401f00 + ...
        #expect(text.contains("\nFUNC "))
        #expect(text.contains("\nFILE "))
        #expect(text.contains("\nPUBLIC "))
    }

    static let fixtures = [
        "aarch64-clang-start-O2", "aarch64-gcc-c-O2", "armv7-clang-start-O2", "i386-clang-start-O2",
        "clang-c-O0-dwarf4", "clang-c-O2-dwarf5", "clang-cpp-O0-dwarf5", "clang-cpp-O2-dwarf4",
        "gcc-c-O0-dwarf2", "gcc-c-O2-dwarf5", "gcc-c-O2-dwarf5-nopie", "gcc-cpp-O2-dwarf5", "greet-app",
        "libgreet.so", "libnative-android21-aarch64.so", "rust-O0", "rust-O2", "swift-O", "swift-Onone",
        // riscv64-clang-start-O2 is left out: symbolic 13.9 has no RISC-V register names and
        // writes `STACK CFI` deltas without their INIT record there.
    ]

    @Test("ELF fixtures: symbolic's CfiCache agrees at every address", arguments: fixtures)
    func symbolicFixtures(_ name: String) throws {
        let path = UnwindFixtures.elf(name)
        let explained = try Self.compare(path, reference: try UnwindFixtures.symbolicCFI(path))
        // The only differences these have: gcc's and swiftc's PLT (CFA expression), and on
        // aarch64-gcc-c-O2 the restored x30.
        for key in explained.keys { #expect(key == .inexpressibleCFA || key == .restoredLinkRegister, "\(name): \(key)") }
        if name == "aarch64-gcc-c-O2" { #expect(explained[.restoredLinkRegister] != nil) }
    }

    @Test("python3.11d: symbolic's CfiCache agrees at every address but the PLT's")
    func symbolicPython() throws {
        let explained = try Self.compare(UnwindFixtures.python, reference: try UnwindFixtures.symbolicCFI(UnwindFixtures.python))
        #expect(Set(explained.keys) == [.inexpressibleCFA])
    }

    @Test("libc with its debug file: symbolic's CfiCache of libc.so.6 agrees but the PLT and __restore_rt")
    func symbolicLibc() throws {
        // The debug file keeps .eh_frame only as NOBITS: the rules come from the binary, which is
        // what symbolic is run on.
        let binary = try ELFFile(path: UnwindFixtures.libc)
        let debug = "/usr/lib/debug/.build-id/" + hexString(binary.buildID!.prefix(1)) + "/"
            + hexString(binary.buildID!.dropFirst()) + ".debug"
        #expect(FileManager.default.fileExists(atPath: debug), "libc6-dbg is needed: run scripts/deps test")
        let explained = try Self.compare(UnwindFixtures.libc, reference: try UnwindFixtures.symbolicCFI(UnwindFixtures.libc),
                                         debugFile: debug)
        #expect(Set(explained.keys) == [.inexpressibleCFA, .expressionRules])
        // __restore_rt (0x3c04f..0x3c059 here) is the signal trampoline: its rules come through.
        let cfi = try CallFrameInfo.read(binary: binary)
        let restore = try #require(try ELFFile(path: debug).symbolAddress("__restore_rt"))
        let entry = try #require(cfi.entry(at: restore))
        #expect(entry.isSignalFrame)
    }
}

extension ELFFile {
    /// The value of the first symbol called `name`, from `.symtab` or `.dynsym`.
    func symbolAddress(_ name: String) throws -> UInt64? {
        var found: UInt64?
        try forEachSymbol { symbol in if found == nil && symbol.name == name { found = symbol.value } }
        return found
    }
}
