import SymBytes
import SymELF
import SymTable
import SymUnwind

extension UnwindRules {
    /// The unwind rules of a module for its table (`.csym` v4), from its call-frame information
    /// (`.eh_frame`, `.debug_frame`; `CallFrameInfo.read(binary:debugFile:)`); nil when it has
    /// none. Unreadable call-frame information leaves the table without rules, it does not fail
    /// the conversion.
    static func read(binary: ELFFile, debugFile: ELFFile?) -> UnwindRules? {
        guard let cfi = try? CallFrameInfo.read(binary: binary, debugFile: debugFile) else { return nil }
        return UnwindRules(cfi)
    }

    /// The rules of every row of `cfi`'s entries, in address order. Where entries overlap, the
    /// one starting first keeps its addresses, and among entries starting together `.eh_frame`'s
    /// (what `CallFrameInfo.entry(at:)` prefers when both sections describe a function).
    init?(_ cfi: CallFrameInfo) {
        var builder = Builder()
        for entry in cfi.entries {
            for (index, row) in entry.rows.enumerated() {
                let end = index + 1 < entry.rows.count ? entry.rows[index + 1].address : entry.end
                guard row.address < end, row.address >= entry.start else { continue }
                builder.add(row.address..<end, rule: Self.storedRule(row, of: entry))
            }
        }
        guard let rules = builder.finish() else { return nil }
        self = rules
    }

    /// The rule a table stores for `row`: nil when its CFA is not a register plus an offset that
    /// fits 32 bits (a DWARF expression, as in PLT entries: the walker falls back to frame
    /// pointers and scanning there); register rules with expressions are stored as unknown.
    static func storedRule(_ row: UnwindRow, of entry: UnwindEntry) -> StoredUnwindRule? {
        guard case .registerOffset(let register, let offset) = row.cfa, let cfaOffset = Int32(exactly: offset) else { return nil }
        let registers = row.registers.map { entry -> StoredRegisterRule in
            switch entry.rule {
            case .undefined: return StoredRegisterRule(register: entry.register, kind: .undefined)
            case .sameValue: return StoredRegisterRule(register: entry.register, kind: .sameValue)
            case .offset(let value):
                guard let value = Int32(exactly: value) else { return StoredRegisterRule(register: entry.register, kind: .unknown) }
                return StoredRegisterRule(register: entry.register, kind: .offset, value: value)
            case .valueOffset(let value):
                guard let value = Int32(exactly: value) else { return StoredRegisterRule(register: entry.register, kind: .unknown) }
                return StoredRegisterRule(register: entry.register, kind: .valueOffset, value: value)
            case .register(let other): return StoredRegisterRule(register: entry.register, kind: .register, value: Int32(other))
            case .expression, .valueExpression: return StoredRegisterRule(register: entry.register, kind: .unknown)
            }
        }
        return StoredUnwindRule(isSignalFrame: entry.isSignalFrame, returnAddressRegister: entry.returnAddressRegister,
                                cfaRegister: register, cfaOffset: cfaOffset, registers: registers)
    }
}
