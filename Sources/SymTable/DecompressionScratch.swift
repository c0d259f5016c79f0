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

    /// The size `frame` declares for its content, checked: exactly one zstd frame, declaring a
    /// size of at most `TableFormat.maximumDemangledBlockSize`.
    static func contentSize(_ frame: UnsafeRawBufferPointer, at offset: Int) throws(FormatError) -> Int {
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
        return Int(declared)
    }

    /// Decompresses `frame` (checked by `contentSize`, which gave `size`) and parses `records`
    /// entries from it: per record its length as a little-endian `UInt32` and the bytes, or
    /// `TableFormat.noStoredName` alone for none; the entries must fill the frame. The bytes go to
    /// `target` (at least `size` bytes, kept by the caller) or, when it is nil, to this scratch's
    /// buffer. Returns where they went.
    mutating func decode(_ frame: UnsafeRawBufferPointer, size: Int, records: Int, at offset: Int,
                         into target: UnsafeMutableRawPointer?) throws(FormatError) -> UnsafeMutableRawPointer {
        let where_ = UInt64(offset)
        let target = target ?? buffer(size)
        if context == nil {
            guard let made = ZSTD_createDCtx() else { fatalError("out of memory (zstd context)") }
            context = made
        }
        let produced = ZSTD_decompressDCtx(context, target, size, frame.baseAddress, frame.count)
        guard ZSTD_isError(produced) == 0, produced == size else {
            let reason = ZSTD_isError(produced) != 0 ? String(cString: ZSTD_getErrorName(produced)) : "\(produced) bytes"
            throw FormatError(.decompression, "demangled names: zstd: \(reason) (declared \(size))", offset: where_)
        }
        if spanCapacity < records {
            spans?.deallocate()
            spans = .allocate(capacity: records)
            spanCapacity = records
        }
        var position = 0
        for record in 0..<records {
            guard size - position >= 4 else {
                throw FormatError(.truncated, "demangled names: block ends before record \(record) of \(records)", offset: where_)
            }
            let length = UInt32(littleEndian: (target + position).loadUnaligned(as: UInt32.self))
            position += 4
            if length == TableFormat.noStoredName {
                spans![record] = 0
                continue
            }
            guard Int(length) <= size - position else {
                throw FormatError(.truncated, "demangled names: record \(record) (\(length) bytes) runs past its block", offset: where_)
            }
            spans![record] = UInt64(position) << 32 | (UInt64(length) + 1)
            position += Int(length)
        }
        guard position == size else {
            throw FormatError(.invalidValue, "demangled names: \(size - position) bytes after the block's last record", offset: where_)
        }
        return target
    }

    /// This scratch's buffer, grown to at least `size` bytes.
    private mutating func buffer(_ size: Int) -> UnsafeMutableRawPointer {
        if capacity < max(size, 1) {
            free(buffer)
            capacity = max(size, 1, 2 * capacity)
            guard let memory = malloc(capacity) else { fatalError("out of memory") }
            buffer = memory
        }
        return buffer!
    }
}

/// The stored demangled names of one block of function-name records (see
/// `SymbolTable.demangledNames(inBlockOf:into:storage:)`); its bytes live in the scratch it was
/// read into and are valid until that scratch is used again, or in the caller's storage.
///
/// Each name's bytes directly follow their length, a little-endian `UInt32` (the block's own
/// layout): a caller keeping a length-prefixed copy can use the block's bytes in place.
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
    ///
    /// With `target` (at least `storedNamesByteCount(inBlockOf:)` bytes), the block is
    /// decompressed there instead of into the scratch, and its names stay valid as long as the
    /// caller keeps that memory.
    public func demangledNames(inBlockOf nameIndex: UInt32, into scratch: inout DecompressionScratch,
                               target: UnsafeMutableRawPointer? = nil) throws(FormatError) -> DemangledNameBlock {
        let (block, first, count) = try demangledBlock(of: nameIndex)
        guard block < layout.demangledBlockCount else {
            return DemangledNameBlock(first: UInt32(first), count: count, base: nil, spans: nil)
        }
        let frame = try withBytes { bytes throws(FormatError) in try layout.demangledFrame(ByteReader(bytes), block: block) }
        guard !frame.isEmpty else { return DemangledNameBlock(first: UInt32(first), count: count, base: nil, spans: nil) }
        let offset = offsetInTable(frame)
        let size = try DecompressionScratch.contentSize(frame, at: offset)
        let base = try scratch.decode(frame, size: size, records: count, at: offset, into: target)
        return DemangledNameBlock(first: UInt32(first), count: count, base: UnsafeRawPointer(base),
                                  spans: UnsafePointer(scratch.spans))
    }

    /// Bytes the block of stored demangled names holding function-name record `nameIndex`
    /// decompresses to (0 when it stores none): the room `demangledNames(inBlockOf:into:target:)`
    /// needs at `target`. Throws as that does for a bad index, offsets or frame header.
    public func storedNamesByteCount(inBlockOf nameIndex: UInt32) throws(FormatError) -> Int {
        let (block, _, _) = try demangledBlock(of: nameIndex)
        guard block < layout.demangledBlockCount else { return 0 }
        let frame = try withBytes { bytes throws(FormatError) in try layout.demangledFrame(ByteReader(bytes), block: block) }
        guard !frame.isEmpty else { return 0 }
        return try DecompressionScratch.contentSize(frame, at: offsetInTable(frame))
    }

    /// The block holding function-name record `nameIndex`, its first record and its record count.
    private func demangledBlock(of nameIndex: UInt32) throws(FormatError) -> (block: Int, first: Int, count: Int) {
        guard Int(nameIndex) < layout.nameCount else {
            throw FormatError(.invalidValue, "function name \(nameIndex) out of bounds (\(layout.nameCount) names)")
        }
        let block = Int(nameIndex) >> layout.demangledBlockShift
        let first = block << layout.demangledBlockShift
        return (block, first, min(layout.demangledBlockSize, layout.nameCount - first))
    }

    /// Where `bytes` of this table start in it (for error messages).
    private func offsetInTable(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard let start = bytes.baseAddress, let base = baseAddress else { return 0 }
        return start - base
    }
}
