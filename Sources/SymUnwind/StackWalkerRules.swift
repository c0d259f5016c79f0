/// The caller's registers that one row of unwind rules gives (DWARF 5 §6.4.1), for any
/// architecture's walker: the CFA, then each register's rule over the callee's registers and
/// the process's memory; callee-saved registers without a rule keep their value.
enum StackWalkerRules {
    /// The CFA and the caller's registers; nil when the CFA cannot be computed (its register is
    /// unknown or its expression fails). A register whose rule fails is absent.
    static func apply(_ row: UnwindRow, to registers: [UInt16: UInt64], calleeSaved: [UInt16],
                      input: WalkInput) -> (cfa: UInt64, registers: [UInt16: UInt64])? {
        func register(_ number: UInt16) -> UInt64? { registers[number] }
        let cfa: UInt64
        switch row.cfa {
        case .registerOffset(let number, let offset):
            guard let base = registers[number] else { return nil }
            cfa = base &+ UInt64(bitPattern: offset)
        case .expression(let bytes):
            guard let value = try? DWARFExpression.evaluate(bytes, register: register, memory: input.memory) else { return nil }
            cfa = value
        }
        var caller: [UInt16: UInt64] = [:]
        for number in calleeSaved { if let value = registers[number] { caller[number] = value } }
        for rule in row.registers {
            let value: UInt64?
            switch rule.rule {
            case .undefined: value = nil
            case .sameValue: value = registers[rule.register]
            case .offset(let offset): value = input.memory(cfa &+ UInt64(bitPattern: offset), 8)
            case .valueOffset(let offset): value = cfa &+ UInt64(bitPattern: offset)
            case .register(let other): value = registers[other]
            case .expression(let bytes):
                value = (try? DWARFExpression.evaluate(bytes, initial: [cfa], register: register, memory: input.memory))
                    .flatMap { input.memory($0, 8) }
            case .valueExpression(let bytes):
                value = try? DWARFExpression.evaluate(bytes, initial: [cfa], register: register, memory: input.memory)
            }
            caller[rule.register] = value
        }
        return (cfa, caller)
    }
}
