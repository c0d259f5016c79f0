import SymBytes
import SymUnwind

extension Minidump {
    /// The registers `thread` had when the dump was written: the exception's context for the
    /// crashed thread (where it faulted, not inside the handler), else the thread's own.
    public func context(of thread: Thread) throws(FormatError) -> MinidumpContext {
        let location = exception.flatMap { $0.threadID == thread.id ? $0.context : nil } ?? thread.context
        switch system?.processorArchitecture ?? 9 {
        case 9: return try MinidumpContext(amd64: bytes(location))
        case 12: return try MinidumpContext(arm64: bytes(location))
        case let other:
            throw FormatError(.unsupported, "the stacks of a \(system?.cpu ?? "0x" + String(other, radix: 16)) minidump are not walked (amd64 and arm64 are)")
        }
    }

    /// Walks `thread`'s stack over the dump's memory; `unwindInfo` gives a module's rules and
    /// the file address its first byte has (Breakpad's load address), or nil when unknown.
    public func walk(_ thread: Thread, maximumFrames: Int = 1024, methods: [FrameTrust] = [.cfi, .framePointer, .scan],
                     unwindInfo: (Module) -> (cfi: CallFrameInfo, loadAddress: UInt64)?) throws(FormatError) -> [StackFrame] {
        let walkModules = modules.map { module -> WalkModule in
            let info = unwindInfo(module)
            return WalkModule(start: module.base, end: module.base &+ UInt64(module.size),
                              bias: module.base &- (info?.loadAddress ?? module.base), cfi: info?.cfi)
        }
        return try walk(thread, modules: walkModules, maximumFrames: maximumFrames, methods: methods)
    }

    /// Walks `thread`'s stack over the dump's memory with `modules` (one per module of the dump,
    /// with its rules from a table or an ELF file, as `CoreFile.walk` takes them).
    public func walk(_ thread: Thread, modules: [WalkModule], maximumFrames: Int = 1024,
                     methods: [FrameTrust] = [.cfi, .framePointer, .scan]) throws(FormatError) -> [StackFrame] {
        let context = try context(of: thread)
        let input = WalkInput(modules: modules, memory: { address, size in self.read(address, size: size) })
        switch context.cpu {
        case .amd64:
            return X86_64StackWalker.walk(context: context.registers, input: input, maximumFrames: maximumFrames, methods: methods)
        case .arm64:
            return AArch64StackWalker.walk(context: context.registers, input: input, maximumFrames: maximumFrames, methods: methods)
        }
    }
}
