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
        guard let pc = context[rip], context[rsp] != nil else { return [] }
        var frames = [StackFrame(pc: pc, registers: context, trust: .context)]
        while frames.count < maximumFrames {
            let callee = frames[frames.count - 1]
            // No frame-pointer step from the first frame: the crashing function may be a leaf or
            // in its prologue or epilogue, where rbp is still its caller's, and the step would
            // skip frames (crash_linux.dmp: straight to __libc_start_main). A caller frame has
            // made a call, so it is past its prologue and its rbp is its own.
            var found: StackFrame?
            for method in methods where found == nil {
                switch method {
                case .cfi: found = viaCFI(callee, input: input)
                case .framePointer: found = frames.count == 1 ? nil : viaFramePointer(callee, input: input)
                case .scan: found = viaScan(callee, isFirst: frames.count == 1, input: input)
                case .context: break
                }
            }
            guard let caller = found else { break }
            // The stack grows down: a caller's frame is above its callee's.
            guard let newSP = caller.registers[rsp], let oldSP = callee.registers[rsp], newSP > oldSP || (newSP == oldSP && caller.trust == .cfi && caller.pc != callee.pc) else { break }
            if caller.pc == 0 { break }
            frames.append(caller)
        }
        return frames
    }

    /// The caller by CFI: the row at the callee's lookup address, its CFA and the rules.
    static func viaCFI(_ callee: StackFrame, input: WalkInput) -> StackFrame? {
        let address = callee.lookupAddress
        guard let module = input.module(at: address), let cfi = module.cfi,
              let (entry, row) = cfi.row(at: address &- module.bias) else { return nil }
        let registers = callee.registers
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
        // Callee-saved registers without a rule keep their value.
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
        guard let returnAddress = caller[entry.returnAddressRegister] else { return nil }  // undefined: the end
        caller[rip] = returnAddress
        if caller[rsp] == nil { caller[rsp] = cfa }
        return StackFrame(pc: returnAddress, registers: caller, trust: .cfi)
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

    /// The caller by scanning up from the callee's stack pointer for a word that is an address
    /// in a known module.
    static func viaScan(_ callee: StackFrame, isFirst: Bool, input: WalkInput) -> StackFrame? {
        guard let sp = callee.registers[rsp] else { return nil }
        let words = isFirst ? scanWords * 4 : scanWords
        for index in 0..<words {
            let slot = sp &+ UInt64(index * 8)
            guard let value = input.memory(slot, 8) else { return nil }
            guard input.module(at: value) != nil else { continue }
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
