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
        // outside every executable segment follows no call).
        var code: (@Sendable (UInt64, Int) -> CodeBytes)?
        if let ranges = table.module.layout?.codeRanges {
            code = { address, count in
                let last = address &+ UInt64(count) &- 1
                return ranges.contains { $0.contains(last) } ? CodeBytes.unknown : CodeBytes.notCode
            }
        }
        self.init(start: start, end: end, bias: bias, cfi: nil, rules: { address in
            // A corrupt section gives no rules here: the walker falls back to frame pointers and scanning.
            guard let stored = try? table.storedUnwindRule(at: address) else { return nil }
            return Self.unwindRow(stored.rule, addresses: stored.addresses)
        }, code: code)
    }

    /// A stored rule as the walker's entry and row. A register whose rule was an expression
    /// (`unknown`) is not recovered, as for `undefined`: for the return address the walker then
    /// finds the caller another way.
    static func unwindRow(_ rule: StoredUnwindRule, addresses: Range<UInt64>) -> (entry: UnwindEntry, row: UnwindRow) {
        let registers = rule.registers.map { stored -> RegisterRuleEntry in
            let value: RegisterRule = switch stored.kind {
            case .undefined, .unknown: .undefined
            case .sameValue: .sameValue
            case .offset: .offset(Int64(stored.value))
            case .valueOffset: .valueOffset(Int64(stored.value))
            case .register: .register(UInt16(truncatingIfNeeded: stored.value))
            }
            return RegisterRuleEntry(register: stored.register, rule: value)
        }
        let row = UnwindRow(address: addresses.lowerBound, cfa: .registerOffset(register: rule.cfaRegister, offset: Int64(rule.cfaOffset)),
                            registers: registers)
        let entry = UnwindEntry(start: addresses.lowerBound, end: addresses.upperBound, returnAddressRegister: rule.returnAddressRegister,
                                isSignalFrame: rule.isSignalFrame, source: .ehFrame, rows: [row])
        return (entry, row)
    }
}
