/// The x86_64 stack walker: call-frame information first, then the frame-pointer chain, then a
/// scan of the stack for a return address (the order and the limits of Breakpad's
/// `StackwalkerAMD64`). Every step must move the stack pointer up; the walk stops at a frame
/// limit, on a pc of 0, or when no method finds a caller.
public enum X86_64StackWalker {
    static let rsp: UInt16 = 7
    static let rbp: UInt16 = 6
    static let rip: UInt16 = 16
    /// Registers a callee preserves (System V x86_64): rbx, rbp, r12-r15.
    static let calleeSaved: [UInt16] = [3, 6, 12, 13, 14, 15]
    /// Words scanned for a return address (Breakpad: 40, four times as many above the first frame).
    static let scanWords = 40

    /// Walks from `context` (registers by DWARF number, rip and rsp required), trying `methods`
    /// in order (`.context` is ignored there) for each caller.
    public static func walk(context: [UInt16: UInt64], input: WalkInput, maximumFrames: Int = 1024,
                            methods: [FrameTrust] = [.cfi, .framePointer, .scan]) -> [StackFrame] {
        guard let pc = context[rip], let firstSP = context[rsp] else { return [] }
        var frames = [StackFrame(pc: pc, registers: context, trust: .context)]
        var seen: Set<FrameKey> = [FrameKey(pc: pc, sp: firstSP)]
        while frames.count < maximumFrames {
            let callee = frames[frames.count - 1]
            // No frame-pointer step from the first frame: the crashing function may be a leaf or
            // in its prologue or epilogue, where rbp is still its caller's, and the step would
            // skip frames (crash_linux.dmp: straight to __libc_start_main). A caller frame has
            // made a call, so it is past its prologue and its rbp is its own.
            var found: StackFrame?
            for method in methods where found == nil {
                switch method {
                case .cfi: found = viaCFI(callee, input: input) ?? viaSignalFrame(callee, input: input)
                case .framePointer: found = frames.count == 1 ? nil : viaFramePointer(callee, input: input)
                case .scan: found = viaScan(callee, isFirst: frames.count == 1, input: input)
                case .context: break
                }
            }
            guard let caller = found else { break }
            // The stack grows down: a caller's frame is above its callee's. Not across a signal
            // frame: a handler on an alternate stack (sigaltstack) may lie anywhere relative
            // to the interrupted code's; the frame limit and the repeat check bound that walk.
            // A frame seen before (the same pc at the same stack pointer: rules that send the
            // walk round in a loop at one stack pointer, or back across a signal frame) ends it.
            guard let newSP = caller.registers[rsp], let oldSP = callee.registers[rsp],
                  newSP > oldSP || (newSP == oldSP && caller.trust == .cfi && caller.pc != callee.pc) || caller.isInterrupted,
                  seen.insert(FrameKey(pc: caller.pc, sp: newSP)).inserted
            else { break }
            if caller.pc == 0 { break }
            frames.append(caller)
        }
        return frames
    }

    /// The caller by CFI: the row at the callee's lookup address, its CFA and the rules.
    static func viaCFI(_ callee: StackFrame, input: WalkInput) -> StackFrame? {
        let address = callee.lookupAddress
        guard let module = input.module(at: address), let (entry, row) = module.row(at: address &- module.bias) else { return nil }
        // Callee-saved registers without a rule keep their value.
        guard let (cfa, rows) = StackWalkerRules.apply(row, to: callee.registers, calleeSaved: calleeSaved, input: input) else {
            return nil
        }
        var caller = rows
        guard let returnAddress = caller[entry.returnAddressRegister] else { return nil }  // undefined: the end
        caller[rip] = returnAddress
        if caller[rsp] == nil { caller[rsp] = cfa }
        // A signal trampoline's caller (augmentation `S`) is the interrupted instruction.
        return StackFrame(pc: returnAddress, registers: caller, trust: .cfi, isInterrupted: entry.isSignalFrame)
    }

    /// glibc's and musl's `__restore_rt`, the x86_64 kernel's `rt_sigreturn` call:
    /// `mov $15, %rax; syscall`.
    static let sigreturnCode: [UInt8] = [0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05]
    /// Where `struct sigcontext`'s general registers start in the kernel's `rt_sigframe` once
    /// the handler returned into the trampoline (rsp at `uc`): `uc_flags`, `uc_link`, `uc_stack`
    /// (40 bytes) come first.
    static let sigcontextOffset: UInt64 = 40
    /// `sigcontext`'s registers in order (r8-r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip)
    /// as DWARF numbers (Linux `arch/x86/include/uapi/asm/sigcontext.h`).
    static let sigcontextRegisters: [UInt16] = [8, 9, 10, 11, 12, 13, 14, 15, 5, 4, 6, 3, 1, 0, 2, 7, 16]

    /// The interrupted frame when the callee is a signal trampoline that no CFI describes:
    /// its code is the `rt_sigreturn` call and its stack pointer the kernel's `ucontext`, which
    /// holds every register of the interrupted code (the memory must hold the trampoline's code).
    static func viaSignalFrame(_ callee: StackFrame, input: WalkInput) -> StackFrame? {
        guard let sp = callee.registers[rsp] else { return nil }
        for (index, byte) in sigreturnCode.enumerated() {
            guard input.memory(callee.pc &+ UInt64(index), 1) == UInt64(byte) else { return nil }
        }
        var caller: [UInt16: UInt64] = [:]
        for (index, number) in sigcontextRegisters.enumerated() {
            guard let value = input.memory(sp &+ sigcontextOffset &+ UInt64(index * 8), 8) else { return nil }
            caller[number] = value
        }
        guard let pc = caller[rip] else { return nil }
        return StackFrame(pc: pc, registers: caller, trust: .context, isInterrupted: true)
    }

    /// The caller by the frame-pointer chain: saved rbp at [rbp], return address at [rbp + 8].
    static func viaFramePointer(_ callee: StackFrame, input: WalkInput) -> StackFrame? {
        guard let frame = callee.registers[rbp], let sp = callee.registers[rsp], frame >= sp, frame % 8 == 0,
              let savedFrame = input.memory(frame, 8), let returnAddress = input.memory(frame &+ 8, 8),
              input.module(at: returnAddress) != nil else { return nil }
        var caller: [UInt16: UInt64] = [:]
        for number in calleeSaved { if let value = callee.registers[number] { caller[number] = value } }
        caller[rbp] = savedFrame
        caller[rsp] = frame &+ 16
        caller[rip] = returnAddress
        return StackFrame(pc: returnAddress, registers: caller, trust: .framePointer)
    }

    /// The caller by scanning up from the callee's stack pointer for a word that can be a
    /// return address (`isReturnAddress`: its call instruction in a known module, and where the
    /// code is known, a call right before it).
    static func viaScan(_ callee: StackFrame, isFirst: Bool, input: WalkInput) -> StackFrame? {
        guard let sp = callee.registers[rsp] else { return nil }
        let words = isFirst ? scanWords * 4 : scanWords
        for index in 0..<words {
            let slot = sp &+ UInt64(index * 8)
            guard let value = input.memory(slot, 8) else { return nil }
            guard isReturnAddress(value, input: input) else { continue }
            var caller: [UInt16: UInt64] = [:]
            if let frame = callee.registers[rbp] { caller[rbp] = frame }
            // A saved rbp just below the return address (a standard prologue) is the caller's.
            if let frame = callee.registers[rbp], frame == slot &- 8, let saved = input.memory(frame, 8) { caller[rbp] = saved }
            caller[rip] = value
            caller[rsp] = slot &+ 8
            return StackFrame(pc: value, registers: caller, trust: .scan)
        }
        return nil
    }
}
