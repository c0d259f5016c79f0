import SymBytes

/// Evaluates the DWARF expressions that CFI carries (DWARF 5 §2.5): a stack machine over
/// 64-bit values with the frame's registers and memory. Bounded: at most `maximumSteps`
/// operations (branches may loop) and `maximumStackDepth` values.
public struct DWARFExpression {
    /// Reads a register of the frame being unwound; nil when unknown.
    public typealias RegisterReader = (UInt16) -> UInt64?
    /// Reads `size` bytes (1 to 8) of memory at an address, little-endian; nil when unreadable.
    public typealias MemoryReader = (UInt64, Int) -> UInt64?

    static let maximumSteps = 10_000
    static let maximumStackDepth = 64

    /// Runs `expression` with `initial` values on the stack (the CFA, for register rules) and
    /// returns the top of the stack.
    public static func evaluate(_ expression: [UInt8], initial: [UInt64] = [], addressSize: Int = 8,
                                register: RegisterReader, memory: MemoryReader) throws(FormatError) -> UInt64 {
        let result = expression.withUnsafeBytes { bytes in
            Result { () throws(FormatError) -> UInt64 in
                try run(bytes, initial: initial, addressSize: addressSize, register: register, memory: memory)
            }
        }
        return try result.get()
    }

    static func run(_ bytes: UnsafeRawBufferPointer, initial: [UInt64], addressSize: Int,
                    register: RegisterReader, memory: MemoryReader) throws(FormatError) -> UInt64 {
        var stack = initial
        var steps = 0
        do {
            var cursor = CFICursor(bytes, littleEndian: true)
            func pop() throws(FormatError) -> UInt64 {
                guard let value = stack.popLast() else {
                    throw FormatError(.invalidValue, "DWARF expression pops an empty stack", offset: UInt64(cursor.offset))
                }
                return value
            }
            func push(_ value: UInt64) throws(FormatError) {
                guard stack.count < maximumStackDepth else {
                    throw FormatError(.limitExceeded, "DWARF expression stack deeper than \(maximumStackDepth)",
                                      offset: UInt64(cursor.offset))
                }
                stack.append(value)
            }
            func readRegister(_ number: UInt16) throws(FormatError) -> UInt64 {
                guard let value = register(number) else {
                    throw FormatError(.invalidValue, "DWARF expression reads unknown register \(number)",
                                      offset: UInt64(cursor.offset))
                }
                return value
            }
            func load(_ address: UInt64, _ size: Int) throws(FormatError) -> UInt64 {
                guard size >= 1, size <= 8, let value = memory(address, size) else {
                    throw FormatError(.invalidValue, "DWARF expression reads unreadable memory at 0x\(String(address, radix: 16))",
                                      offset: UInt64(cursor.offset))
                }
                return value
            }
            func jump(_ delta: Int16) throws(FormatError) {
                let target = cursor.offset + Int(delta)
                guard target >= 0, target <= bytes.count else {
                    throw FormatError(.invalidValue, "DWARF expression branches outside itself", offset: UInt64(cursor.offset))
                }
                cursor.offset = target
            }
            while !cursor.isAtEnd {
                steps += 1
                guard steps <= maximumSteps else {
                    throw FormatError(.limitExceeded, "DWARF expression runs more than \(maximumSteps) steps",
                                      offset: UInt64(cursor.offset))
                }
                let at = cursor.offset
                let op = try cursor.u8()
                switch op {
                case 0x03: try push(try cursor.unsigned(addressSize, "DW_OP_addr's operand"))  // DW_OP_addr
                case 0x06: try push(try load(try pop(), addressSize))  // DW_OP_deref
                case 0x08: try push(UInt64(try cursor.u8()))  // const1u
                case 0x09: try push(UInt64(bitPattern: Int64(Int8(bitPattern: try cursor.u8()))))
                case 0x0a: try push(UInt64(try cursor.u16()))
                case 0x0b: try push(UInt64(bitPattern: Int64(Int16(bitPattern: try cursor.u16()))))
                case 0x0c: try push(UInt64(try cursor.u32()))
                case 0x0d: try push(UInt64(bitPattern: Int64(Int32(bitPattern: try cursor.u32()))))
                case 0x0e, 0x0f: try push(try cursor.u64())
                case 0x10: try push(try cursor.uleb())  // constu
                case 0x11: try push(UInt64(bitPattern: try cursor.sleb()))  // consts
                case 0x12: let value = try pop(); try push(value); try push(value)  // dup
                case 0x13: _ = try pop()  // drop
                case 0x14:  // over
                    guard stack.count >= 2 else { throw FormatError(.invalidValue, "DW_OP_over needs two values", offset: UInt64(at)) }
                    try push(stack[stack.count - 2])
                case 0x15:  // pick
                    let index = Int(try cursor.u8())
                    guard index < stack.count else { throw FormatError(.invalidValue, "DW_OP_pick past the stack", offset: UInt64(at)) }
                    try push(stack[stack.count - 1 - index])
                case 0x16: let a = try pop(), b = try pop(); try push(a); try push(b)  // swap
                case 0x17: let a = try pop(), b = try pop(), c = try pop(); try push(a); try push(c); try push(b)  // rot
                case 0x19:  // abs
                    let value = Int64(bitPattern: try pop())
                    try push(value == .min ? UInt64(bitPattern: value) : UInt64(abs(value)))
                case 0x1a: let a = try pop(), b = try pop(); try push(b & a)
                case 0x1b:  // div (signed)
                    let a = Int64(bitPattern: try pop()), b = Int64(bitPattern: try pop())
                    guard a != 0, !(a == -1 && b == Int64.min) else {
                        throw FormatError(.invalidValue, "DWARF expression divides by zero", offset: UInt64(at))
                    }
                    try push(UInt64(bitPattern: b / a))
                case 0x1c: let a = try pop(), b = try pop(); try push(b &- a)
                case 0x1d:  // mod
                    let a = try pop(), b = try pop()
                    guard a != 0 else { throw FormatError(.invalidValue, "DWARF expression divides by zero", offset: UInt64(at)) }
                    try push(b % a)
                case 0x1e: let a = try pop(), b = try pop(); try push(b &* a)
                case 0x1f: try push(0 &- (try pop()))  // neg
                case 0x20: try push(~(try pop()))  // not
                case 0x21: let a = try pop(), b = try pop(); try push(b | a)
                case 0x22: let a = try pop(), b = try pop(); try push(b &+ a)
                case 0x23: let value = try pop(); try push(value &+ (try cursor.uleb()))  // plus_uconst
                case 0x24: let a = try pop(), b = try pop(); try push(a >= 64 ? 0 : b << a)
                case 0x25: let a = try pop(), b = try pop(); try push(a >= 64 ? 0 : b >> a)
                case 0x26:  // shra
                    let a = try pop(), b = Int64(bitPattern: try pop())
                    try push(UInt64(bitPattern: b >> Int64(min(a, 63))))
                case 0x27: let a = try pop(), b = try pop(); try push(b ^ a)
                case 0x28:  // bra
                    let delta = Int16(bitPattern: try cursor.u16())
                    if try pop() != 0 { try jump(delta) }
                case 0x29...0x2e:  // eq ge gt le lt ne (signed)
                    let a = Int64(bitPattern: try pop()), b = Int64(bitPattern: try pop())
                    let result: Bool
                    switch op {
                    case 0x29: result = b == a
                    case 0x2a: result = b >= a
                    case 0x2b: result = b > a
                    case 0x2c: result = b <= a
                    case 0x2d: result = b < a
                    default: result = b != a
                    }
                    try push(result ? 1 : 0)
                case 0x2f: try jump(Int16(bitPattern: try cursor.u16()))  // skip
                case 0x30...0x4f: try push(UInt64(op - 0x30))  // lit0...lit31
                case 0x50...0x6f: try push(try readRegister(UInt16(op - 0x50)))  // reg0...reg31 (as values)
                case 0x70...0x8f:  // breg0...breg31
                    let base = try readRegister(UInt16(op - 0x70))
                    try push(base &+ UInt64(bitPattern: try cursor.sleb()))
                case 0x90: try push(try readRegister(try cursor.register()))  // regx
                case 0x92:  // bregx
                    let base = try readRegister(try cursor.register())
                    try push(base &+ UInt64(bitPattern: try cursor.sleb()))
                case 0x94:  // deref_size
                    let size = Int(try cursor.u8())
                    try push(try load(try pop(), size))
                case 0x96: break  // nop
                default:
                    throw FormatError(.unsupported, "DWARF expression operation 0x\(String(op, radix: 16))", offset: UInt64(at))
                }
            }
        }
        guard let top = stack.last else {
            throw FormatError(.invalidValue, "DWARF expression leaves an empty stack")
        }
        return top
    }
}
