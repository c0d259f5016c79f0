/// What a module or the process memory holds just before a candidate return address.
public enum CodeBytes: Sendable, Equatable {
    /// The bytes (the last one is the byte before the candidate).
    case bytes([UInt8])
    /// The address is in no executable segment of its module: data, not code.
    case notCode
    /// Not known (no file, or the bytes are not in it).
    case unknown
}

extension X86_64StackWalker {
    /// Bytes read before a candidate: the longest call form (`FF /2` with SIB and disp32, after a
    /// REX prefix) is 8 bytes.
    static let callWindow = 8

    /// Whether the stack word `value` can be a return address. Its call instruction (`value - 1`)
    /// must lie in a known module: an address at a module's very start follows no call of that
    /// module (Breakpad's scan checks `value - 1` since 2020, which is why it finds 16 frames
    /// in crash_linux.dmp where the check of `value` finds 18). Where the code before it is
    /// known (the module's ELF file, else the dump's memory), it must end with a call
    /// (`endsWithCall`); an address in a module's data is none; with no code, the module test
    /// alone decides.
    public static func isReturnAddress(_ value: UInt64, input: WalkInput) -> Bool {
        guard value > 0, let module = input.module(at: value - 1) else { return false }
        guard input.checksCallSites else { return true }
        switch codeBefore(value, module: module, input: input) {
        case .bytes(let bytes): return endsWithCall(bytes)
        case .notCode: return false
        case .unknown: return true
        }
    }

    /// The code before `value`: from the module (its file), else the process memory (a core or
    /// minidump keeps some code pages: the first page of each image, the bytes around the pc).
    static func codeBefore(_ value: UInt64, module: WalkModule, input: WalkInput) -> CodeBytes {
        let count = Int(min(UInt64(callWindow), value - module.start))
        if let code = module.code {
            let known = code((value - UInt64(count)) &- module.bias, count)
            if known != .unknown { return known }
        }
        // The longest read the memory has, down to the shortest call (2 bytes: `FF D0`).
        for length in stride(from: count, through: 2, by: -1) {
            if let word = input.memory(value - UInt64(length), length) {
                return .bytes((0..<length).map { UInt8(truncatingIfNeeded: word >> (8 * UInt64($0))) })
            }
        }
        return .unknown
    }

    /// Whether `bytes` end with an x86_64 near call: `E8 rel32`, or `FF /2` (an indirect call
    /// through a register or memory: ModRM with its SIB and displacement forms, `FF 15 disp32`
    /// through the GOT; a REX prefix such as `41` in `41 FF D3` changes no length, so the
    /// instruction's last bytes from `FF` on decide).
    public static func endsWithCall(_ bytes: [UInt8]) -> Bool {
        let count = bytes.count
        if count >= 5 && bytes[count - 5] == 0xe8 { return true }
        for length in 2...7 where count >= length {
            let start = count - length
            guard bytes[start] == 0xff else { continue }
            if indirectCallLength(modRM: bytes[start + 1], sib: length > 2 ? bytes[start + 2] : nil) == length { return true }
        }
        return false
    }

    /// The length of `FF /2` with this ModRM byte (and SIB byte, when it has one), nil when the
    /// ModRM's reg field is not 2 (another `FF` instruction: inc, dec, jmp, push).
    static func indirectCallLength(modRM: UInt8, sib: UInt8?) -> Int? {
        guard (modRM >> 3) & 7 == 2 else { return nil }
        let mode = modRM >> 6, rm = modRM & 7
        switch mode {
        case 3: return 2                                    // call *%reg
        case 0:
            if rm == 5 { return 6 }                         // call *disp32(%rip)
            if rm == 4 {                                    // SIB; base 5 without a register: disp32
                guard let sib else { return nil }
                return sib & 7 == 5 ? 7 : 3
            }
            return 2                                        // call *(%reg)
        case 1: return rm == 4 ? 4 : 3                      // disp8
        default: return rm == 4 ? 7 : 6                     // disp32
        }
    }
}
