import SymBytes

/// Runs the `DW_CFA_*` instructions of a CIE and an FDE (DWARF 5 §6.4.2) into rows. Every
/// instruction consumes at least one byte, so a program ends after at most its length in steps;
/// locations never move backwards and never past the FDE's end.
struct RuleMachine {
    let cie: CommonInformation
    let start: UInt64
    let end: UInt64
    let kind: CallFrameSection
    let section: CallFrameInfo.Section
    let target: CallFrameInfo.Target

    var location: UInt64
    var cfa: CFARule?
    var registers: [UInt16: RegisterRule] = [:]
    var initialRegisters: [UInt16: RegisterRule] = [:]
    var stack: [(CFARule?, [UInt16: RegisterRule])] = []
    var rows: [UnwindRow] = []

    init(cie: CommonInformation, start: UInt64, end: UInt64, kind: CallFrameSection,
         section: CallFrameInfo.Section, target: CallFrameInfo.Target) {
        self.cie = cie
        self.start = start
        self.end = end
        self.kind = kind
        self.section = section
        self.target = target
        location = start
    }

    /// Keeps the rules after the CIE's initial instructions, for `DW_CFA_restore`.
    mutating func captureInitialRules() {
        initialRegisters = registers
    }

    /// The rows, the last state included.
    mutating func finish() -> [UnwindRow] {
        emitRow()
        return rows
    }

    /// Appends the current state as a row at `location` (replacing a row at the same address,
    /// skipping one whose rules equal the previous row's).
    mutating func emitRow() {
        guard location < end, let cfa else { return }
        let row = UnwindRow(address: location, cfa: cfa,
                            registers: registers.map { RegisterRuleEntry(register: $0.key, rule: $0.value) }
                                .sorted { $0.register < $1.register })
        if let last = rows.last, last.address == location {
            rows.removeLast()
        }
        if let last = rows.last, last.cfa == row.cfa, last.registers == row.registers { return }
        rows.append(row)
    }

    mutating func advance(by delta: UInt64, at offset: Int) throws(FormatError) {
        let (scaled, overflow1) = delta.multipliedReportingOverflow(by: cie.codeAlignment)
        let (next, overflow2) = location.addingReportingOverflow(scaled)
        guard !overflow1, !overflow2 else {
            throw FormatError(.invalidValue, "DW_CFA_advance_loc overflows the address", offset: UInt64(offset))
        }
        try move(to: next, at: offset)
    }

    mutating func move(to next: UInt64, at offset: Int) throws(FormatError) {
        guard next >= location else {
            throw FormatError(.invalidValue, "DW_CFA_set_loc moves backwards", offset: UInt64(offset))
        }
        emitRow()
        location = next
    }

    func factored(_ value: UInt64, at offset: Int) throws(FormatError) -> Int64 {
        guard value <= UInt64(Int64.max) else {
            throw FormatError(.invalidValue, "offset \(value) is out of range", offset: UInt64(offset))
        }
        return try factored(Int64(value), at: offset)
    }

    func factored(_ value: Int64, at offset: Int) throws(FormatError) -> Int64 {
        let (product, overflow) = value.multipliedReportingOverflow(by: cie.dataAlignment)
        guard !overflow else {
            throw FormatError(.invalidValue, "factored offset overflows", offset: UInt64(offset))
        }
        return product
    }

    mutating func set(_ register: UInt16, _ rule: RegisterRule?, at offset: Int) throws(FormatError) {
        if let rule {
            if registers[register] == nil && registers.count >= CallFrameInfo.maximumRulesPerRow {
                throw FormatError(.limitExceeded, "more than \(CallFrameInfo.maximumRulesPerRow) register rules",
                                  offset: UInt64(offset))
            }
            registers[register] = rule
        } else {
            registers[register] = nil
        }
    }

    /// The CFA rule's register and offset, for the instructions that change one of them.
    func cfaRegisterOffset(at offset: Int) throws(FormatError) -> (UInt16, Int64) {
        guard case .registerOffset(let register, let value)? = cfa else {
            throw FormatError(.invalidValue, "CFA offset or register changed without a register CFA rule",
                              offset: UInt64(offset))
        }
        return (register, value)
    }

    /// Runs one instruction stream (`baseOffset`: its section offset, for errors).
    mutating func run(_ program: UnsafeRawBufferPointer, baseOffset: Int, isInitial: Bool) throws(FormatError) {
        var cursor = CFICursor(program, littleEndian: target.littleEndian)
        while !cursor.isAtEnd {
            let at = baseOffset + cursor.offset
            let opcode = try cursor.u8()
            switch opcode >> 6 {
            case 1: // DW_CFA_advance_loc
                try advance(by: UInt64(opcode & 0x3f), at: at)
                continue
            case 2: // DW_CFA_offset
                let value = try factored(try cursor.uleb(), at: at)
                try set(UInt16(opcode & 0x3f), .offset(value), at: at)
                continue
            case 3: // DW_CFA_restore
                try set(UInt16(opcode & 0x3f), isInitial ? nil : initialRegisters[UInt16(opcode & 0x3f)], at: at)
                continue
            default:
                break
            }
            switch opcode {
            case 0x00: // DW_CFA_nop
                break
            case 0x01: // DW_CFA_set_loc
                let next: UInt64
                switch kind {
                case .ehFrame:
                    // The operand is encoded like the FDE's addresses; pc-relative to itself.
                    var absolute = CFICursor(section.bytes, offset: baseOffset + cursor.offset,
                                             limit: baseOffset + program.count, littleEndian: target.littleEndian)
                    guard baseOffset >= 0, baseOffset + program.count <= section.bytes.count,
                          let value = try PointerEncoding.read(cie.pointerEncoding, &absolute, section: section,
                                                               addressSize: cie.addressSize, target: target) else {
                        throw FormatError(.invalidValue, "DW_CFA_set_loc without an address", offset: UInt64(at))
                    }
                    cursor.offset = absolute.offset - baseOffset
                    next = value
                case .debugFrame:
                    next = try cursor.unsigned(cie.addressSize, "DW_CFA_set_loc's address")
                }
                try move(to: next, at: at)
            case 0x02: try advance(by: UInt64(try cursor.u8()), at: at)
            case 0x03: try advance(by: UInt64(try cursor.u16()), at: at)
            case 0x04: try advance(by: UInt64(try cursor.u32()), at: at)
            case 0x05: // DW_CFA_offset_extended
                let register = try cursor.register()
                try set(register, .offset(try factored(try cursor.uleb(), at: at)), at: at)
            case 0x06: // DW_CFA_restore_extended
                let register = try cursor.register()
                try set(register, isInitial ? nil : initialRegisters[register], at: at)
            case 0x07: try set(try cursor.register(), .undefined, at: at)
            case 0x08: try set(try cursor.register(), .sameValue, at: at)
            case 0x09: // DW_CFA_register
                let register = try cursor.register()
                try set(register, .register(try cursor.register()), at: at)
            case 0x0a: // DW_CFA_remember_state
                guard stack.count < CallFrameInfo.maximumStateDepth else {
                    throw FormatError(.limitExceeded, "DW_CFA_remember_state nested more than \(CallFrameInfo.maximumStateDepth) deep",
                                      offset: UInt64(at))
                }
                stack.append((cfa, registers))
            case 0x0b: // DW_CFA_restore_state
                guard let state = stack.popLast() else {
                    throw FormatError(.invalidValue, "DW_CFA_restore_state without a remembered state", offset: UInt64(at))
                }
                (cfa, registers) = state
            case 0x0c: // DW_CFA_def_cfa
                let register = try cursor.register()
                let value = try cursor.uleb()
                guard value <= UInt64(Int64.max) else {
                    throw FormatError(.invalidValue, "CFA offset \(value) is out of range", offset: UInt64(at))
                }
                cfa = .registerOffset(register: register, offset: Int64(value))
            case 0x0d: // DW_CFA_def_cfa_register
                let register = try cursor.register()
                let (_, value) = try cfaRegisterOffset(at: at)
                cfa = .registerOffset(register: register, offset: value)
            case 0x0e: // DW_CFA_def_cfa_offset
                let value = try cursor.uleb()
                guard value <= UInt64(Int64.max) else {
                    throw FormatError(.invalidValue, "CFA offset \(value) is out of range", offset: UInt64(at))
                }
                let (register, _) = try cfaRegisterOffset(at: at)
                cfa = .registerOffset(register: register, offset: Int64(value))
            case 0x0f: // DW_CFA_def_cfa_expression
                let length = try cursor.uleb()
                cfa = .expression(try cursor.block(length, "DW_CFA_def_cfa_expression's block"))
            case 0x10: // DW_CFA_expression
                let register = try cursor.register()
                let length = try cursor.uleb()
                try set(register, .expression(try cursor.block(length, "DW_CFA_expression's block")), at: at)
            case 0x11: // DW_CFA_offset_extended_sf
                let register = try cursor.register()
                try set(register, .offset(try factored(try cursor.sleb(), at: at)), at: at)
            case 0x12: // DW_CFA_def_cfa_sf
                let register = try cursor.register()
                cfa = .registerOffset(register: register, offset: try factored(try cursor.sleb(), at: at))
            case 0x13: // DW_CFA_def_cfa_offset_sf
                let value = try factored(try cursor.sleb(), at: at)
                let (register, _) = try cfaRegisterOffset(at: at)
                cfa = .registerOffset(register: register, offset: value)
            case 0x14: // DW_CFA_val_offset
                let register = try cursor.register()
                try set(register, .valueOffset(try factored(try cursor.uleb(), at: at)), at: at)
            case 0x15: // DW_CFA_val_offset_sf
                let register = try cursor.register()
                try set(register, .valueOffset(try factored(try cursor.sleb(), at: at)), at: at)
            case 0x16: // DW_CFA_val_expression
                let register = try cursor.register()
                let length = try cursor.uleb()
                try set(register, .valueExpression(try cursor.block(length, "DW_CFA_val_expression's block")), at: at)
            case 0x2d: // DW_CFA_GNU_window_save (SPARC) / DW_CFA_AARCH64_negate_ra_state: no rule change here.
                break
            case 0x2e: // DW_CFA_GNU_args_size: outgoing argument bytes, not a rule.
                _ = try cursor.uleb()
            case 0x2f: // DW_CFA_GNU_negative_offset_extended
                let register = try cursor.register()
                let value = try factored(try cursor.uleb(), at: at)
                guard value != Int64.min else {
                    throw FormatError(.invalidValue, "factored offset overflows", offset: UInt64(at))
                }
                try set(register, .offset(-value), at: at)
            default:
                throw FormatError(.unsupported, "call-frame instruction 0x\(String(opcode, radix: 16))", offset: UInt64(at))
            }
        }
    }
}
