import SymBytes
import SymUnwind

extension CoreFile {
    /// Walks `thread`'s stack over the core's memory; `modules` are the mapped images with their
    /// unwind rules (`WalkModule`: where each is, its bias and its CFI when known). An aarch64
    /// thread gives its first frame only (no aarch64 walker yet).
    public func walk(_ thread: Thread, modules: [WalkModule], maximumFrames: Int = 1024,
                     methods: [FrameTrust] = [.cfi, .framePointer, .scan]) throws(FormatError) -> [StackFrame] {
        guard machine == .x86_64 else {
            // aarch64 registers are read, its walker is not written yet: the thread's pc alone.
            return thread.pc.map { [StackFrame(pc: $0, registers: thread.registers, trust: .context)] } ?? []
        }
        let input = WalkInput(modules: modules, memory: { address, size in self.read(address, size: size) })
        return X86_64StackWalker.walk(context: thread.registers, input: input, maximumFrames: maximumFrames, methods: methods)
    }
}
