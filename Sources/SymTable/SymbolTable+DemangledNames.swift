import SymBytes

/// One block of stored demangled names as the table holds it (see
/// `SymbolTable.compressedDemangledNames(inBlockOf:)`): where its frame lies and what it
/// decompresses to, so that a caller can make room for it before `DecompressionScratch.decode`.
public struct CompressedNameBlock {
    /// The first function-name record of the block.
    public let first: UInt32
    /// Records in the block (the last block may hold fewer than the block size).
    public let count: Int
    /// Bytes the block decompresses to: 0 when it stores no names.
    public let byteCount: Int
    /// The zstd frame, in the table's bytes (empty when the block stores no names).
    let frame: UnsafeRawBufferPointer
    /// Where the frame starts in the table (for error messages).
    let offset: Int
}

extension SymbolTable {
    /// Whether the table stores demangled names (a version 2 table of a module with names that
    /// need the Swift runtime to demangle; never a version 1 table).
    public var hasStoredDemangledNames: Bool { layout.demangledBlockCount > 0 }

    /// Function-name records per block of stored demangled names.
    public var demangledBlockSize: Int { layout.demangledBlockSize }

    /// The block of stored demangled names that holds function-name record `nameIndex`, checked
    /// but not decompressed (`DecompressionScratch.decode` does that). A table that stores none
    /// gives an empty block. Throws `FormatError` for an index past the names, bad offsets or a
    /// frame that is not one zstd frame declaring at most 8 MiB. The frame points into the table:
    /// decode it while the table lives.
    public func compressedDemangledNames(inBlockOf nameIndex: UInt32) throws(FormatError) -> CompressedNameBlock {
        guard Int(nameIndex) < layout.nameCount else {
            throw FormatError(.invalidValue, "function name \(nameIndex) out of bounds (\(layout.nameCount) names)")
        }
        let block = Int(nameIndex) >> layout.demangledBlockShift
        let first = block << layout.demangledBlockShift
        let count = min(layout.demangledBlockSize, layout.nameCount - first)
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        guard block < layout.demangledBlockCount else {
            return CompressedNameBlock(first: UInt32(first), count: count, byteCount: 0, frame: empty, offset: 0)
        }
        let frame = try withBytes { bytes throws(FormatError) in try layout.demangledFrame(ByteReader(bytes), block: block) }
        guard let start = frame.baseAddress, !frame.isEmpty, let base = baseAddress else {
            return CompressedNameBlock(first: UInt32(first), count: count, byteCount: 0, frame: empty, offset: 0)
        }
        let offset = start - base
        return CompressedNameBlock(first: UInt32(first), count: count,
                                   byteCount: try DecompressionScratch.contentSize(frame, at: offset),
                                   frame: frame, offset: offset)
    }

    /// Decompresses the block of stored demangled names that holds function-name record
    /// `nameIndex` into `scratch` and returns it: every record of the block with its stored name,
    /// if any (`compressedDemangledNames(inBlockOf:)`, then `scratch.decode`). Throws
    /// `FormatError` for an index past the names or an ill-formed block (bad offsets, a corrupt
    /// or oversized zstd frame, entries that do not fill it).
    public func demangledNames(inBlockOf nameIndex: UInt32,
                               into scratch: inout DecompressionScratch) throws(FormatError) -> DemangledNameBlock {
        try scratch.decode(try compressedDemangledNames(inBlockOf: nameIndex))
    }
}
