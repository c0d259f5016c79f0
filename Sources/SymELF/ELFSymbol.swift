/// One symbol table entry (`Elf32_Sym` / `Elf64_Sym`) with its name resolved.
public struct ELFSymbol: Sendable, Equatable {
    /// Name from the linked string table (empty for unnamed symbols).
    public let name: String
    /// `st_value`: an address in executables and shared objects, a section offset in objects.
    public let value: UInt64
    /// `st_size`.
    public let size: UInt64
    /// `ELF_ST_TYPE(st_info)`: `STT_FUNC`, `STT_OBJECT`, ...
    public let type: UInt8
    /// `ELF_ST_BIND(st_info)`: `STB_LOCAL`, `STB_GLOBAL`, `STB_WEAK`, ...
    public let binding: UInt8
    /// `st_other`: visibility in the low two bits.
    public let other: UInt8
    /// `st_shndx` as stored (`SHN_UNDEF`, `SHN_ABS`, `SHN_XINDEX`, or a section index).
    public let sectionIndex: UInt16
    /// Whether it came from `.dynsym` rather than `.symtab`.
    public let isDynamic: Bool

    /// Creates a symbol.
    public init(name: String, value: UInt64, size: UInt64, type: UInt8, binding: UInt8, other: UInt8 = 0,
                sectionIndex: UInt16, isDynamic: Bool) {
        self.name = name
        self.value = value
        self.size = size
        self.type = type
        self.binding = binding
        self.other = other
        self.sectionIndex = sectionIndex
        self.isDynamic = isDynamic
    }

    /// Whether the symbol names code: `STT_FUNC` or `STT_GNU_IFUNC`.
    public var isFunction: Bool { type == ELF.STT_FUNC || type == ELF.STT_GNU_IFUNC }

    /// Whether the symbol is defined in this file (not `SHN_UNDEF`).
    public var isDefined: Bool { sectionIndex != ELF.SHN_UNDEF }
}
