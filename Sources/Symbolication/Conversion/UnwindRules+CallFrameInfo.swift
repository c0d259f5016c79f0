import SymBytes
import SymELF
import SymTable
import SymUnwind

extension UnwindRules {
    /// The unwind rules of a module for its table (`.csym` v4), from its call-frame information
    /// (`.eh_frame`, `.debug_frame`, as `CallFrameInfo.read(binary:debugFile:)` finds them); nil
    /// when it has none. Unreadable call-frame information leaves the table without rules, it
    /// does not fail the conversion.
    ///
    /// The entries are reduced as the parser hands them over (`CallFrameInfo.forEachEntry`): a
    /// row is kept as 16 bytes (start, length, rule) with its rule deduplicated, never as an
    /// `UnwindRow` with its register array (python3.11d's rows held whole took megabytes more
    /// than the DWARF walk's peak). Where entries overlap, the one starting first keeps its
    /// addresses, and among entries starting together `.eh_frame`'s (as `CallFrameInfo.read`
    /// sorts them).
    static func read(binary: ELFFile, debugFile: ELFFile?) -> UnwindRules? {
        struct Row { var start: UInt64; var length: UInt32; var field: UInt32 }
        struct Entry { var start: UInt64; var order: UInt32; var firstRow: UInt32; var rowCount: UInt32 }
        var rows: [Row] = []
        var entries: [Entry] = []
        var rules: [StoredUnwindRule] = []
        var ruleIndex: [StoredUnwindRule: UInt32] = [:]
        do {
            try CallFrameInfo.withSections(binary: binary, debugFile: debugFile) { ehFrame, debugFrame, target in
                _ = CallFrameInfo.forEachEntry(ehFrame: ehFrame, debugFrame: debugFrame, target: target) { entry in
                    let first = rows.count
                    for (index, row) in entry.rows.enumerated() {
                        let end = index + 1 < entry.rows.count ? entry.rows[index + 1].address : entry.end
                        guard row.address < end, row.address >= entry.start else { continue }
                        var field: UInt32 = 0
                        if let rule = storedRule(row, of: entry) {
                            if let known = ruleIndex[rule] {
                                field = known + 1
                            } else {
                                ruleIndex[rule] = UInt32(rules.count)
                                rules.append(rule)
                                field = UInt32(rules.count)
                            }
                        }
                        // Rows longer than 4 GiB are split (they do not occur in practice).
                        var start = row.address
                        while start < end {
                            let length = UInt32(min(end - start, UInt64(UInt32.max)))
                            rows.append(Row(start: start, length: length, field: field))
                            start += UInt64(length)
                        }
                    }
                    guard rows.count > first, entries.count < Int(UInt32.max) else { return }
                    entries.append(Entry(start: entry.start, order: UInt32(entries.count), firstRow: UInt32(first),
                                         rowCount: UInt32(rows.count - first)))
                }
            }
        } catch {
            return nil
        }
        ruleIndex = [:]
        entries.sort { ($0.start, $0.order) < ($1.start, $1.order) }
        var builder = Builder()
        for entry in entries {
            for row in rows[Int(entry.firstRow)..<Int(entry.firstRow + entry.rowCount)] {
                builder.add(row.start..<(row.start + UInt64(row.length)), rule: row.field == 0 ? nil : rules[Int(row.field - 1)])
            }
        }
        rows = []
        return builder.finish()
    }

    /// The rule a table stores for `row`: nil when its CFA is a register plus an offset that does
    /// not fit 32 bits (or an expression longer than the table stores: the walker falls back to
    /// frame pointers and scanning there); expressions (PLT entries, `__restore_rt`) are stored
    /// as they are, for the walker to evaluate.
    static func storedRule(_ row: UnwindRow, of entry: UnwindEntry) -> StoredUnwindRule? {
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
            case .expression(let bytes) where bytes.count <= StoredUnwindRule.maximumExpressionSize:
                return StoredRegisterRule(register: entry.register, kind: .expression, expression: bytes)
            case .valueExpression(let bytes) where bytes.count <= StoredUnwindRule.maximumExpressionSize:
                return StoredRegisterRule(register: entry.register, kind: .valueExpression, expression: bytes)
            case .expression, .valueExpression: return StoredRegisterRule(register: entry.register, kind: .unknown)
            }
        }
        switch row.cfa {
        case .expression(let bytes):
            guard bytes.count <= StoredUnwindRule.maximumExpressionSize else { return nil }
            return StoredUnwindRule(isSignalFrame: entry.isSignalFrame, returnAddressRegister: entry.returnAddressRegister,
                                    cfaExpression: bytes, registers: registers)
        case .registerOffset(let register, let offset):
            guard let cfaOffset = Int32(exactly: offset) else { return nil }
            return StoredUnwindRule(isSignalFrame: entry.isSignalFrame, returnAddressRegister: entry.returnAddressRegister,
                                    cfaRegister: register, cfaOffset: cfaOffset, registers: registers)
        }
    }
}
