extension ELFFile {
    /// What the loaded image holds at file virtual addresses `address..<address + count`.
    public enum LoadedBytes: Sendable, Equatable {
        /// The bytes, from the file (an executable `PT_LOAD` whose code this file carries).
        case code([UInt8])
        /// The addresses are in no executable `PT_LOAD`: data or headers, or outside the image.
        case notCode
        /// The file cannot say: no program headers, or a debug file whose code sections hold no
        /// bytes (`SHT_NOBITS`), or a range that straddles a segment's end.
        case unknown
    }

    /// The code at file virtual addresses `address..<address + count` (at most 64 bytes), as
    /// the program headers place it; bounds- and overflow-checked.
    public func loadedCode(at address: UInt64, count: Int) -> LoadedBytes {
        guard count > 0, count <= 64 else { return .unknown }
        let loads = programHeaders.filter { $0.type == ELF.PT_LOAD }
        guard !loads.isEmpty else { return .unknown }
        let (end, overflow) = address.addingReportingOverflow(UInt64(count))
        guard !overflow else { return .notCode }
        // The segment of the last byte decides (the one before a return address).
        let last = end - 1
        guard let segment = loads.first(where: { last >= $0.virtualAddress && last - $0.virtualAddress < $0.memorySize }) else {
            return .notCode
        }
        guard segment.flags & 1 != 0 else { return .notCode }  // PF_X
        guard address >= segment.virtualAddress else { return .unknown }
        let offsetInSegment = address - segment.virtualAddress
        guard end - segment.virtualAddress <= segment.fileSize else { return .unknown }
        // A debug file keeps the program headers but not the code: its sections there are NOBITS.
        if let section = sections.first(where: { $0.address <= address && address - $0.address < $0.size && $0.flags & ELF.SHF_ALLOC != 0 }),
           section.isNoBits {
            return .unknown
        }
        let bytes = storage.bytes
        let (start, startOverflow) = segment.offset.addingReportingOverflow(offsetInSegment)
        guard !startOverflow, start <= UInt64(bytes.count), UInt64(count) <= UInt64(bytes.count) - start else { return .unknown }
        return .code(Array(UnsafeRawBufferPointer(rebasing: bytes[Int(start)..<(Int(start) + count)])))
    }
}
