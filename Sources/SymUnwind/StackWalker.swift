/// How a frame of a walked stack was found (DESIGN.md "Stack walking").
public enum FrameTrust: String, Sendable, Hashable {
    /// The registers the dump recorded (the first frame), or those the kernel saved when a
    /// signal interrupted the frame (its `rt_sigframe`).
    case context
    /// Unwound with call-frame information.
    case cfi
    /// Unwound by following the frame-pointer chain.
    case framePointer = "frame-pointer"
    /// A return address found by scanning the stack.
    case scan
}

/// One frame of a walked stack.
public struct StackFrame: Sendable, Equatable {
    /// The frame's pc: the exact instruction for the first frame and for frames a signal
    /// interrupted, a return address otherwise (look it up at `pc - 1`).
    public var pc: UInt64
    /// The registers known in this frame, by DWARF number.
    public var registers: [UInt16: UInt64]
    /// How the frame was found.
    public var trust: FrameTrust
    /// Whether a signal interrupted this frame (its callee is a signal trampoline: CFI with the
    /// `S` augmentation, or the kernel's `rt_sigframe`): its pc is the interrupted instruction,
    /// no return address.
    public var isInterrupted: Bool

    /// Creates a frame.
    public init(pc: UInt64, registers: [UInt16: UInt64], trust: FrameTrust, isInterrupted: Bool = false) {
        self.pc = pc
        self.registers = registers
        self.trust = trust
        self.isInterrupted = isInterrupted
    }

    /// The address to look the frame up at: the pc itself for the first frame and for a frame a
    /// signal interrupted, else the call instruction (`pc - 1`).
    public var lookupAddress: UInt64 { trust == .context || isInterrupted || pc == 0 ? pc : pc - 1 }
}

/// A module the walker knows: where it is mapped and its unwind rules.
public struct WalkModule: Sendable {
    /// First mapped address.
    public var start: UInt64
    /// One past the last mapped address.
    public var end: UInt64
    /// Subtracted from a runtime address to get the file address the rules use.
    public var bias: UInt64
    /// Its call-frame information, when known.
    public var cfi: CallFrameInfo?
    /// The rules of one file address found on demand (an `.eh_frame_hdr` search reading one FDE),
    /// asked when `cfi` is nil: a walk needs a few rows of a module, not all of them.
    public var rules: (@Sendable (UInt64) -> (entry: UnwindEntry, row: UnwindRow)?)?
    /// What the module holds at a file address, `count` bytes (its ELF file's code, or its
    /// table's executable segments): for the scan's check that a candidate return address
    /// follows a call. Nil: nothing known (the process memory is asked instead).
    public var code: (@Sendable (_ address: UInt64, _ count: Int) -> CodeBytes)?

    /// Creates a module.
    public init(start: UInt64, end: UInt64, bias: UInt64, cfi: CallFrameInfo?,
                rules: (@Sendable (UInt64) -> (entry: UnwindEntry, row: UnwindRow)?)? = nil,
                code: (@Sendable (_ address: UInt64, _ count: Int) -> CodeBytes)? = nil) {
        self.start = start
        self.end = end
        self.bias = bias
        self.cfi = cfi
        self.rules = rules
        self.code = code
    }

    /// The unwind rules at file address `address`: from `cfi`, else from `rules`.
    public func row(at address: UInt64) -> (entry: UnwindEntry, row: UnwindRow)? {
        if let cfi { return cfi.row(at: address) }
        return rules?(address)
    }
}

/// The memory and modules a walk reads from.
public struct WalkInput {
    /// The modules, in any order.
    public var modules: [WalkModule]
    /// Reads `size` bytes (1 to 8) of the process's memory, little-endian; nil when absent.
    public var memory: DWARFExpression.MemoryReader
    /// Whether a scanned return address must follow a call where the code is known (off:
    /// Breakpad's rule, its call instruction in a module, alone).
    public var checksCallSites = true

    /// Creates an input.
    public init(modules: [WalkModule], memory: @escaping DWARFExpression.MemoryReader) {
        self.modules = modules
        self.memory = memory
    }

    /// The module mapping `address`.
    public func module(at address: UInt64) -> WalkModule? {
        modules.first { address >= $0.start && address < $0.end }
    }
}

/// A frame's identity for the walkers' loop check: its pc and stack pointer.
struct FrameKey: Hashable {
    var pc: UInt64
    var sp: UInt64
}
