/// One resolved frame, ready for output.
public struct SymbolicatedFrame: Sendable, Equatable {
    /// Demangled function name ("??" when unknown).
    public var function: String
    /// The name as stored (mangled when the compiler mangled it).
    public var mangled: String
    /// Absolute source path when known, else empty.
    public var file: String
    /// Line (0 when unknown).
    public var line: UInt32
    /// Column (0 when unknown).
    public var column: UInt32
    /// Whether this frame was inlined into the next one.
    public var inlined: Bool
    /// Whether the name comes from the ELF symbol table only (no debug info for this code).
    public var symbolOnly: Bool

    /// Creates a frame.
    public init(function: String, mangled: String, file: String, line: UInt32, column: UInt32,
                inlined: Bool, symbolOnly: Bool) {
        self.function = function
        self.mangled = mangled
        self.file = file
        self.line = line
        self.column = column
        self.inlined = inlined
        self.symbolOnly = symbolOnly
    }
}
