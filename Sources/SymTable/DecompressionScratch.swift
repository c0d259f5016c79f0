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
    private var buffer: UnsafeMutableRawPointer?
    private var capacity = 0
    /// Per record of the last block: 0 (no stored name), or `offset << 32 | (length + 1)` in `buffer`.
    private var spans: UnsafeMutablePointer<UInt64>?
    private var spanCapacity = 0

    /// Empty scratch; memory is allocated on first use.
    public init() {}

    deinit {
        if let context { ZSTD_freeDCtx(context) }
        free(buffer)
        spans?.deallocate()
    }

    /// Decompresses `block` (see `SymbolTable.compressedDemangledNames(inBlockOf:)`) and parses
    /// its entries: per record its length as a little-endian `UInt32` and the bytes, or
    /// `TableFormat.noStoredName` alone for none; the entries must fill the frame. The bytes go to
    /// `target` (at least `block.byteCount` bytes, kept by the caller) or, when it is nil, to this
    /// scratch's buffer. The names returned point there.
    public mutating func decode(_ block: CompressedNameBlock,
                                into target: UnsafeMutableRawPointer? = nil) throws(FormatError) -> DemangledNameBlock {
        guard !block.frame.isEmpty else {
            return DemangledNameBlock(first: block.first, count: block.count, base: nil, spans: nil)
        }
        let base = try decode(block.frame, size: block.byteCount, records: block.count, at: block.offset, into: target)
        return DemangledNameBlock(first: block.first, count: block.count, base: UnsafeRawPointer(base),
                                  spans: UnsafePointer(spans))
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
    /// entries from it into `spans`. Returns where the bytes went.
    private mutating func decode(_ frame: UnsafeRawBufferPointer, size: Int, records: Int, at offset: Int,
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
/// `DecompressionScratch.decode(_:into:)`); its bytes live in the scratch it was
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
