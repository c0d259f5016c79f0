import SymUnwind
import Testing

/// Where the walkers stop, on rules and stacks made to misbehave: a loop at one stack pointer,
/// a stack pointer that moves down, a chain longer than the frame limit.
@Suite struct WalkerStopTests {
    static let module: Range<UInt64> = 0x40_0000..<0x50_0000

    /// One module whose every address has `row` (return address in `returnAddress`), over
    /// `memory` (8-byte reads only).
    static func input(row: UnwindRow, returnAddress: UInt16, memory: @escaping @Sendable (UInt64) -> UInt64? = { _ in nil }) -> WalkInput {
        let entry = UnwindEntry(start: module.lowerBound, end: module.upperBound, returnAddressRegister: returnAddress,
                                isSignalFrame: false, source: .ehFrame, rows: [row])
        let walkModule = WalkModule(start: module.lowerBound, end: module.upperBound, bias: 0, cfi: nil) { _ in (entry, row) }
        return WalkInput(modules: [walkModule]) { address, size in size == 8 ? memory(address) : nil }
    }

    /// Rules that return to another function at the same stack pointer, swapping two registers:
    /// the caller of A is B and the caller of B is A, for ever (hostile or corrupt CFI).
    @Test("x86_64: CFI that loops between two pcs at one stack pointer stops at the first repeat, not the frame limit")
    func x86LoopAtOneStackPointer() {
        // CFA = rsp; the return address is rbx; the caller's rbx is the callee's rax and its rax the callee's rbx.
        let row = UnwindRow(address: Self.module.lowerBound, cfa: .registerOffset(register: 7, offset: 0), registers: [
            RegisterRuleEntry(register: 16, rule: .register(3)),
            RegisterRuleEntry(register: 3, rule: .register(0)),
            RegisterRuleEntry(register: 0, rule: .register(3)),
        ])
        let a: UInt64 = 0x40_1000, b: UInt64 = 0x40_2000
        let frames = X86_64StackWalker.walk(context: [16: a, 7: 0x7ff0, 3: b, 0: a], input: Self.input(row: row, returnAddress: 16),
                                            methods: [.cfi])
        // A (the context), B, then A again at the same stack pointer: the walk ends.
        #expect(frames.map(\.pc) == [a, b], "\(frames.count) frames")
    }

    @Test("aarch64: CFI that loops between two pcs at one stack pointer stops at the first repeat")
    func aarch64LoopAtOneStackPointer() {
        // CFA = sp; the caller's x30 is the callee's x0 and its x0 the callee's x30.
        let row = UnwindRow(address: Self.module.lowerBound, cfa: .registerOffset(register: 31, offset: 0), registers: [
            RegisterRuleEntry(register: 30, rule: .register(0)),
            RegisterRuleEntry(register: 0, rule: .register(30)),
        ])
        let a: UInt64 = 0x40_1000, b: UInt64 = 0x40_2000
        let frames = AArch64StackWalker.walk(context: [32: a, 31: 0x7ff0, 30: a, 0: b], input: Self.input(row: row, returnAddress: 30),
                                             methods: [.cfi])
        #expect(frames.map(\.pc) == [a, b], "\(frames.count) frames")
    }

    @Test("x86_64: a caller whose stack pointer is below its callee's ends the walk")
    func x86StackPointerMovingDown() {
        // CFA = rsp - 16, return address at CFA - 8: the caller's frame would lie below.
        let row = UnwindRow(address: Self.module.lowerBound, cfa: .registerOffset(register: 7, offset: -16),
                            registers: [RegisterRuleEntry(register: 16, rule: .offset(-8))])
        let frames = X86_64StackWalker.walk(context: [16: 0x40_1000, 7: 0x7ff0], input: Self.input(row: row, returnAddress: 16) { _ in 0x40_2000 },
                                            methods: [.cfi])
        #expect(frames.map(\.pc) == [0x40_1000])
        // The same rule with CFA = rsp + 16 goes on (the stop was the stack pointer's).
        let up = UnwindRow(address: Self.module.lowerBound, cfa: .registerOffset(register: 7, offset: 16),
                           registers: [RegisterRuleEntry(register: 16, rule: .offset(-8))])
        let onward = X86_64StackWalker.walk(context: [16: 0x40_1000, 7: 0x7ff0], input: Self.input(row: up, returnAddress: 16) { _ in 0x40_2000 },
                                            maximumFrames: 3, methods: [.cfi])
        #expect(onward.count == 3)
    }

    @Test("x86_64: a chain longer than the limit stops at the limit (1024 by default)")
    func x86FrameLimit() {
        // CFA = rsp + 16, return address at CFA - 8: every word of the stack is a return address.
        let row = UnwindRow(address: Self.module.lowerBound, cfa: .registerOffset(register: 7, offset: 16),
                            registers: [RegisterRuleEntry(register: 16, rule: .offset(-8))])
        let input = Self.input(row: row, returnAddress: 16) { address in 0x40_1000 + (address & 0xfff0) }
        #expect(X86_64StackWalker.walk(context: [16: 0x40_1000, 7: 0x10_0000], input: input, maximumFrames: 10).count == 10)
        let frames = X86_64StackWalker.walk(context: [16: 0x40_1000, 7: 0x10_0000], input: input)
        #expect(frames.count == 1024)
        #expect(frames.dropFirst().allSatisfy { $0.trust == .cfi })
    }
}
