/// One frame of a lookup: a function and the source position inside it, innermost first.
///
/// For the innermost frame the position is the line-table row covering the address; for each
/// enclosing frame it is the call site of the frame inside it. Strings are references into the
/// table that produced the frame.
public struct Frame: Sendable, Equatable {
    /// The function's (mangled) name; demangling happens at output.
    public var function: StringRef
    /// The source file's directory (empty when the file name is absolute or unknown).
    public var directory: StringRef
    /// The source file name or path (empty when unknown).
    public var file: StringRef
    /// The line (0 when unknown).
    public var line: UInt32
    /// The column (0 when unknown).
    public var column: UInt32
    /// Whether this frame was inlined into the next one (every frame but the physical function).
    public var isInlined: Bool
    /// Whether the name comes from the ELF symbol table alone, with no DWARF scope.
    public var isSymbolOnly: Bool
    /// The DWARF function's own name (its linkage name, else its name): the same as `function`
    /// except on a physical frame that the covering ELF symbol names otherwise (`function` is then
    /// the symbol's, which `lookup` prints; binutils' `addr2line` prints this one).
    public var scopeFunction: StringRef

    /// Creates a frame (`scopeFunction` defaults to `function`).
    public init(function: StringRef, directory: StringRef, file: StringRef, line: UInt32, column: UInt32,
                isInlined: Bool, isSymbolOnly: Bool, scopeFunction: StringRef? = nil) {
        self.scopeFunction = scopeFunction ?? function
        self.function = function
        self.directory = directory
        self.file = file
        self.line = line
        self.column = column
        self.isInlined = isInlined
        self.isSymbolOnly = isSymbolOnly
    }
}
