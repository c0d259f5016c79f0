import SymBytes

extension TableLayout {
    /// Function-name records per block of stored demangled names.
    var demangledBlockSize: Int { 1 << demangledBlockShift }

    /// Checks the demangled-names section's shape on open (version 2): one `UInt32` offset (a table
    /// that stores nothing), or an offset per block plus one, the first 0 and the last the size of
    /// the blocks' data. The offsets in between are checked when their block is read.
    mutating func validateDemangledNames(_ reader: ByteReader) throws(FormatError) {
        let extent = demangledNames
        let entry = UInt64(TableFormat.Field.sectionDirectory
            + TableFormat.Section.demangledNames.rawValue * TableFormat.directoryEntrySize)
        guard extent.size >= 4 else {
            throw FormatError(.invalidValue, "demangled names section is \(extent.size) bytes, too short for its offsets",
                              offset: entry)
        }
        guard try reader.u32(at: extent.offset) == 0 else {
            throw FormatError(.invalidValue, "demangled names: the first block offset is not 0", offset: UInt64(extent.offset))
        }
        if extent.size == 4 {
            demangledBlockCount = 0
            return
        }
        // nameCount is at most UInt32.max: no overflow below.
        let blocks = (nameCount + demangledBlockSize - 1) >> demangledBlockShift
        let offsetsSize = (blocks + 1) * 4
        guard blocks > 0, extent.size >= offsetsSize else {
            throw FormatError(.invalidValue,
                              "demangled names section is \(extent.size) bytes, \(blocks) blocks need \(offsetsSize) of offsets",
                              offset: entry)
        }
        let last = try reader.u32(at: extent.offset + blocks * 4)
        guard Int(last) == extent.size - offsetsSize else {
            throw FormatError(.invalidValue, "demangled names: the last block offset \(last) is not the data size \(extent.size - offsetsSize)",
                              offset: UInt64(extent.offset + blocks * 4))
        }
        demangledBlockCount = blocks
    }

    /// The compressed frame of demangled-name block `block` (< `demangledBlockCount`), empty when
    /// the block stores no names.
    func demangledFrame(_ reader: ByteReader, block: Int) throws(FormatError) -> UnsafeRawBufferPointer {
        let offsets = demangledNames.offset
        let dataStart = offsets + (demangledBlockCount + 1) * 4
        let dataSize = demangledNames.size - (demangledBlockCount + 1) * 4
        let start = Int(try reader.u32(at: offsets + block * 4))
        let end = Int(try reader.u32(at: offsets + block * 4 + 4))
        guard start <= end, end <= dataSize else {
            throw FormatError(.invalidValue, "demangled names: block \(block) spans \(start)..<\(end) of \(dataSize) bytes",
                              offset: UInt64(offsets + block * 4))
        }
        return try reader.slice(dataStart + start, end - start, "demangled names block \(block)")
    }
}
