import SymBytes

/// One register's rule in a stored unwind rule (`docs/csym-format.md`, "Unwind rules").
public struct StoredRegisterRule: Sendable, Hashable {
    /// How the caller's value of the register is recovered.
    public enum Kind: UInt8, Sendable, Hashable {
        /// Not recoverable (`DW_CFA_undefined`): for the return address, the end of the stack.
        case undefined = 0
        /// The callee's value (`DW_CFA_same_value`).
        case sameValue = 1
        /// Saved at CFA + `value`.
        case offset = 2
        /// Is CFA + `value`.
        case valueOffset = 3
        /// Saved in register `value`.
        case register = 4
        /// Recovered by a DWARF expression the table does not store (version 4, or an expression
        /// longer than `StoredUnwindRule.maximumExpressionSize`): the walker must not trust the
        /// register (and falls back when it is the return address).
        case unknown = 5
        /// Saved at the address `expression` computes with the CFA pushed first
        /// (`DW_CFA_expression`; version 5 on).
        case expression = 6
        /// Is the value `expression` computes with the CFA pushed first (`DW_CFA_val_expression`;
        /// version 5 on).
        case valueExpression = 7
    }

    /// DWARF register number.
    public var register: UInt16
    /// The rule's kind.
    public var kind: Kind
    /// The offset (`offset`, `valueOffset`), register number (`register`) or expression length
    /// (`expression`, `valueExpression`); 0 otherwise.
    public var value: Int32
    /// The DWARF expression of `expression` and `valueExpression` rules; empty otherwise.
    public var expression: [UInt8]

    /// Creates a rule.
    public init(register: UInt16, kind: Kind, value: Int32 = 0) {
        self.register = register
        self.kind = kind
        self.value = value
        self.expression = []
    }

    /// Creates an `expression` or `valueExpression` rule.
    public init(register: UInt16, kind: Kind, expression: [UInt8]) {
        self.register = register
        self.kind = kind
        self.value = Int32(truncatingIfNeeded: expression.count)
        self.expression = expression
    }
}

extension StoredRegisterRule.Kind {
    /// Whether the rule carries an expression (its value is the expression's length).
    var hasExpression: Bool { self == .expression || self == .valueExpression }
}

/// The unwind rules in force over a range of addresses, as a table stores them: the CFA is a
/// register plus an offset or (version 5 on) a DWARF expression, and each register with a rule
/// has one of `StoredRegisterRule.Kind`.
public struct StoredUnwindRule: Sendable, Hashable {
    /// Whether the frame is a signal trampoline's (augmentation `S`): its caller's pc is exact.
    public var isSignalFrame: Bool
    /// The register holding the return address.
    public var returnAddressRegister: UInt16
    /// The CFA is this register's value ...
    public var cfaRegister: UInt16
    /// ... plus this offset (with `cfaExpression`: 0 and its length in the record).
    public var cfaOffset: Int32
    /// The DWARF expression that computes the CFA instead (`DW_CFA_def_cfa_expression`: PLT
    /// entries, glibc's `__restore_rt`; version 5 on); `cfaRegister` is 0 then.
    public var cfaExpression: [UInt8]?
    /// Rules of the registers that have one, by register number.
    public var registers: [StoredRegisterRule]

    /// Creates a rule whose CFA is a register plus an offset.
    public init(isSignalFrame: Bool, returnAddressRegister: UInt16, cfaRegister: UInt16, cfaOffset: Int32,
                registers: [StoredRegisterRule]) {
        self.isSignalFrame = isSignalFrame
        self.returnAddressRegister = returnAddressRegister
        self.cfaRegister = cfaRegister
        self.cfaOffset = cfaOffset
        self.cfaExpression = nil
        self.registers = registers
    }

    /// Creates a rule whose CFA a DWARF expression computes.
    public init(isSignalFrame: Bool, returnAddressRegister: UInt16, cfaExpression: [UInt8], registers: [StoredRegisterRule]) {
        self.isSignalFrame = isSignalFrame
        self.returnAddressRegister = returnAddressRegister
        self.cfaRegister = 0
        self.cfaOffset = 0
        self.cfaExpression = cfaExpression
        self.registers = registers
    }

    /// Bytes of a rule record before its register rules: flags, return-address register, CFA
    /// register, CFA offset, register count.
    static let fixedSize = 10
    /// Bytes of one register rule: register, kind, value.
    static let registerSize = 7
    /// Most register rules one record holds.
    static let maximumRegisters = 255
    /// Longest expression a table stores (a longer CFA expression leaves its addresses without a
    /// rule, a longer register expression is stored as `unknown`). Real CFI's are under 32 bytes.
    public static let maximumExpressionSize = 1024
    /// Record flag bits.
    static let signalFrameFlag: UInt8 = 1
    static let cfaExpressionFlag: UInt8 = 2
}

/// The unwind-rules section of a table (`.csym` version 4), encoded: ranges of addresses sorted
/// by start, each with a rule or none, and the distinct rules. Made by `UnwindRules.Builder`,
/// written by the table writer as is; a table read back gives its rules through
/// `SymbolTable.unwindRule(at:)`.
public struct UnwindRules: Sendable, Equatable {
    /// The section's bytes.
    public let bytes: [UInt8]
    /// Ranges stored (a range without a rule included).
    public let rangeCount: Int
    /// Distinct rules stored.
    public let ruleCount: Int

    /// Bytes of the section header: address base, range count, rule count, start width, rule
    /// field width, reserved, rule data size.
    static let headerSize = 24

    /// Collects ranges in ascending order and encodes them.
    public struct Builder: Sendable {
        private var starts: [UInt64] = []
        /// 0: no rule; k: rule k − 1.
        private var ruleFields: [UInt32] = []
        private var rules: [StoredUnwindRule] = []
        private var ruleIndex: [StoredUnwindRule: UInt32] = [:]
        /// Where the last range added ends (the next range starts there or later).
        private var end: UInt64?

        /// Creates an empty builder.
        public init() {}

        /// Adds `rule` (nil: no rule) over `range`; ranges must come in ascending order without
        /// overlapping (`range` is clipped to start where the previous one ended). Adjacent
        /// ranges with the same rule merge; a gap between ranges becomes a range without a rule.
        public mutating func add(_ range: Range<UInt64>, rule: StoredUnwindRule?) {
            let start = max(range.lowerBound, end ?? range.lowerBound)
            guard start < range.upperBound else { return }
            if let end, end < start { append(start: end, field: 0) }
            var field: UInt32 = 0
            if var rule, rule.cfaExpression.map({ $0.count <= StoredUnwindRule.maximumExpressionSize }) ?? true {
                rule.registers = rule.registers.prefix(StoredUnwindRule.maximumRegisters).map { register in
                    register.kind.hasExpression && register.expression.count > StoredUnwindRule.maximumExpressionSize
                        ? StoredRegisterRule(register: register.register, kind: .unknown) : register
                }
                if let index = ruleIndex[rule] {
                    field = index + 1
                } else {
                    let index = UInt32(rules.count)
                    rules.append(rule)
                    ruleIndex[rule] = index
                    field = index + 1
                }
            }
            append(start: start, field: field)
            end = range.upperBound
        }

        private mutating func append(start: UInt64, field: UInt32) {
            if let last = starts.last, last == start {
                ruleFields[ruleFields.count - 1] = field
            } else if ruleFields.last == field {
                return
            } else {
                starts.append(start)
                ruleFields.append(field)
            }
            // A range replaced by one with its predecessor's rule merges into it.
            if starts.count >= 2, ruleFields[ruleFields.count - 2] == field {
                starts.removeLast()
                ruleFields.removeLast()
            }
        }

        /// The encoded section (nil when no range was added). The last range added is closed by
        /// a range without a rule, unless it runs to the end of the address space.
        public func finish() -> UnwindRules? {
            var starts = starts
            var fields = ruleFields
            guard !starts.isEmpty, let end else { return nil }
            if end != UInt64.max, fields.last != 0 {
                starts.append(end)
                fields.append(0)
            }
            let base = starts[0]
            let wide = starts[starts.count - 1] - base > UInt64(UInt32.max)
            let fieldWidth = max(1, TableFormat.width(for: UInt32(rules.count)))
            var data: [UInt8] = []
            var offsets: [UInt32] = [0]
            for rule in rules {
                // Version 5: the expressions follow the register rules, the CFA's first, each
                // register's in rule order; the CFA offset and each rule's value give their lengths.
                data.append((rule.isSignalFrame ? StoredUnwindRule.signalFrameFlag : 0)
                            | (rule.cfaExpression != nil ? StoredUnwindRule.cfaExpressionFlag : 0))
                data.appendLittleEndian(rule.returnAddressRegister)
                data.appendLittleEndian(rule.cfaExpression != nil ? 0 : rule.cfaRegister)
                data.appendLittleEndian(UInt32(bitPattern: rule.cfaExpression.map { Int32($0.count) } ?? rule.cfaOffset))
                data.append(UInt8(rule.registers.count))
                for register in rule.registers {
                    data.appendLittleEndian(register.register)
                    data.append(register.kind.rawValue)
                    data.appendLittleEndian(UInt32(bitPattern: register.kind.hasExpression ? Int32(register.expression.count) : register.value))
                }
                if let expression = rule.cfaExpression { data.append(contentsOf: expression) }
                for register in rule.registers where register.kind.hasExpression { data.append(contentsOf: register.expression) }
                offsets.append(UInt32(data.count))
            }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(UnwindRules.headerSize + starts.count * ((wide ? 8 : 4) + fieldWidth)
                                  + offsets.count * 4 + data.count)
            bytes.appendLittleEndian(base)
            bytes.appendLittleEndian(UInt32(starts.count))
            bytes.appendLittleEndian(UInt32(rules.count))
            bytes.append(wide ? 8 : 4)
            bytes.append(UInt8(fieldWidth))
            bytes.appendLittleEndian(UInt16(0))
            bytes.appendLittleEndian(UInt32(data.count))
            for start in starts {
                if wide { bytes.appendLittleEndian(start) } else { bytes.appendLittleEndian(UInt32(start - base)) }
            }
            for field in fields {
                for byte in 0..<fieldWidth { bytes.append(UInt8(truncatingIfNeeded: field >> (8 * byte))) }
            }
            for offset in offsets { bytes.appendLittleEndian(offset) }
            bytes.append(contentsOf: data)
            return UnwindRules(bytes: bytes, rangeCount: starts.count, ruleCount: rules.count)
        }
    }
}

/// Where the parts of a table's unwind-rules section are, checked against the section's size
/// on open (`docs/csym-format.md`, "Unwind rules"). Plain integers: lookups read the table's
/// bytes through it, bounds-checking what the header did not prove.
struct UnwindRulesLayout: Sendable {
    var addressBase: UInt64
    var rangeCount: Int
    var ruleCount: Int
    var startWidth: Int
    var fieldWidth: Int
    var starts: Int
    var fields: Int
    var offsets: Int
    var data: Int
    var dataSize: Int
    /// Whether records may hold DWARF expressions (version 5 on): a version 4 record with an
    /// expression flag or kind is corrupt.
    var expressions: Bool

    /// Reads the section header at `offset` (`size` bytes; nil when empty: no rules) and checks
    /// that its parts fill the section exactly.
    init?(_ reader: ByteReader, offset: Int, size: Int, expressions: Bool = true) throws(FormatError) {
        guard size > 0 else { return nil }
        self.expressions = expressions
        guard size >= UnwindRules.headerSize else {
            throw FormatError(.truncated, "unwind rules section is \(size) bytes, under \(UnwindRules.headerSize)", offset: UInt64(offset))
        }
        addressBase = try reader.u64(at: offset)
        rangeCount = Int(try reader.u32(at: offset + 8))
        ruleCount = Int(try reader.u32(at: offset + 12))
        startWidth = Int(try reader.u8(at: offset + 16))
        fieldWidth = Int(try reader.u8(at: offset + 17))
        guard startWidth == 4 || startWidth == 8 else {
            throw FormatError(.invalidValue, "unwind range start width \(startWidth) is not 4 or 8", offset: UInt64(offset + 16))
        }
        guard (1...4).contains(fieldWidth) else {
            throw FormatError(.invalidValue, "unwind rule field width \(fieldWidth) is not 1 to 4", offset: UInt64(offset + 17))
        }
        guard try reader.u16(at: offset + 18) == 0 else {
            throw FormatError(.invalidValue, "reserved unwind rules field is not zero", offset: UInt64(offset + 18))
        }
        dataSize = Int(try reader.u32(at: offset + 20))
        // Counts and sizes are under 2^32 and widths at most 8: no sum or product overflows Int.
        starts = offset + UnwindRules.headerSize
        fields = starts + rangeCount * startWidth
        offsets = fields + rangeCount * fieldWidth
        data = offsets + (ruleCount + 1) * 4
        guard rangeCount > 0, data + dataSize == offset + size else {
            throw FormatError(.invalidValue, "unwind rules of \(rangeCount) ranges and \(ruleCount) rules (\(dataSize) bytes) do not fill the section's \(size) bytes",
                              offset: UInt64(offset + 8))
        }
        guard try reader.u32(at: offsets) == 0, Int(try reader.u32(at: offsets + ruleCount * 4)) == dataSize else {
            throw FormatError(.invalidValue, "unwind rule offsets do not span the rule data", offset: UInt64(offsets))
        }
        // The one pass over the section on open: a binary search over starts that do not ascend
        // would answer with another range's rule, silently. (4 bytes a range: libc's 30,000
        // ranges in tens of microseconds, paid only by tables that store rules.)
        var previous = try start(reader, 0)
        for index in 1..<rangeCount {
            let next = try start(reader, index)
            guard next > previous else {
                throw FormatError(.invalidValue, "unwind range \(index) does not start after range \(index - 1)",
                                  offset: UInt64(starts + index * startWidth))
            }
            previous = next
        }
    }

    /// Start of range `index` (< `rangeCount`).
    @inline(__always)
    func start(_ reader: ByteReader, _ index: Int) throws(FormatError) -> UInt64 {
        if startWidth == 8 { return try reader.u64(at: starts + index * 8) }
        return addressBase &+ UInt64(try reader.u32(at: starts + index * 4))
    }

    /// Rule field of range `index` (< `rangeCount`).
    func field(_ reader: ByteReader, _ index: Int) throws(FormatError) -> Int {
        var value = 0
        for byte in 0..<fieldWidth { value |= Int(try reader.u8(at: fields + index * fieldWidth + byte)) << (8 * byte) }
        return value
    }
}

/// The unwind rule a table gives for one address: its fields, and where its register rules lie
/// in the table (read them with `SymbolTable.registerRule(_:of:)`). Nothing is allocated.
public struct UnwindRuleRecord: Sendable, Equatable {
    /// The addresses the rule covers (the whole range the table stores it for).
    public var addresses: Range<UInt64>
    /// Whether the frame is a signal trampoline's.
    public var isSignalFrame: Bool
    /// The register holding the return address.
    public var returnAddressRegister: UInt16
    /// The CFA is this register's value ...
    public var cfaRegister: UInt16
    /// ... plus this offset (0 with a CFA expression).
    public var cfaOffset: Int32
    /// Whether a DWARF expression computes the CFA (read it with `SymbolTable.storedRule(of:)`).
    public var cfaIsExpression: Bool
    /// Register rules in the record.
    public var registerCount: Int
    /// Table offset of the first register rule.
    var registersOffset: Int
    /// Table offset of the record's expressions (after its register rules): the CFA's, then
    /// each expression rule's in order.
    var expressionsOffset: Int
    /// Length of the CFA expression (0 without one).
    var cfaExpressionSize: Int
}

extension SymbolTable {
    /// Whether the table stores unwind rules (version 4 on, when the module had call-frame
    /// information).
    public var hasUnwindRules: Bool { layout.unwindRules != nil }

    /// The unwind rule in force at file address `address`, nil when the table stores none there
    /// (no section, an address outside every FDE, or a CFA the table does not store). A binary
    /// search with no allocation; a corrupt record (a rule index or extent out of bounds, a
    /// record its register count does not fill) throws `FormatError`.
    public func unwindRule(at address: UInt64) throws(FormatError) -> UnwindRuleRecord? {
        guard let rules = layout.unwindRules else { return nil }
        return try withBytes { bytes throws(FormatError) -> UnwindRuleRecord? in
            let reader = ByteReader(bytes)
            var low = 0
            var high = rules.rangeCount
            while low < high {
                let middle = (low + high) / 2
                if try rules.start(reader, middle) <= address { low = middle + 1 } else { high = middle }
            }
            guard low > 0 else { return nil }
            return try unwindRule(reader, rules, range: low - 1)
        }
    }

    /// Ranges in the unwind rules (0 without them), for `unwindRule(inRange:)`.
    public var unwindRangeCount: Int { layout.unwindRules?.rangeCount ?? 0 }

    /// The rule of range `index` (< `unwindRangeCount`), nil for a range without a rule; the
    /// ranges ascend and tile the addresses from the first start to the last (which has no rule
    /// unless it runs to the top of the address space).
    public func unwindRule(inRange index: Int) throws(FormatError) -> (addresses: Range<UInt64>, rule: UnwindRuleRecord?) {
        guard let rules = layout.unwindRules, index >= 0, index < rules.rangeCount else {
            throw FormatError(.invalidValue, "unwind range \(index) of \(unwindRangeCount)")
        }
        return try withBytes { bytes throws(FormatError) -> (addresses: Range<UInt64>, rule: UnwindRuleRecord?) in
            let reader = ByteReader(bytes)
            let start = try rules.start(reader, index)
            let end = index + 1 < rules.rangeCount ? try rules.start(reader, index + 1) : UInt64.max
            return (start..<end, try unwindRule(reader, rules, range: index))
        }
    }

    /// The rule of range `index` of `rules` (checked by the caller), nil when it has none.
    private func unwindRule(_ reader: ByteReader, _ rules: UnwindRulesLayout, range index: Int) throws(FormatError) -> UnwindRuleRecord? {
        let start = try rules.start(reader, index)
        // Starts ascend strictly (checked on open): the range ends where the next begins.
        let end = index + 1 < rules.rangeCount ? try rules.start(reader, index + 1) : UInt64.max
        let field = try rules.field(reader, index)
        guard field != 0 else { return nil }
        guard field <= rules.ruleCount else {
            throw FormatError(.invalidValue, "unwind rule \(field - 1) is not among the \(rules.ruleCount) rules",
                              offset: UInt64(rules.fields + index * rules.fieldWidth))
        }
        let from = Int(try reader.u32(at: rules.offsets + (field - 1) * 4))
        let to = Int(try reader.u32(at: rules.offsets + field * 4))
        guard from <= to, to <= rules.dataSize, to - from >= StoredUnwindRule.fixedSize else {
            throw FormatError(.invalidValue, "unwind rule \(field - 1) has a bad extent \(from)..<\(to)",
                              offset: UInt64(rules.offsets + (field - 1) * 4))
        }
        let at = rules.data + from
        let flags = try reader.u8(at: at)
        let count = Int(try reader.u8(at: at + 9))
        let cfaIsExpression = flags & StoredUnwindRule.cfaExpressionFlag != 0
        let cfaOffset = Int32(bitPattern: try reader.u32(at: at + 5))
        let fixed = StoredUnwindRule.fixedSize + count * StoredUnwindRule.registerSize
        guard flags <= (rules.expressions ? 3 : 1), to - from >= fixed else {
            throw FormatError(.invalidValue, "unwind rule \(field - 1) does not fill its \(to - from) bytes", offset: UInt64(at))
        }
        // Expressions (version 5) follow the register rules: their lengths must fill the rest.
        var expressionBytes = 0
        if cfaIsExpression {
            guard cfaOffset >= 0, cfaOffset <= StoredUnwindRule.maximumExpressionSize else {
                throw FormatError(.invalidValue, "unwind rule \(field - 1) has a CFA expression of \(cfaOffset) bytes", offset: UInt64(at + 5))
            }
            expressionBytes = Int(cfaOffset)
        }
        if to - from != fixed + expressionBytes {
            for index in 0..<count {
                let rule = at + StoredUnwindRule.fixedSize + index * StoredUnwindRule.registerSize
                guard let kind = StoredRegisterRule.Kind(rawValue: try reader.u8(at: rule + 2)), kind.hasExpression,
                      rules.expressions else { continue }
                let length = Int32(bitPattern: try reader.u32(at: rule + 3))
                guard length >= 0, length <= StoredUnwindRule.maximumExpressionSize else {
                    throw FormatError(.invalidValue, "unwind rule \(field - 1) has a register expression of \(length) bytes", offset: UInt64(rule + 3))
                }
                expressionBytes += Int(length)
            }
        }
        guard to - from == fixed + expressionBytes else {
            throw FormatError(.invalidValue, "unwind rule \(field - 1) does not fill its \(to - from) bytes", offset: UInt64(at))
        }
        return UnwindRuleRecord(addresses: start..<end, isSignalFrame: flags & StoredUnwindRule.signalFrameFlag != 0,
                                returnAddressRegister: try reader.u16(at: at + 1), cfaRegister: try reader.u16(at: at + 3),
                                cfaOffset: cfaIsExpression ? 0 : cfaOffset, cfaIsExpression: cfaIsExpression, registerCount: count,
                                registersOffset: at + StoredUnwindRule.fixedSize, expressionsOffset: at + fixed,
                                cfaExpressionSize: cfaIsExpression ? Int(cfaOffset) : 0)
    }

    /// Register rule `index` (< `record.registerCount`) of a record `unwindRule(at:)` gave (an
    /// expression rule's bytes are copied out; the others allocate nothing).
    public func registerRule(_ index: Int, of record: UnwindRuleRecord) throws(FormatError) -> StoredRegisterRule {
        try withBytes { bytes throws(FormatError) -> StoredRegisterRule in
            let reader = ByteReader(bytes)
            guard index >= 0, index < record.registerCount else {
                throw FormatError(.invalidValue, "register rule \(index) of \(record.registerCount)")
            }
            func kind(_ rule: Int) throws(FormatError) -> StoredRegisterRule.Kind {
                let at = record.registersOffset + rule * StoredUnwindRule.registerSize + 2
                guard let kind = StoredRegisterRule.Kind(rawValue: try reader.u8(at: at)),
                      !kind.hasExpression || layout.unwindRules?.expressions == true else {
                    throw FormatError(.invalidValue, "unknown register rule kind \(try reader.u8(at: at))", offset: UInt64(at))
                }
                return kind
            }
            let at = record.registersOffset + index * StoredUnwindRule.registerSize
            let register = try reader.u16(at: at), ruleKind = try kind(index)
            let value = Int32(bitPattern: try reader.u32(at: at + 3))
            guard ruleKind.hasExpression else { return StoredRegisterRule(register: register, kind: ruleKind, value: value) }
            // The lengths were checked against the record on lookup: the expressions of the rules
            // before this one come first.
            var offset = record.expressionsOffset + record.cfaExpressionSize
            for earlier in 0..<index where try kind(earlier).hasExpression {
                offset += Int(try reader.u32(at: record.registersOffset + earlier * StoredUnwindRule.registerSize + 3))
            }
            return StoredRegisterRule(register: register, kind: ruleKind, expression: try Self.copy(reader, offset, Int(value)))
        }
    }

    /// `count` bytes at `offset` of the table, bounds-checked.
    private static func copy(_ reader: ByteReader, _ offset: Int, _ count: Int) throws(FormatError) -> [UInt8] {
        Array(try reader.slice(offset, count, "an unwind rule's expression"))
    }

    /// The whole stored rule at `address` (allocates its register array), nil as in `unwindRule(at:)`.
    public func storedUnwindRule(at address: UInt64) throws(FormatError) -> (addresses: Range<UInt64>, rule: StoredUnwindRule)? {
        guard let record = try unwindRule(at: address) else { return nil }
        return (record.addresses, try storedRule(of: record))
    }

    /// The whole rule of `record` (allocates its register array).
    public func storedRule(of record: UnwindRuleRecord) throws(FormatError) -> StoredUnwindRule {
        var registers: [StoredRegisterRule] = []
        registers.reserveCapacity(record.registerCount)
        for index in 0..<record.registerCount { registers.append(try registerRule(index, of: record)) }
        if record.cfaIsExpression {
            let expression = try withBytes { bytes throws(FormatError) -> [UInt8] in
                try Self.copy(ByteReader(bytes), record.expressionsOffset, record.cfaExpressionSize)
            }
            return StoredUnwindRule(isSignalFrame: record.isSignalFrame, returnAddressRegister: record.returnAddressRegister,
                                    cfaExpression: expression, registers: registers)
        }
        return StoredUnwindRule(isSignalFrame: record.isSignalFrame, returnAddressRegister: record.returnAddressRegister,
                                cfaRegister: record.cfaRegister, cfaOffset: record.cfaOffset, registers: registers)
    }
}
