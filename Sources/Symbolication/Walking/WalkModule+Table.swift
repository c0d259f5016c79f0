import SymBytes
import SymTable
import SymUnwind

extension WalkModule {
    /// A module mapped at `start..<end` for the walker, its rules read from `table`'s unwind
    /// rules (`.csym` v4) as the walk asks for them, so a table alone walks (the server has
    /// tables, not binaries). Nil when the table stores no rules. The bias places file
    /// addresses by the table's module layout (a PIE's mapping base, 0, when it has none).
    public init?(start: UInt64, end: UInt64, table: SymbolTable) {
        guard table.hasUnwindRules else { return nil }
        let bias = start &- (table.module.layout?.mappingBase ?? 0)
        // Without the ELF file, the table's layout still says where the code is (an address
        // outside every executable segment follows no call), and, as Breakpad's scan asks, in a
        // module with functions a return address lies in one of them.
        var code: (@Sendable (UInt64, Int) -> CodeBytes)?
        let ranges = table.module.layout?.codeRanges
        let hasFunctions = table.statistics.functions > 0 || table.statistics.symbols > 0
        if ranges != nil || hasFunctions {
            code = { address, count in
                let last = address &+ UInt64(count) &- 1
                if let ranges, !ranges.contains(where: { $0.contains(last) }) { return CodeBytes.notCode }
                if hasFunctions, (try? table.range(containing: last))??.hasFrames != true { return CodeBytes.notCode }
                return CodeBytes.unknown
            }
        }
        self.init(start: start, end: end, bias: bias, cfi: nil, rules: { address in
            // A corrupt section gives no rules here: the walker falls back to frame pointers and scanning.
            guard let stored = try? table.storedUnwindRule(at: address) else { return nil }
            return Self.unwindRow(stored.rule, addresses: stored.addresses)
        }, code: code)
    }

    /// A stored rule as the walker's entry and row, its expressions (`.csym` v5) for the walker
    /// to evaluate. A register whose rule is an expression the table did not store (`unknown`:
    /// v4 tables) is not recovered, as for `undefined`: for the return address the walker then
    /// finds the caller another way.
    static func unwindRow(_ rule: StoredUnwindRule, addresses: Range<UInt64>) -> (entry: UnwindEntry, row: UnwindRow) {
        let registers = rule.registers.map { stored -> RegisterRuleEntry in
            let value: RegisterRule = switch stored.kind {
            case .undefined, .unknown: .undefined
            case .sameValue: .sameValue
            case .offset: .offset(Int64(stored.value))
            case .valueOffset: .valueOffset(Int64(stored.value))
            case .register: .register(UInt16(truncatingIfNeeded: stored.value))
            case .expression: .expression(stored.expression)
            case .valueExpression: .valueExpression(stored.expression)
            }
            return RegisterRuleEntry(register: stored.register, rule: value)
        }
        let cfa: CFARule = rule.cfaExpression.map { .expression($0) }
            ?? .registerOffset(register: rule.cfaRegister, offset: Int64(rule.cfaOffset))
        let row = UnwindRow(address: addresses.lowerBound, cfa: cfa, registers: registers)
        let entry = UnwindEntry(start: addresses.lowerBound, end: addresses.upperBound, returnAddressRegister: rule.returnAddressRegister,
                                isSignalFrame: rule.isSignalFrame, source: .ehFrame, rows: [row])
        return (entry, row)
    }
}
