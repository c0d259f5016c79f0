import Foundation
import SymBytes
import SymELF
import SymTable
import SymUnwind
import Symbolication
import Testing
import TestSupport

/// The unwind rules a converted table stores (`.csym` v4) against independent extractors:
/// Breakpad's own `crash_linux.sym` and what `dump --format breakpad` writes from the ELF file
/// (the same `CallFrameInfo`, a different writer). Each table rule is written as a Breakpad
/// `STACK CFI INIT` record and evaluated per address by `EvaluatedCFI`.
@Suite struct TableUnwindRulesTests {
    /// Breakpad's x86_64 register names (`DwarfCFIToModule::RegisterNames`) of rax..rip.
    static let names = ["$rax", "$rdx", "$rcx", "$rbx", "$rsi", "$rdi", "$rbp", "$rsp",
                        "$r8", "$r9", "$r10", "$r11", "$r12", "$r13", "$r14", "$r15", "$rip"]

    static func name(_ register: UInt16) -> String { Int(register) < names.count ? names[Int(register)] : "$\(register)" }

    /// The table's rules as `STACK CFI INIT` records, addresses less `base`.
    static func breakpadText(_ table: SymbolTable, base: UInt64) throws -> String {
        var out = ""
        for index in 0..<table.unwindRangeCount {
            let (addresses, record) = try table.unwindRule(inRange: index)
            guard let record, addresses.upperBound != .max else { continue }
            let rule = try table.storedRule(of: record)
            // A CFA by expression (PLT entries): Breakpad's records leave those addresses out.
            if rule.cfaExpression != nil { continue }
            out += "STACK CFI INIT \(String(addresses.lowerBound - base, radix: 16)) \(String(addresses.count, radix: 16))"
            out += " .cfa: \(name(rule.cfaRegister)) \(rule.cfaOffset) +"
            var others = ""
            for register in rule.registers {
                let text: String
                switch register.kind {
                // Expressions: the Breakpad writer translates some to postfix; compared apart
                // (`tableRowsAreTheELFRows`).
                case .undefined, .unknown, .expression, .valueExpression: continue
                case .sameValue: text = name(register.register)
                case .offset: text = ".cfa \(register.value) + ^"
                case .valueOffset: text = ".cfa \(register.value) +"
                case .register: text = name(UInt16(register.value))
                }
                if register.register == rule.returnAddressRegister { out += " .ra: \(text)" } else { others += " \(name(register.register)): \(text)" }
            }
            out += others + "\n"
        }
        return out
    }

    /// The table `crashsym dump` makes of `path` (with `debugFile`), opened.
    static func table(_ path: String, debugFile: String? = nil) throws -> (SymbolTable, ELFFile) {
        let binary = try ELFFile(path: path)
        let debug = try debugFile.map { try ELFFile(path: $0) }
        return (try SymbolTable(bytes: try ModuleConverter.table(binary: binary, debugFile: debug)), binary)
    }

    @Test("crash_linux: the table's rules are Breakpad's own at every address but the PLT's")
    func agreesWithBreakpad() throws {
        let (table, binary) = try Self.table(UnwindFixtures.reference + "/crash_linux")
        #expect(table.hasUnwindRules)
        let reference = EvaluatedCFI(text: try String(contentsOfFile: UnwindFixtures.reference + "/crash_linux.sym", encoding: .utf8))
        let ours = EvaluatedCFI(text: try Self.breakpadText(table, base: BreakpadWriter.loadAddress(of: binary)))
        #expect(reference.spans.count > 10 && ours.spans.count > 10)
        let differences = reference.differences(from: ours)
        // Only the PLT (0x1a90..0x1f00 but its first 16 bytes), whose CFA is an expression the
        // table does not store; Breakpad's record before it runs on with a rule wrong there.
        let cfi = try UnwindFixtures.callFrameInfo(UnwindFixtures.reference + "/crash_linux")
        var plt: UInt64 = 0
        for difference in differences {
            let row = cfi.row(at: difference.start + 0x400000)?.row
            if case .expression = row?.cfa, difference.ours.isEmpty { plt += difference.end - difference.start; continue }
            Issue.record("0x\(String(difference.start, radix: 16))..0x\(String(difference.end, radix: 16)): Breakpad \(difference.reference), table \(difference.ours)")
        }
        #expect(plt == 0x460)
    }

    /// The rules of `dump --format breakpad` (from the ELF file) and the table's agree at every
    /// address, but where a register's rule is a DWARF expression (the Breakpad writer
    /// translates it to postfix; the table stores the expression, which `breakpadText` leaves
    /// out: `tableRowsAreTheELFRows` compares expressions)
    /// and after an epilogue restored registers (Breakpad's delta records keep stale rules).
    static func compareWithBreakpadWriter(_ path: String, debugFile: String? = nil) throws -> UInt64 {
        let (table, binary) = try Self.table(path, debugFile: debugFile)
        let debug = try debugFile.map { try ELFFile(path: $0) }
        let writer = EvaluatedCFI(text: try BreakpadWriter.symbolFile(binary: binary, debugFile: debug))
        let base = BreakpadWriter.loadAddress(of: binary)
        let ours = EvaluatedCFI(text: try Self.breakpadText(table, base: base))
        let cfi = try CallFrameInfo.read(binary: binary, debugFile: debug)
        var expressionBytes: UInt64 = 0
        var unexplained = 0
        for difference in writer.differences(from: ours) {
            let row = cfi.row(at: difference.start + base)?.row
            let hasExpression = row?.registers.contains {
                if case .expression = $0.rule { return true }
                if case .valueExpression = $0.rule { return true }
                return false
            } ?? false
            if hasExpression { expressionBytes += difference.end - difference.start; continue }
            // An epilogue restored registers (`DW_CFA_restore` after `pop`): Breakpad's records
            // are deltas and cannot drop a rule, so the writer's text keeps the stale saved-slot
            // rules; the table has none for them, as the row says.
            if let row, difference.reference.count == 1, difference.ours.count == 1,
               let written = difference.reference.first, let stored = difference.ours.first,
               stored.allSatisfy({ written[$0.key] == $0.value }),
               written.keys.filter({ stored[$0] == nil }).allSatisfy({ key in
                   !row.registers.contains { Self.name($0.register) == key } }) {
                continue
            }
            unexplained += 1
            if unexplained <= 3 {
                Issue.record("\(path) 0x\(String(difference.start, radix: 16))..0x\(String(difference.end, radix: 16)): writer \(difference.reference), table \(difference.ours)")
            }
        }
        #expect(unexplained == 0, "\(path): \(unexplained) unexplained differences")
        return expressionBytes
    }

    @Test("crash_linux and python3.11d: the table's rules are dump --format breakpad's at every address")
    func agreesWithTheBreakpadWriter() throws {
        #expect(try Self.compareWithBreakpadWriter(UnwindFixtures.reference + "/crash_linux") == 0)
        #expect(try Self.compareWithBreakpadWriter(UnwindFixtures.python) == 0)
    }

    @Test("libc with its debug file: the same but __restore_rt's expression rules (the writer translates them to postfix, the table's Breakpad text leaves them out)")
    func agreesWithTheBreakpadWriterOnLibc() throws {
        let binary = try ELFFile(path: UnwindFixtures.libc)
        let debug = "/usr/lib/debug/.build-id/" + hexString(binary.buildID!.prefix(1)) + "/"
            + hexString(binary.buildID!.dropFirst()) + ".debug"
        try #require(FileManager.default.fileExists(atPath: debug), "libc6-dbg is needed: run scripts/deps test")
        let expressionBytes = try Self.compareWithBreakpadWriter(UnwindFixtures.libc, debugFile: debug)
        // __restore_rt's FDE (about ten bytes) and nothing else.
        #expect(expressionBytes > 0 && expressionBytes < 64)
    }

    /// The ELF file's row and the table's rule, written the same way for comparison.
    static func text(_ row: UnwindRow) -> String {
        let cfa: String = switch row.cfa {
        case .registerOffset(let register, let offset): "r\(register)+\(offset)"
        case .expression(let bytes): "expr\(bytes)"
        }
        return cfa + row.registers.map { rule -> String in
            let text: String = switch rule.rule {
            case .undefined: "undefined"
            case .sameValue: "same"
            case .offset(let value): "offset \(value)"
            case .valueOffset(let value): "value offset \(value)"
            case .register(let other): "r\(other)"
            case .expression(let bytes): "expr\(bytes)"
            case .valueExpression(let bytes): "value expr\(bytes)"
            }
            return " r\(rule.register): " + text
        }.joined()
    }

    static func text(_ rule: StoredUnwindRule) -> String {
        let cfa = rule.cfaExpression.map { "expr\($0)" } ?? "r\(rule.cfaRegister)+\(rule.cfaOffset)"
        return cfa + rule.registers.map { register -> String in
            let text: String = switch register.kind {
            case .undefined: "undefined"
            case .sameValue: "same"
            case .offset: "offset \(register.value)"
            case .valueOffset: "value offset \(register.value)"
            case .register: "r\(register.value)"
            case .expression: "expr\(register.expression)"
            case .valueExpression: "value expr\(register.expression)"
            case .unknown: "unknown"
            }
            return " r\(register.register): " + text
        }.joined()
    }

    /// At the start of every range the table stores, its rule is the ELF file's row (the CFA
    /// and every register rule, expressions included: `.csym` v5), and where the ELF file has
    /// no row the table has no rule. Returns how many ranges have an expression CFA.
    static func compareWithELFRows(_ path: String, debugFile: String? = nil) throws -> (ranges: Int, expressionCFAs: Int, expressionRules: Int) {
        let (table, binary) = try Self.table(path, debugFile: debugFile)
        let cfi = try CallFrameInfo.read(binary: binary, debugFile: try debugFile.map { try ELFFile(path: $0) })
        var counts = (ranges: 0, expressionCFAs: 0, expressionRules: 0)
        var mismatches = 0
        for index in 0..<table.unwindRangeCount {
            let (addresses, record) = try table.unwindRule(inRange: index)
            guard addresses.upperBound != .max else { continue }
            let row = cfi.row(at: addresses.lowerBound)?.row
            let rule = try record.map { try table.storedRule(of: $0) }
            counts.ranges += 1
            if rule?.cfaExpression != nil { counts.expressionCFAs += 1 }
            if rule?.registers.contains(where: { $0.kind == .expression || $0.kind == .valueExpression }) == true { counts.expressionRules += 1 }
            let expected = row.map(Self.text), found = rule.map(Self.text)
            if expected != found {
                mismatches += 1
                if mismatches <= 3 { Issue.record("\(path) 0x\(String(addresses.lowerBound, radix: 16)): ELF \(expected ?? "none"), table \(found ?? "none")") }
            }
        }
        // And at every address where the ELF file's rules change (each row's start, each
        // entry's end): with the checks above, at every boundary of either side, the two agree
        // at every address (both are constant between boundaries).
        for entry in cfi.entries {
            for address in entry.rows.map(\.address) + [entry.end] {
                let expected = cfi.row(at: address).map { Self.text($0.row) }
                let found = try table.storedUnwindRule(at: address).map { Self.text($0.rule) }
                if expected != found {
                    mismatches += 1
                    if mismatches <= 3 { Issue.record("\(path) 0x\(String(address, radix: 16)): ELF \(expected ?? "none"), table \(found ?? "none")") }
                }
            }
        }
        #expect(mismatches == 0, "\(path): \(mismatches) ranges or rows differ")
        return counts
    }

    @Test("Every ELF fixture (x86_64, i386, aarch64, armv7, riscv64; .eh_frame and .debug_frame): the table's rules are the ELF file's rows at every address",
          arguments: BreakpadOracleTests.fixtures + ["riscv64-clang-start-O2", "gcc-c-O2-dwarf5-strip-all"])
    func fixtureTablesAreTheELFRows(_ name: String) throws {
        let counts = try Self.compareWithELFRows(UnwindFixtures.elf(name))
        #expect(counts.ranges > 0)
    }

    @Test("The table's rules are the ELF file's rows, expressions included (PLT entries, __restore_rt)")
    func tableRowsAreTheELFRows() throws {
        let crash = try Self.compareWithELFRows(UnwindFixtures.reference + "/crash_linux")
        // The PLT: its CFA is an expression, now stored.
        #expect(crash.expressionCFAs >= 1)
        let python = try Self.compareWithELFRows(UnwindFixtures.python)
        #expect(python.ranges > 1000 && python.expressionCFAs >= 1)
        let libc = try Self.compareWithELFRows(UnwindFixtures.libc)
        // __restore_rt: CFA and registers by expression.
        #expect(libc.expressionCFAs >= 2 && libc.expressionRules >= 1)
    }
}
