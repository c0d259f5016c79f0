#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CZstd
import SymBytes

/// Reusable state for reading blocks of stored demangled names: a zstd decompression context,
/// the decompressed bytes of the last block and where each of its names lies. One per thread;
/// what `SymbolTable.demangledNames(inBlockOf:into:)` returns points into it until its next use.
public struct DecompressionScratch: ~Copyable {
    /// The zstd context, made on first use.
    private var context: OpaquePointer?
    /// The last block's decompressed bytes.
    private(set) var buffer: UnsafeMutableRawPointer?
    private var capacity = 0
    /// Per record of the last block: 0 (no stored name), or `offset << 32 | (length + 1)` in `buffer`.
    private(set) var spans: UnsafeMutablePointer<UInt64>?
    private var spanCapacity = 0

    /// Empty scratch; memory is allocated on first use.
    public init() {}

    deinit {
        if let context { ZSTD_freeDCtx(context) }
        free(buffer)
        spans?.deallocate()
    }

    /// Decompresses `frame` (exactly one zstd frame declaring its size, at most
    /// `TableFormat.maximumDemangledBlockSize`) and parses `records` entries from it: per record a
    /// ULEB128 of (length + 1) and the bytes, or 0 for none; the entries must fill the frame.
    mutating func decode(_ frame: UnsafeRawBufferPointer, records: Int, at offset: Int) throws(FormatError) {
        let where_ = UInt64(offset)
        guard let source = frame.baseAddress, !frame.isEmpty else {
            throw FormatError(.decompression, "demangled names: empty zstd frame", offset: where_)
        }
        let declared = ZSTD_getFrameContentSize(source, frame.count)
        // Also rejects the "unknown" and "error" answers, which are near UInt64.max.
        guard declared <= UInt64(TableFormat.maximumDemangledBlockSize) else {
            throw FormatError(.limitExceeded,
                              "demangled names: a block declares \(declared) bytes (unknown or over \(TableFormat.maximumDemangledBlockSize))",
                              offset: where_)
        }
        let compressed = ZSTD_findFrameCompressedSize(source, frame.count)
        guard ZSTD_isError(compressed) == 0, compressed == frame.count else {
            throw FormatError(.decompression, "demangled names: the block is not exactly one zstd frame", offset: where_)
        }
        let size = Int(declared)
        if capacity < max(size, 1) {
            free(buffer)
            capacity = max(size, 1, 2 * capacity)
            guard let memory = malloc(capacity) else { fatalError("out of memory") }
            buffer = memory
        }
        if context == nil {
            guard let made = ZSTD_createDCtx() else { fatalError("out of memory (zstd context)") }
            context = made
        }
        let produced = ZSTD_decompressDCtx(context, buffer, size, source, frame.count)
        guard ZSTD_isError(produced) == 0, produced == size else {
            let reason = ZSTD_isError(produced) != 0 ? String(cString: ZSTD_getErrorName(produced)) : "\(produced) bytes"
            throw FormatError(.decompression, "demangled names: zstd: \(reason) (declared \(size))", offset: where_)
        }
        if spanCapacity < records {
            spans?.deallocate()
            spans = .allocate(capacity: records)
            spanCapacity = records
        }
        let bytes = UnsafeRawBufferPointer(start: buffer, count: size)
        var position = 0
        for record in 0..<records {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard position < size else {
                    throw FormatError(.truncated, "demangled names: block ends before record \(record) of \(records)", offset: where_)
                }
                let byte = bytes[position]
                position += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { break }
                shift += 7
                guard shift < 35 else {
                    throw FormatError(.invalidValue, "demangled names: length of record \(record) is too long an LEB128", offset: where_)
                }
            }
            guard value == 0 || value - 1 <= UInt64(size - position) else {
                throw FormatError(.truncated, "demangled names: record \(record) (\(value - 1) bytes) runs past its block", offset: where_)
            }
            spans![record] = value == 0 ? 0 : UInt64(position) << 32 | value
            if value != 0 { position += Int(value - 1) }
        }
        guard position == size else {
            throw FormatError(.invalidValue, "demangled names: \(size - position) bytes after the block's last record", offset: where_)
        }
    }
}

/// The stored demangled names of one block of function-name records (see
/// `SymbolTable.demangledNames(inBlockOf:into:)`); its bytes live in the scratch it was read into
/// and are valid until that scratch is used again.
public struct DemangledNameBlock {
    /// The first function-name record of the block.
    public let first: UInt32
    /// Records in the block (the last block may hold fewer than the block size).
    public let count: Int
    /// Whether any record of the block has a stored name.
    public var hasNames: Bool { spans != nil }
    private let base: UnsafeRawPointer?
    private let spans: UnsafePointer<UInt64>?

    init(first: UInt32, count: Int, base: UnsafeRawPointer?, spans: UnsafePointer<UInt64>?) {
        self.first = first
        self.count = count
        self.base = base
        self.spans = spans
    }

    /// The stored demangled name of the block's `position`th record (0..<count), nil when it has none.
    public subscript(position: Int) -> UnsafeRawBufferPointer? {
        guard let spans, position >= 0, position < count else { return nil }
        let span = spans[position]
        guard span != 0 else { return nil }
        return UnsafeRawBufferPointer(start: base! + Int(span >> 32), count: Int(span & 0xffff_ffff) - 1)
    }

    /// The stored demangled name of function-name record `record`, nil when it has none or is
    /// not in this block.
    public func name(ofRecord record: UInt32) -> UnsafeRawBufferPointer? {
        guard record >= first else { return nil }
        return self[Int(record - first)]
    }
}

extension SymbolTable {
    /// Whether the table stores demangled names (a version 2 table of a module with names that
    /// need the Swift runtime to demangle; never a version 1 table).
    public var hasStoredDemangledNames: Bool { layout.demangledBlockCount > 0 }

    /// Function-name records per block of stored demangled names.
    public var demangledBlockSize: Int { layout.demangledBlockSize }

    /// Decompresses the block of stored demangled names that holds function-name record
    /// `nameIndex` into `scratch` and returns it: every record of the block with its stored name,
    /// if any. A table that stores none gives an empty block. Throws `FormatError` for an index
    /// past the names or an ill-formed block (bad offsets, a corrupt or oversized zstd frame,
    /// entries that do not fill it).
    public func demangledNames(inBlockOf nameIndex: UInt32, into scratch: inout DecompressionScratch) throws(FormatError) -> DemangledNameBlock {
        guard Int(nameIndex) < layout.nameCount else {
            throw FormatError(.invalidValue, "function name \(nameIndex) out of bounds (\(layout.nameCount) names)")
        }
        let block = Int(nameIndex) >> layout.demangledBlockShift
        let first = block << layout.demangledBlockShift
        let count = min(layout.demangledBlockSize, layout.nameCount - first)
        guard block < layout.demangledBlockCount else {
            return DemangledNameBlock(first: UInt32(first), count: count, base: nil, spans: nil)
        }
        let frame = try withBytes { bytes throws(FormatError) in try layout.demangledFrame(ByteReader(bytes), block: block) }
        guard !frame.isEmpty else { return DemangledNameBlock(first: UInt32(first), count: count, base: nil, spans: nil) }
        var offset = 0
        if let start = frame.baseAddress, let base = baseAddress { offset = start - base }
        try scratch.decode(frame, records: count, at: offset)
        return DemangledNameBlock(first: UInt32(first), count: count, base: UnsafeRawPointer(scratch.buffer),
                                  spans: UnsafePointer(scratch.spans))
    }
}
