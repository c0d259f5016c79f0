extension ELFFile {
    /// The architecture in the names used by target triples and crash reports (`x86_64`,
    /// `aarch64`, `ppc64le`, ...), from `e_machine`, class and byte order; `machine-N` otherwise.
    public var architectureName: String {
        let is64Bit = header.is64Bit
        let little = header.isLittleEndian
        switch header.machine {
        case ELF.EM_X86_64: return is64Bit ? "x86_64" : "x32"
        case ELF.EM_386: return "i386"
        case ELF.EM_AARCH64: return little ? "aarch64" : "aarch64_be"
        case ELF.EM_ARM: return little ? "arm" : "armeb"
        case ELF.EM_RISCV: return is64Bit ? "riscv64" : "riscv32"
        case ELF.EM_PPC64: return little ? "ppc64le" : "ppc64"
        case ELF.EM_PPC: return little ? "ppcle" : "ppc"
        case ELF.EM_MIPS:
            switch (is64Bit, little) {
            case (true, true): return "mips64el"
            case (true, false): return "mips64"
            case (false, true): return "mipsel"
            case (false, false): return "mips"
            }
        case ELF.EM_S390: return is64Bit ? "s390x" : "s390"
        case ELF.EM_SPARC: return "sparc"
        case ELF.EM_SPARCV9: return "sparcv9"
        case ELF.EM_LOONGARCH: return is64Bit ? "loongarch64" : "loongarch32"
        case ELF.EM_IA_64: return "ia64"
        case ELF.EM_68K: return "m68k"
        case ELF.EM_SH: return "sh"
        case ELF.EM_BPF: return little ? "bpfel" : "bpfeb"
        default: return "machine-\(header.machine)"
        }
    }
}
