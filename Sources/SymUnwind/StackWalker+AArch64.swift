/// The aarch64 stack walker: a signal trampoline recognised by its code, call-frame information,
/// then the frame-record chain (x29), then a scan of the stack for a return address after a call (the order
/// of Breakpad's `StackwalkerARM64`, with the signal frame of libgcc's and LLVM libunwind's
/// aarch64 Linux unwinders). Every step must move the stack pointer up; the walk stops at a
/// frame limit, on a pc of 0, or when no method finds a caller.
///
/// Return addresses may carry a pointer-authentication code in their top bits (code built with
/// `-mbranch-protection=pac-ret` signs x30 before saving it: the CFI marks that with
/// `DW_CFA_AARCH64_negate_ra_state`). A user-space address never has those bits set, so every
/// return address is stripped to the bits the process's modules use, signed or not.
public enum AArch64StackWalker {
    static let fp: UInt16 = 29
    static let lr: UInt16 = 30
    static let sp: UInt16 = 31
    /// The pc, under the number the core and minidump readers give it (DWARF has none for it).
    static let pc: UInt16 = 32
    /// Registers a callee preserves (AAPCS64): x19-x29.
    static let calleeSaved: [UInt16] = Array(19...29)
    /// Words scanned for a return address (Breakpad: 40, four times as many above the first frame).
    static let scanWords = 40

    /// Walks from `context` (registers by DWARF number: x0-x30 0-30, sp 31, pc 32; pc and sp
    /// required), trying `methods` in order (`.context` is ignored there) for each caller.
    public static func walk(context: [UInt16: UInt64], input: WalkInput, maximumFrames: Int = 1024,
                            methods: [FrameTrust] = [.cfi, .framePointer, .scan]) -> [StackFrame] {
        guard let firstPC = context[pc], let firstSP = context[sp] else { return [] }
        let mask = addressMask(input.modules)
        var frames = [StackFrame(pc: firstPC, registers: context, trust: .context)]
        var seen: Set<FrameKey> = [FrameKey(pc: firstPC, sp: firstSP)]
        while frames.count < maximumFrames {
            let callee = frames[frames.count - 1]
            var found: StackFrame?
            for method in methods where found == nil {
                switch method {
                // The trampoline's code first: the kernel's vDSO describes `__kernel_rt_sigreturn`
                // with no CFI since Linux 5.8, and before that with CFI that restores only x29/x30
                // (the interrupted pc would be lost); the sigcontext holds every register.
                case .cfi: found = viaSignalFrame(callee, input: input) ?? viaCFI(callee, input: input, mask: mask)
                case .framePointer:
                    found = frames.count == 1 ? viaLinkRegister(callee, input: input, mask: mask)
                        : viaFramePointer(callee, input: input, mask: mask)
                case .scan: found = viaScan(callee, isFirst: frames.count == 1, input: input, mask: mask)
                case .context: break
                }
            }
            guard let caller = found else { break }
            // The stack grows down: a caller's frame is above its callee's (as on x86_64, not
            // across a signal frame, which may come from an alternate signal stack). A frame seen
            // before (the same pc at the same stack pointer) ends the walk: a loop.
            guard let newSP = caller.registers[sp], let oldSP = callee.registers[sp],
                  newSP > oldSP || (newSP == oldSP && caller.pc != callee.pc && (caller.trust == .cfi || frames.count == 1))
                    || caller.isInterrupted,
                  seen.insert(FrameKey(pc: caller.pc, sp: newSP)).inserted
            else { break }
            if caller.pc == 0 { break }
            frames.append(caller)
        }
        return frames
    }

    /// The bits a user-space address of this process can have: up to the highest module end,
    /// at least 39 (the smallest Linux aarch64 address space). Bits above are a
    /// pointer-authentication code or a tag (top-byte-ignore).
    static func addressMask(_ modules: [WalkModule]) -> UInt64 {
        let highest = modules.map(\.end).max() ?? 0
        let bits = max(39, 64 - (highest &- 1).leadingZeroBitCount)
        return bits >= 64 ? UInt64.max : (UInt64(1) << UInt64(bits)) - 1
    }

    /// The caller by CFI: the row at the callee's lookup address, its CFA and the rules. The
    /// return-address column (x30) without a rule keeps its value (a leaf, or a function before
    /// it saves x30), as in every aarch64 unwinder.
    static func viaCFI(_ callee: StackFrame, input: WalkInput, mask: UInt64) -> StackFrame? {
        let address = callee.lookupAddress
        guard let module = input.module(at: address), let (entry, row) = module.row(at: address &- module.bias) else { return nil }
        guard var caller = StackWalkerRules.apply(row, to: callee.registers, calleeSaved: calleeSaved, input: input) else { return nil }
        let returnRegister = entry.returnAddressRegister
        let hasRule = row.registers.contains { $0.register == returnRegister }
        if !hasRule, let value = callee.registers[returnRegister] { caller.registers[returnRegister] = value }
        guard let signed = caller.registers[returnRegister] else { return nil }  // undefined: the end
        let returnAddress = signed & mask
        caller.registers[returnRegister] = returnAddress
        caller.registers[pc] = returnAddress
        if caller.registers[sp] == nil { caller.registers[sp] = caller.cfa }
        return StackFrame(pc: returnAddress, registers: caller.registers, trust: .cfi, isInterrupted: entry.isSignalFrame)
    }

    /// `__kernel_rt_sigreturn` (the vDSO's, and qemu-user's trampoline page):
    /// `mov x8, #139; svc #0`, as two little-endian instruction words.
    static let sigreturnCode: [UInt32] = [0xd280_1168, 0xd400_0001]
    /// Where `sigcontext.regs` starts once the handler returned into the trampoline (sp at the
    /// kernel's `rt_sigframe`): `siginfo` (128 bytes), then `ucontext` up to `uc_mcontext` (176
    /// bytes: flags, link, stack, sigmask and its padding to 1024 bits, aligned to 16), then
    /// `fault_address` (Linux `arch/arm64/include/uapi/asm/sigcontext.h`, `ucontext.h`).
    static let sigcontextRegistersOffset: UInt64 = 128 + 176 + 8

    /// The interrupted frame when the callee is the signal trampoline: its stack pointer is the
    /// kernel's `rt_sigframe`, which holds x0-x30, sp and pc of the interrupted code (the memory
    /// must hold the trampoline's code: the vDSO is in every core).
    static func viaSignalFrame(_ callee: StackFrame, input: WalkInput) -> StackFrame? {
        guard let frame = callee.registers[sp] else { return nil }
        for (index, word) in sigreturnCode.enumerated() {
            guard input.memory(callee.pc &+ UInt64(index * 4), 4) == UInt64(word) else { return nil }
        }
        var caller: [UInt16: UInt64] = [:]
        // regs[31] (x0-x30), then sp and pc: registers 0...32 in order.
        for number in UInt16(0)...pc {
            guard let value = input.memory(frame &+ sigcontextRegistersOffset &+ UInt64(number) * 8, 8) else { return nil }
            caller[number] = value
        }
        guard let interrupted = caller[pc] else { return nil }
        return StackFrame(pc: interrupted, registers: caller, trust: .context, isInterrupted: true)
    }

    /// The first frame's caller without CFI: the link register (Breakpad's choice). A leaf, the
    /// commonest crashing frame, keeps its return address in x30 and never stores it, so a scan
    /// would skip its caller; x29 is still the caller's record and the next step follows it. (A
    /// first frame that has made calls of its own holds a return address into itself there: the
    /// walk then shows that function twice, and the record chain goes on from its own record.)
    static func viaLinkRegister(_ callee: StackFrame, input: WalkInput, mask: UInt64) -> StackFrame? {
        guard let signed = callee.registers[lr], let stack = callee.registers[sp] else { return nil }
        let returnAddress = signed & mask
        guard returnAddress != callee.pc, returnAddress % 4 == 0, input.module(at: returnAddress) != nil else { return nil }
        var caller: [UInt16: UInt64] = [:]
        for number in calleeSaved { if let value = callee.registers[number] { caller[number] = value } }
        caller[lr] = returnAddress
        caller[sp] = stack
        caller[pc] = returnAddress
        return StackFrame(pc: returnAddress, registers: caller, trust: .framePointer)
    }

    /// The caller by the frame-record chain: x29 points at the saved x29 and x30 (AAPCS64 §6.4.6).
    static func viaFramePointer(_ callee: StackFrame, input: WalkInput, mask: UInt64) -> StackFrame? {
        guard let record = callee.registers[fp], let stack = callee.registers[sp], record >= stack, record % 8 == 0,
              let savedFrame = input.memory(record, 8), let signed = input.memory(record &+ 8, 8) else { return nil }
        let returnAddress = signed & mask
        guard input.module(at: returnAddress) != nil else { return nil }
        var caller: [UInt16: UInt64] = [:]
        for number in calleeSaved { if let value = callee.registers[number] { caller[number] = value } }
        caller[fp] = savedFrame
        caller[lr] = returnAddress
        // The record lies at the bottom of the caller's frame's callee part: the caller's sp is at
        // least past it (Breakpad's choice).
        caller[sp] = record &+ 16
        caller[pc] = returnAddress
        return StackFrame(pc: returnAddress, registers: caller, trust: .framePointer)
    }

    /// The caller by scanning up from the callee's stack pointer for a word that can be a return
    /// address (`isReturnAddress`).
    static func viaScan(_ callee: StackFrame, isFirst: Bool, input: WalkInput, mask: UInt64) -> StackFrame? {
        guard let stack = callee.registers[sp] else { return nil }
        let words = isFirst ? scanWords * 4 : scanWords
        for index in 0..<words {
            let slot = stack &+ UInt64(index * 8)
            guard let word = input.memory(slot, 8) else { return nil }
            let value = word & mask
            guard isReturnAddress(value, input: input) else { continue }
            var caller: [UInt16: UInt64] = [:]
            if let frame = callee.registers[fp] { caller[fp] = frame }
            // A frame record just below the return address (`stp x29, x30, [sp, ...]`) holds
            // the caller's x29.
            if let frame = callee.registers[fp], frame == slot &- 8, let saved = input.memory(frame, 8) { caller[fp] = saved }
            caller[pc] = value
            caller[lr] = value
            caller[sp] = slot &+ 8
            return StackFrame(pc: value, registers: caller, trust: .scan)
        }
        return nil
    }

    /// Whether the stack word `value` (stripped of any authentication code) can be a return
    /// address: 4-byte aligned (instructions are), its call instruction (`value - 4`) in a known
    /// module, and where the code is known (the module's ELF file or table, else the dump's
    /// memory), that instruction a call (`isCall`); an address in a module's data is none; with no
    /// code, the module test alone decides (x86_64's rule, `X86_64StackWalker.isReturnAddress`).
    public static func isReturnAddress(_ value: UInt64, input: WalkInput) -> Bool {
        guard value % 4 == 0, value >= 4, let module = input.module(at: value - 4) else { return false }
        guard input.checksCallSites else { return true }
        if let code = module.code {
            switch code((value - 4) &- module.bias, 4) {
            case .bytes(let bytes) where bytes.count == 4:
                return isCall(bytes.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) })
            case .notCode: return false
            default: break
            }
        }
        if let word = input.memory(value - 4, 4) { return isCall(UInt32(truncatingIfNeeded: word)) }
        return true
    }

    /// Whether `instruction` is a call, one that sets x30 to the next instruction: `BL`, `BLR`,
    /// and the pointer-authenticating `BLRAA`, `BLRAB`, `BLRAAZ`, `BLRABZ` (Arm ARM C6.2).
    public static func isCall(_ instruction: UInt32) -> Bool {
        instruction & 0xfc00_0000 == 0x9400_0000            // BL imm26
            || instruction & 0xffff_fc1f == 0xd63f_0000     // BLR Xn
            || instruction & 0xffff_f81f == 0xd63f_081f     // BLRAAZ, BLRABZ Xn
            || instruction & 0xffff_f800 == 0xd73f_0800     // BLRAA, BLRAB Xn, Xm
    }
}
