import SymBytes

/// The registers of a thread's CPU context (`MINIDUMP_CONTEXT_AMD64`, Breakpad
/// `MDRawContextAMD64`; `MDRawContextARM64`), by DWARF register number, so that a CFI walker
/// can use them directly.
public struct MinidumpContext: Sendable, Equatable {
    /// The CPUs whose contexts are read.
    public enum CPU: Sendable, Equatable {
        /// DWARF numbers (System V x86_64 psABI): 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi,
        /// 6 rbp, 7 rsp, 8-15 r8-r15, 16 rip.
        case amd64
        /// DWARF numbers (AAPCS64 DWARF): 0-30 x0-x30, 31 sp; the pc as 32.
        case arm64
    }

    /// Which CPU's context this is.
    public var cpu: CPU
    /// The registers, by DWARF number.
    public var registers: [UInt16: UInt64]

    /// The instruction pointer.
    public var pc: UInt64? { registers[cpu == .amd64 ? 16 : 32] }
    /// The stack pointer.
    public var sp: UInt64? { registers[cpu == .amd64 ? 7 : 31] }

    /// Size of `MDRawContextAMD64`.
    public static let amd64Size = 1232
    /// Size of `MDRawContextARM64` (Breakpad's and Crashpad's `CPU_CONTEXT_ARM64`): flags, cpsr,
    /// x0-x28, fp, lr, sp, pc, then the floating-point and debug registers.
    public static let arm64Size = 912

    /// Reads an AMD64 context; throws for other sizes.
    public init(amd64 bytes: [UInt8]) throws(FormatError) {
        guard bytes.count >= Self.amd64Size else {
            throw FormatError(.unsupported, "a \(bytes.count)-byte CPU context is not an AMD64 one (\(Self.amd64Size) bytes)")
        }
        // rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8...r15, rip from offset 120 (the size is checked).
        self.init(cpu: .amd64, bytes, from: 120, order: [0, 2, 1, 3, 7, 6, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15, 16])
    }

    /// Reads an ARM64 context (`MDRawContextARM64`); throws when it is shorter.
    public init(arm64 bytes: [UInt8]) throws(FormatError) {
        guard bytes.count >= Self.arm64Size else {
            throw FormatError(.unsupported, "a \(bytes.count)-byte CPU context is not an ARM64 one (\(Self.arm64Size) bytes)")
        }
        // iregs[33] from offset 8: x0-x28, fp (x29), lr (x30), sp, pc: DWARF 0...32 in order.
        self.init(cpu: .arm64, bytes, from: 8, order: Array(0...32))
    }

    private init(cpu: CPU, _ bytes: [UInt8], from start: Int, order: [UInt16]) {
        var registers: [UInt16: UInt64] = [:]
        for (index, number) in order.enumerated() {
            let offset = start + index * 8
            registers[number] = (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
        }
        self.cpu = cpu
        self.registers = registers
    }

    /// Breakpad's name of an x86_64 DWARF register.
    public static func amd64Name(_ number: UInt16) -> String {
        let names = ["rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12", "r13",
                     "r14", "r15", "rip"]
        return Int(number) < names.count ? names[Int(number)] : "r\(number)"
    }
}
