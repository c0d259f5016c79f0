import SymBytes
import SymCore
import SymUnwind

extension Minidump {
    /// Walks `thread`'s stack over the dump's memory with `modules` (one per module of the dump,
    /// rules from a table or an ELF file: `Symbolicator.walkModule(of:start:end:binary:)`).
    func walk(_ thread: Thread, modules: [WalkModule], maximumFrames: Int = 1024,
              methods: [FrameTrust] = [.cfi, .framePointer, .scan]) throws(FormatError) -> [StackFrame] {
        guard system?.processorArchitecture ?? 9 == 9 else {
            throw FormatError(.unsupported, "only x86_64 stacks are walked yet")
        }
        let context = try context(of: thread)
        let input = WalkInput(modules: modules, memory: { address, size in self.read(address, size: size) })
        return X86_64StackWalker.walk(context: context.registers, input: input, maximumFrames: maximumFrames, methods: methods)
    }
}
