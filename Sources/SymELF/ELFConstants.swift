/// Numeric constants from the ELF specification (System V gABI, `<elf.h>`), under their spec names.
///
/// This is the raw layer, so the spec's names are kept: readers can grep them in `elf.h`.
public enum ELF {
    // e_ident (gABI "ELF Identification")
    /// `ELFMAG`: the four bytes every ELF file starts with (`\x7fELF`).
    public static let ELFMAG: [UInt8] = [0x7f, 0x45, 0x4c, 0x46]

    /// Whether `bytes` start with the ELF magic: the one test of "are these bytes ELF" (STYLE 19),
    /// whatever holds them (a mapping, a file's first bytes, an image read from a core's memory).
    @inlinable
    public static func hasMagic<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        bytes.starts(with: ELFMAG)
    }

    /// `ELFCLASS32`: 32-bit objects.
    public static let ELFCLASS32: UInt8 = 1
    /// `ELFCLASS64`: 64-bit objects.
    public static let ELFCLASS64: UInt8 = 2
    /// `ELFDATA2LSB`: little-endian.
    public static let ELFDATA2LSB: UInt8 = 1
    /// `ELFDATA2MSB`: big-endian.
    public static let ELFDATA2MSB: UInt8 = 2
    /// `EV_CURRENT`: the only ELF version.
    public static let EV_CURRENT: UInt8 = 1

    // e_type
    /// `ET_REL`: relocatable object.
    public static let ET_REL: UInt16 = 1
    /// `ET_EXEC`: executable.
    public static let ET_EXEC: UInt16 = 2
    /// `ET_DYN`: shared object or position-independent executable.
    public static let ET_DYN: UInt16 = 3
    /// `ET_CORE`: core file.
    public static let ET_CORE: UInt16 = 4

    // Special section indexes
    /// `SHN_UNDEF`: no section.
    public static let SHN_UNDEF: UInt16 = 0
    /// `SHN_ABS`: absolute symbol value.
    public static let SHN_ABS: UInt16 = 0xfff1
    /// `SHN_COMMON`: common symbol.
    public static let SHN_COMMON: UInt16 = 0xfff2
    /// `SHN_XINDEX`: the real index is elsewhere (section 0's `sh_link`, or `SHT_SYMTAB_SHNDX`).
    public static let SHN_XINDEX: UInt16 = 0xffff
    /// `PN_XNUM`: the real program header count is in section 0's `sh_info`.
    public static let PN_XNUM: UInt16 = 0xffff

    // sh_type
    /// `SHT_NULL`: inactive section header.
    public static let SHT_NULL: UInt32 = 0
    /// `SHT_PROGBITS`: program-defined contents.
    public static let SHT_PROGBITS: UInt32 = 1
    /// `SHT_SYMTAB`: full symbol table.
    public static let SHT_SYMTAB: UInt32 = 2
    /// `SHT_STRTAB`: string table.
    public static let SHT_STRTAB: UInt32 = 3
    /// `SHT_RELA`: relocations with addends.
    public static let SHT_RELA: UInt32 = 4
    /// `SHT_NOTE`: notes.
    public static let SHT_NOTE: UInt32 = 7
    /// `SHT_NOBITS`: occupies no file space (`.bss`, stripped sections of a debug file).
    public static let SHT_NOBITS: UInt32 = 8
    /// `SHT_DYNSYM`: dynamic-linking symbol table.
    public static let SHT_DYNSYM: UInt32 = 11
    /// `SHT_SYMTAB_SHNDX`: extended section indexes of a symbol table.
    public static let SHT_SYMTAB_SHNDX: UInt32 = 18

    // sh_flags
    /// `SHF_WRITE`: writable at run time.
    public static let SHF_WRITE: UInt64 = 0x1
    /// `SHF_ALLOC`: occupies memory at run time.
    public static let SHF_ALLOC: UInt64 = 0x2
    /// `SHF_EXECINSTR`: executable instructions.
    public static let SHF_EXECINSTR: UInt64 = 0x4
    /// `SHF_COMPRESSED`: contents start with an `ElfN_Chdr`.
    public static let SHF_COMPRESSED: UInt64 = 0x800

    // ch_type (gABI "Section Compression")
    /// `ELFCOMPRESS_ZLIB`: zlib stream.
    public static let ELFCOMPRESS_ZLIB: UInt32 = 1
    /// `ELFCOMPRESS_ZSTD`: Zstandard frames.
    public static let ELFCOMPRESS_ZSTD: UInt32 = 2

    // p_type
    /// `PT_LOAD`: loadable segment.
    public static let PT_LOAD: UInt32 = 1
    /// `PT_DYNAMIC`: dynamic-linking information.
    public static let PT_DYNAMIC: UInt32 = 2
    /// `PT_NOTE`: notes.
    public static let PT_NOTE: UInt32 = 4

    // Note types (owner "GNU")
    /// `NT_GNU_BUILD_ID`: the build-id bit string.
    public static let NT_GNU_BUILD_ID: UInt32 = 3

    // st_info type (low nibble)
    /// `STT_NOTYPE`: unspecified.
    public static let STT_NOTYPE: UInt8 = 0
    /// `STT_OBJECT`: data object.
    public static let STT_OBJECT: UInt8 = 1
    /// `STT_FUNC`: function.
    public static let STT_FUNC: UInt8 = 2
    /// `STT_SECTION`: a section.
    public static let STT_SECTION: UInt8 = 3
    /// `STT_FILE`: source file name.
    public static let STT_FILE: UInt8 = 4
    /// `STT_TLS`: thread-local data.
    public static let STT_TLS: UInt8 = 6
    /// `STT_GNU_IFUNC`: indirect function (resolver).
    public static let STT_GNU_IFUNC: UInt8 = 10

    // st_info binding (high nibble)
    /// `STB_LOCAL`: local symbol.
    public static let STB_LOCAL: UInt8 = 0
    /// `STB_GLOBAL`: global symbol.
    public static let STB_GLOBAL: UInt8 = 1
    /// `STB_WEAK`: weak symbol.
    public static let STB_WEAK: UInt8 = 2
    /// `STB_GNU_UNIQUE`: unique global symbol.
    public static let STB_GNU_UNIQUE: UInt8 = 10

    // e_machine
    /// `EM_SPARC`.
    public static let EM_SPARC: UInt16 = 2
    /// `EM_386`.
    public static let EM_386: UInt16 = 3
    /// `EM_68K`.
    public static let EM_68K: UInt16 = 4
    /// `EM_MIPS`.
    public static let EM_MIPS: UInt16 = 8
    /// `EM_PPC`.
    public static let EM_PPC: UInt16 = 20
    /// `EM_PPC64`.
    public static let EM_PPC64: UInt16 = 21
    /// `EM_S390`.
    public static let EM_S390: UInt16 = 22
    /// `EM_ARM`.
    public static let EM_ARM: UInt16 = 40
    /// `EM_SH`.
    public static let EM_SH: UInt16 = 42
    /// `EM_SPARCV9`.
    public static let EM_SPARCV9: UInt16 = 43
    /// `EM_IA_64`.
    public static let EM_IA_64: UInt16 = 50
    /// `EM_X86_64`.
    public static let EM_X86_64: UInt16 = 62
    /// `EM_AARCH64`.
    public static let EM_AARCH64: UInt16 = 183
    /// `EM_RISCV`.
    public static let EM_RISCV: UInt16 = 243
    /// `EM_BPF`.
    public static let EM_BPF: UInt16 = 247
    /// `EM_LOONGARCH`.
    public static let EM_LOONGARCH: UInt16 = 258
}
