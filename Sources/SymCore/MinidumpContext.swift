import SymBytes

/// The registers of a thread's CPU context (`MINIDUMP_CONTEXT_AMD64`, Breakpad
/// `MDRawContextAMD64`), by DWARF register number, so that a CFI walker can use them directly.
public struct MinidumpContext: Sendable, Equatable {
    /// DWARF numbers (System V x86_64 psABI): 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp,
    /// 7 rsp, 8-15 r8-r15, 16 rip.
    public var registers: [UInt16: UInt64]

    /// The instruction pointer.
    public var pc: UInt64? { registers[16] }
    /// The stack pointer.
    public var sp: UInt64? { registers[7] }

    /// Size of `MDRawContextAMD64`.
    public static let amd64Size = 1232

    /// Reads an AMD64 context; throws for other sizes (other CPUs are not read yet).
    public init(amd64 bytes: [UInt8]) throws(FormatError) {
        guard bytes.count >= Self.amd64Size else {
            throw FormatError(.unsupported, "a \(bytes.count)-byte CPU context is not an AMD64 one (\(Self.amd64Size) bytes)")
        }
        var registers: [UInt16: UInt64] = [:]
        // rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8...r15, rip from offset 120 (the size is checked).
        let order: [UInt16] = [0, 2, 1, 3, 7, 6, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15, 16]
        for (index, number) in order.enumerated() {
            let offset = 120 + index * 8
            registers[number] = (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
        }
        self.registers = registers
    }

    /// Breakpad's name of an x86_64 DWARF register.
    public static func amd64Name(_ number: UInt16) -> String {
        let names = ["rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12", "r13",
                     "r14", "r15", "rip"]
        return Int(number) < names.count ? names[Int(number)] : "r\(number)"
    }
}
