import SymUnwind
import Testing

/// The x86_64 walker across a signal frame without CFI for the trampoline: the kernel's
/// `rt_sigframe` (its `ucontext`) gives the interrupted code's registers, and that frame's pc
/// is looked up exactly.
@Suite struct SignalFrameTests {
    static let trampoline: UInt64 = 0x7000_1000
    static let interrupted: UInt64 = 0x4000_2000  // the first instruction of a function
    static let stack: UInt64 = 0x7ffe_0000

    /// Memory: the trampoline's code, and at `stack` a `ucontext` whose sigcontext holds
    /// rip = interrupted, rsp = stack + 0x400, rbp = stack + 0x420, rbx = 0x1234.
    static func memory() -> [UInt64: UInt8] {
        var bytes: [UInt64: UInt8] = [:]
        for (index, byte) in [0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05].enumerated() {
            bytes[trampoline + UInt64(index)] = UInt8(byte)
        }
        func store(_ value: UInt64, at address: UInt64) {
            for index in 0..<8 { bytes[address + UInt64(index)] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(index))) }
        }
        // sigcontext from uc + 40: r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip.
        let values: [UInt64] = [8, 9, 10, 11, 12, 13, 14, 15, 0xd1, 0x51, stack + 0x420, 0x1234, 0xdd, 0xaa, 0xcc, stack + 0x400, interrupted]
        for (index, value) in values.enumerated() { store(value, at: stack + 40 + UInt64(index * 8)) }
        // The interrupted function's frame: saved rbp and a return address into the module.
        store(stack + 0x500, at: stack + 0x420)
        store(0x4000_3005, at: stack + 0x428)
        return bytes
    }

    static func input(_ memory: [UInt64: UInt8]) -> WalkInput {
        WalkInput(modules: [WalkModule(start: 0x4000_0000, end: 0x4001_0000, bias: 0, cfi: nil),
                            WalkModule(start: 0x7000_0000, end: 0x7001_0000, bias: 0, cfi: nil)],
                  memory: { address, size in
                      var value: UInt64 = 0
                      for index in 0..<size {
                          guard let byte = memory[address &+ UInt64(index)] else { return nil }
                          value |= UInt64(byte) << (8 * UInt64(index))
                      }
                      return value
                  })
    }

    @Test("From the trampoline: the interrupted frame with the ucontext's registers, exact; then its caller")
    func walksThroughTheSignalFrame() {
        let frames = X86_64StackWalker.walk(context: [16: Self.trampoline, 7: Self.stack, 6: 0], input: Self.input(Self.memory()))
        #expect(frames.count == 3, "\(frames.map { String($0.pc, radix: 16) })")
        guard frames.count == 3 else { return }
        #expect(frames[1].pc == Self.interrupted)
        #expect(frames[1].isInterrupted)
        #expect(frames[1].lookupAddress == Self.interrupted)  // not pc - 1: that is another function
        #expect(frames[1].registers[7] == Self.stack + 0x400)
        #expect(frames[1].registers[6] == Self.stack + 0x420)
        #expect(frames[1].registers[3] == 0x1234)
        #expect(frames[1].registers[0] == 0xaa)
        // Its caller by the frame-pointer chain the ucontext's rbp starts.
        #expect(frames[2].pc == 0x4000_3005)
        #expect(frames[2].trust == .framePointer)
        #expect(frames[2].lookupAddress == 0x4000_3004)
    }

    @Test("Other code at the pc, or a ucontext the memory does not hold: no signal frame")
    func onlyTheSigreturnCall() {
        var memory = Self.memory()
        memory[Self.trampoline + 8] = 0x90
        let frames = X86_64StackWalker.walk(context: [16: Self.trampoline, 7: Self.stack, 6: 0], input: Self.input(memory), methods: [.cfi])
        #expect(frames.count == 1)
        memory = Self.memory()
        memory[Self.stack + 40 + 16 * 8] = nil
        let cut = X86_64StackWalker.walk(context: [16: Self.trampoline, 7: Self.stack, 6: 0], input: Self.input(memory), methods: [.cfi])
        #expect(cut.count == 1)
    }
}
