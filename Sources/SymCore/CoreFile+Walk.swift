import SymBytes
import SymUnwind

extension CoreFile {
    /// Walks `thread`'s stack over the core's memory; `modules` are the mapped images with their
    /// unwind rules (`WalkModule`: where each is, its bias and its CFI when known).
    public func walk(_ thread: Thread, modules: [WalkModule], maximumFrames: Int = 1024,
                     methods: [FrameTrust] = [.cfi, .framePointer, .scan]) throws(FormatError) -> [StackFrame] {
        guard machine == .x86_64 else {
            throw FormatError(.unsupported, "only x86_64 stacks are walked yet (this core is \(machine))")
        }
        let input = WalkInput(modules: modules, memory: { address, size in self.read(address, size: size) })
        return X86_64StackWalker.walk(context: thread.registers, input: input, maximumFrames: maximumFrames, methods: methods)
    }
}
