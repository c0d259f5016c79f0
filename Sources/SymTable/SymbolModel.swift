import SymBytes

/// The neutral in-memory symbol model that extractors (DWARF, symbol tables) fill and the `.csym`
/// writer consumes. Flat arrays indexed by `UInt32`, so millions of records cost few allocations.
///
/// Address semantics follow llvm-symbolizer's (the project's oracle):
/// - the innermost frame's file/line/column come from the line table row covering the address;
/// - each enclosing inlined or physical frame's location is the call site (`callFile`,
///   `callLine`, `callColumn`) of the scope directly inside it;
/// - the innermost scope containing an address wins (scopes nest by `parent`);
/// - the physical (outermost) frame's name is taken from the symbol table when a symbol covers
///   the address (see `SymbolEntry`), else from the scope.
public struct SymbolModel: Sendable {
    /// The module's identity.
    public var module: ModuleIdentity
    /// Interned strings (names, directories, file names), in one byte arena. Index 0 is always the
    /// empty string.
    public var strings: StringArena
    /// Source files. Index 0 is the unknown file ("??").
    public var files: [SourceFile]
    /// Functions and inlined subroutines, parents before children.
    public var scopes: [Scope]
    /// Address ranges of all scopes; each scope owns `scopes[i].ranges`.
    public var ranges: [AddressRange]
    /// Line table rows grouped in sequences; a sequence ends with a row whose `isEndSequence` is set.
    public var lines: [LineRow]
    /// Function symbols from `.symtab`/`.dynsym` (name-only fallback and physical-frame names).
    public var symbols: [SymbolEntry]

    /// Creates an empty model for a module.
    public init(module: ModuleIdentity) {
        self.module = module
        strings = StringArena()
        files = [SourceFile(directory: 0, name: 0)]
        scopes = []
        ranges = []
        lines = []
        symbols = []
    }
}

/// What a module is: build-id, architecture and name.
public struct ModuleIdentity: Sendable, Equatable {
    /// GNU build-id bytes (empty when the file has none).
    public var buildID: [UInt8]
    /// ELF `e_machine` value.
    public var machine: UInt16
    /// Whether the ELF class is 64-bit.
    public var is64Bit: Bool
    /// The module's file name (no directory).
    public var name: String
    /// How the module lies in memory (nil: not known, as in tables before version 3).
    public var layout: ModuleLayout?
    /// The unwind rules the writer stores (version 4 on). Nil in a table read back: its rules
    /// are looked up in place (`SymbolTable.unwindRule(at:)`).
    public var unwindRules: UnwindRules?

    /// Creates an identity.
    public init(buildID: [UInt8], machine: UInt16, is64Bit: Bool, name: String, layout: ModuleLayout? = nil,
                unwindRules: UnwindRules? = nil) {
        self.buildID = buildID
        self.machine = machine
        self.is64Bit = is64Bit
        self.name = name
        self.layout = layout
        self.unwindRules = unwindRules
    }

    /// The build-id as lowercase hex.
    public var buildIDHex: String { hexString(buildID) }
}

/// A source file as (directory, name) string indices; `name` may itself be absolute.
public struct SourceFile: Sendable, Hashable {
    /// Index into `SymbolModel.strings` of the directory (0 when none).
    public var directory: UInt32
    /// Index into `SymbolModel.strings` of the file name or path.
    public var name: UInt32

    /// Creates a file record.
    public init(directory: UInt32, name: UInt32) {
        self.directory = directory
        self.name = name
    }
}

/// A half-open address range `[start, end)` in the module's file virtual addresses.
public struct AddressRange: Sendable, Hashable {
    /// First address.
    public var start: UInt64
    /// One past the last address.
    public var end: UInt64

    /// Creates a range.
    public init(start: UInt64, end: UInt64) {
        self.start = start
        self.end = end
    }
}

/// A function (`parent == nil`) or an inlined subroutine.
public struct Scope: Sendable, Equatable {
    /// Index into `SymbolModel.strings`: the linkage (mangled) name when known, else the plain name.
    public var name: UInt32
    /// Index of the enclosing scope, or `Scope.noParent` for a physical function.
    public var parent: UInt32
    /// First index into `SymbolModel.ranges`.
    public var firstRange: UInt32
    /// Number of ranges.
    public var rangeCount: UInt32
    /// For inlined scopes: the file index of the call site in the parent (0 when unknown).
    public var callFile: UInt32
    /// For inlined scopes: the call line (0 when unknown).
    public var callLine: UInt32
    /// For inlined scopes: the call column (0 when unknown).
    public var callColumn: UInt32

    /// Marks a physical function.
    public static let noParent = UInt32.max

    /// Creates a scope.
    public init(name: UInt32, parent: UInt32 = Scope.noParent, firstRange: UInt32, rangeCount: UInt32,
                callFile: UInt32 = 0, callLine: UInt32 = 0, callColumn: UInt32 = 0) {
        self.name = name
        self.parent = parent
        self.firstRange = firstRange
        self.rangeCount = rangeCount
        self.callFile = callFile
        self.callLine = callLine
        self.callColumn = callColumn
    }

    /// Whether this is an inlined subroutine.
    public var isInlined: Bool { parent != Scope.noParent }

    /// The indices of this scope's ranges in `SymbolModel.ranges`.
    public var rangeIndices: Range<Int> { Int(firstRange)..<(Int(firstRange) + Int(rangeCount)) }
}

/// One row of a line table.
public struct LineRow: Sendable, Equatable {
    /// Address of the first instruction of the row.
    public var address: UInt64
    /// File index into `SymbolModel.files` (0 when unknown).
    public var file: UInt32
    /// Line (0 when the code has no line, e.g. compiler-generated).
    public var line: UInt32
    /// Column (0 when unknown).
    public var column: UInt32
    /// Whether this row ends a sequence (its address is one past the last covered byte).
    public var isEndSequence: Bool

    /// Creates a row.
    public init(address: UInt64, file: UInt32, line: UInt32, column: UInt32 = 0, isEndSequence: Bool = false) {
        self.address = address
        self.file = file
        self.line = line
        self.column = column
        self.isEndSequence = isEndSequence
    }
}

/// A function symbol from an ELF symbol table.
public struct SymbolEntry: Sendable, Equatable {
    /// Index into `SymbolModel.strings` of the (mangled) symbol name.
    public var name: UInt32
    /// Symbol value (file virtual address).
    public var address: UInt64
    /// Symbol size (0 when unknown: such a symbol covers up to the next symbol, as in llvm-symbolizer).
    public var size: UInt64

    /// Creates a symbol entry.
    public init(name: UInt32, address: UInt64, size: UInt64) {
        self.name = name
        self.address = address
        self.size = size
    }
}

extension SymbolModel {
    /// Appends `text` (without deduplication), returning its index. Callers that intern many
    /// strings use a `StringInterner` over `strings`; this is for small producers and tests.
    public mutating func appendString(_ text: String) -> UInt32 {
        strings.append(text)
    }
}
