import SymBytes
import SymUnwind

extension CoreFile {
    /// Walks `thread`'s stack over the core's memory; `modules` are the mapped images with their
    /// unwind rules (`WalkModule`: where each is, its bias and its CFI when known), with the
    /// walker of the core's machine (x86_64, aarch64).
    public func walk(_ thread: Thread, modules: [WalkModule], maximumFrames: Int = 1024,
                     methods: [FrameTrust] = [.cfi, .framePointer, .scan]) throws(FormatError) -> [StackFrame] {
        let input = WalkInput(modules: modules, memory: { address, size in self.read(address, size: size) })
        switch machine {
        case .x86_64:
            return X86_64StackWalker.walk(context: thread.registers, input: input, maximumFrames: maximumFrames, methods: methods)
        case .aarch64:
            return AArch64StackWalker.walk(context: thread.registers, input: input, maximumFrames: maximumFrames, methods: methods)
        }
    }
}
