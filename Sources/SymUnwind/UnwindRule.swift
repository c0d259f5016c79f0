/// How the canonical frame address (CFA) of a frame is computed (DWARF 5 §6.4.1).
public enum CFARule: Sendable, Hashable {
    /// The value of `register` plus `offset`.
    case registerOffset(register: UInt16, offset: Int64)
    /// The value a DWARF expression computes (`DW_CFA_def_cfa_expression`).
    case expression([UInt8])
}

/// How the caller's value of one register is recovered (DWARF 5 §6.4.1 "register rules").
public enum RegisterRule: Sendable, Hashable {
    /// The register cannot be recovered (`DW_CFA_undefined`): for the return-address register,
    /// the end of the stack.
    case undefined
    /// The caller's value is this frame's value (`DW_CFA_same_value`).
    case sameValue
    /// Saved in memory at CFA + offset (`DW_CFA_offset` and its variants).
    case offset(Int64)
    /// The value is CFA + offset itself (`DW_CFA_val_offset`).
    case valueOffset(Int64)
    /// Saved in another register (`DW_CFA_register`).
    case register(UInt16)
    /// Saved in memory at the address the expression computes, with the CFA pushed first
    /// (`DW_CFA_expression`).
    case expression([UInt8])
    /// The value the expression computes, with the CFA pushed first (`DW_CFA_val_expression`).
    case valueExpression([UInt8])
}

/// The rule for one register in a row.
public struct RegisterRuleEntry: Sendable, Hashable {
    /// DWARF register number.
    public var register: UInt16
    /// How its caller's value is recovered.
    public var rule: RegisterRule

    /// Creates an entry.
    public init(register: UInt16, rule: RegisterRule) {
        self.register = register
        self.rule = rule
    }
}

/// The rules in force from `address` up to the next row's address (or the end of the entry).
public struct UnwindRow: Sendable, Hashable {
    /// First address the row covers (file virtual address).
    public var address: UInt64
    /// How the CFA is computed.
    public var cfa: CFARule
    /// Rules of the registers that have one, sorted by register number.
    public var registers: [RegisterRuleEntry]

    /// Creates a row.
    public init(address: UInt64, cfa: CFARule, registers: [RegisterRuleEntry]) {
        self.address = address
        self.cfa = cfa
        self.registers = registers
    }

    /// The rule of `register`, or nil when the row has none.
    public func rule(for register: UInt16) -> RegisterRule? {
        registers.first { $0.register == register }?.rule
    }
}

/// The unwind rules of one address range: one FDE, evaluated into rows.
public struct UnwindEntry: Sendable, Hashable {
    /// First address covered.
    public var start: UInt64
    /// One past the last address covered.
    public var end: UInt64
    /// The register that holds the return address (the CIE's `return_address_register`).
    public var returnAddressRegister: UInt16
    /// Whether this is a signal trampoline's frame (augmentation `S`): its caller's pc is exact,
    /// not a return address.
    public var isSignalFrame: Bool
    /// Which section the entry came from.
    public var source: CallFrameSection
    /// Rows sorted by address; the first starts at `start`.
    public var rows: [UnwindRow]

    /// Creates an entry.
    public init(start: UInt64, end: UInt64, returnAddressRegister: UInt16, isSignalFrame: Bool,
                source: CallFrameSection, rows: [UnwindRow]) {
        self.start = start
        self.end = end
        self.returnAddressRegister = returnAddressRegister
        self.isSignalFrame = isSignalFrame
        self.source = source
        self.rows = rows
    }

    /// The row in force at `address`, or nil outside the entry.
    public func row(at address: UInt64) -> UnwindRow? {
        guard address >= start, address < end, !rows.isEmpty else { return nil }
        var low = 0
        var high = rows.count
        while low < high {
            let middle = (low + high) / 2
            if rows[middle].address <= address { low = middle + 1 } else { high = middle }
        }
        return low == 0 ? nil : rows[low - 1]
    }
}

/// The two sections that carry call-frame information.
public enum CallFrameSection: String, Sendable, Hashable {
    /// `.eh_frame` (GCC's variant, loaded with the program).
    case ehFrame = "eh_frame"
    /// `.debug_frame` (DWARF's own, in debug files).
    case debugFrame = "debug_frame"
}
