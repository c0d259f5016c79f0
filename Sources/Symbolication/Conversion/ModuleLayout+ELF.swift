import SymELF
import SymTable

extension ModuleLayout {
    /// The layout of `file` from its program headers: the one place that decides where a
    /// module's mapping starts (the first `PT_LOAD`'s `p_vaddr` and `p_offset` aligned down to its
    /// `p_align`, or to 4 KiB when that is not a power of two) and which segments hold code.
    /// Nil when the file has no `PT_LOAD` (a relocatable object).
    public init?(_ file: ELFFile) {
        let loads = file.programHeaders.filter { $0.type == ELF.PT_LOAD }
        guard let first = loads.first else { return nil }
        let alignment = first.alignment > 1 && first.alignment & (first.alignment - 1) == 0 ? first.alignment : 0x1000
        self.init(mappingBase: first.virtualAddress & ~(alignment - 1), mappingOffset: first.offset & ~(alignment - 1),
                  segments: loads.prefix(Self.maximumSegments).map {
                      Segment(virtualAddress: $0.virtualAddress, memorySize: $0.memorySize, fileOffset: $0.offset, flags: $0.flags)
                  })
    }
}
