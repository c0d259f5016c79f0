#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CZstd
import SymBytes
import Synchronization

/// Gives the writer the form of a function name to store beside it (in `crashsym`, the demangled
/// form of a Swift name, which only the Swift runtime can produce and which is slow to produce at
/// lookup). Called from several threads at once.
public protocol StoredNameProvider: Sendable {
    /// Calls `body` once with the bytes to store for the function name `name` (its bytes as in the
    /// model), or does not call it when the name gets no stored form. The bytes passed to `body`
    /// need only be valid while it runs.
    func withStoredForm(of name: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void)
}

/// Builds the demangled-names section: the stored forms of the function-name records in blocks of
/// `2^TableFormat.demangledBlockShift` records, each block one zstd frame (see
/// `docs/csym-format.md`). Blocks are made and compressed one at a time, on `threads` threads,
/// so the stored forms are never all in memory: only the compressed blocks are kept.
struct DemangledNameEncoder<Provider: StoredNameProvider> {
    /// zstd level 5 with literals left uncompressed (`ZSTD_c_literalCompressionMode`, zstd's
    /// `ZSTD_c_experimentalParam5`, set to `ZSTD_ps_disable`): lookup decompresses these blocks
    /// while it answers, and Huffman-coded literals were a third of that time. On swift-format's
    /// 9.3 MB of demangled names (blocks of 64): level 3 with literals coded 1.20 MB and 6.6 ms to
    /// decompress all, level 5 without 1.23 MB and 3.5-5 ms; compressing takes about 25 ms more
    /// CPU at dump. See `docs/csym-format.md`.
    static var compressionLevel: Int32 { 5 }
    /// `ZSTD_ps_disable`: never compress literals.
    static var literalCompressionMode: Int32 { 2 }
    /// Blocks per unit of work handed to a thread.
    static var blocksPerUnit: Int { 16 }

    /// Per function-name record, the index of its string in `arena`, or `UInt32.max` for none.
    let nameStrings: [UInt32]
    let arena: StringArena
    let provider: Provider

    /// The section: `(blockCount + 1)` offsets, then the blocks; one zero offset (no blocks) when
    /// no record has a stored form.
    func encode(threads: Int) throws(FormatError) -> Section {
        let blockSize = 1 << Int(TableFormat.demangledBlockShift)
        let blockCount = (nameStrings.count + blockSize - 1) / blockSize
        let shared = Shared(encoder: self, blockCount: blockCount)
        let workers = (0..<max(1, min(threads, (blockCount + Self.blocksPerUnit - 1) / Self.blocksPerUnit))).map { _ in
            Worker(shared)
        }
        ConcurrentWork.run(workers.map { worker in { worker.run() } })
        var pieces: [(worker: Int, piece: Piece)] = []
        for (index, worker) in workers.enumerated() {
            if let error = worker.error { throw error }
            pieces += worker.pieces.map { (index, $0) }
        }
        pieces.sort { $0.piece.unit < $1.piece.unit }
        let dataSize = workers.reduce(0) { $0 + $1.bytes.count }
        guard dataSize > 0 else { return Section(offsets: [0], buffers: [], runs: []) }
        guard dataSize <= Int(UInt32.max) else {
            throw FormatError(.limitExceeded, "stored demangled names over 4 GiB compressed")
        }
        var offsets: [UInt32] = [0]
        offsets.reserveCapacity(blockCount + 1)
        for (worker, piece) in pieces {
            for size in workers[worker].blockSizes[piece.blocks] { offsets.append(offsets[offsets.count - 1] + size) }
        }
        precondition(offsets.count == blockCount + 1, "a block of demangled names went missing")
        return Section(offsets: offsets, buffers: workers.map(\.bytes),
                       runs: pieces.map { (worker, piece) in (worker, piece.bytes) })
    }

    /// The encoded section, kept as the workers made it (no copy into one array: the caller writes
    /// it straight into the table, then it is freed; each worker's blocks are in one buffer, big
    /// enough to be mapped, so freeing it gives the memory back to the system).
    struct Section {
        /// The block offsets, relative to the end of the offsets.
        var offsets: [UInt32]
        /// Each worker's compressed blocks.
        var buffers: [[UInt8]]
        /// Where the runs of blocks are in `buffers`, in block order.
        var runs: [(buffer: Int, bytes: Range<Int>)]

        /// Size of the section in the table.
        var byteCount: Int { offsets.count * 4 + buffers.reduce(0) { $0 + $1.count } }

        /// Hands `body` the section's bytes in order, then frees them.
        mutating func drain(_ body: (UnsafeRawBufferPointer) -> Void) {
            offsets.withUnsafeBufferPointer { offsets in
                for offset in offsets { withUnsafeBytes(of: offset.littleEndian) { body($0) } }
            }
            for run in runs {
                buffers[run.buffer].withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[run.bytes])) }
            }
            self = Section(offsets: [], buffers: [], runs: [])
        }
    }

    /// A unit of work done: where its blocks are in its worker's buffers.
    struct Piece {
        var unit: Int
        /// Its compressed blocks in the worker's `bytes`.
        var bytes: Range<Int>
        /// Its blocks' sizes in the worker's `blockSizes`.
        var blocks: Range<Int>
    }

    /// What the workers share: the input (only read) and the next unit to take.
    final class Shared {
        let encoder: DemangledNameEncoder
        let blockCount: Int
        let nextUnit = Atomic<Int>(0)

        init(encoder: DemangledNameEncoder, blockCount: Int) {
            self.encoder = encoder
            self.blockCount = blockCount
        }
    }

    /// One thread's share: takes units until none are left. Touched by its own thread only until
    /// it is joined.
    final class Worker {
        let shared: Shared
        var pieces: [Piece] = []
        /// The compressed blocks of all its pieces, back to back.
        var bytes: [UInt8] = []
        /// The compressed size of each block of its pieces (0: nothing stored in the block).
        var blockSizes: [UInt32] = []
        var error: FormatError?

        init(_ shared: Shared) { self.shared = shared }

        func run() {
            guard let context = ZSTD_createCCtx() else {
                error = FormatError(.limitExceeded, "out of memory for a zstd context")
                return
            }
            defer { ZSTD_freeCCtx(context) }
            // A checksum per frame (4 bytes) so that a corrupt block is an error, not wrong names.
            ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, DemangledNameEncoder.compressionLevel)
            ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 1)
            // An older libzstd without the parameter compresses literals: the frames stay valid.
            ZSTD_CCtx_setParameter(context, ZSTD_c_experimentalParam5, DemangledNameEncoder.literalCompressionMode)
            let encoder = shared.encoder
            let blockSize = 1 << Int(TableFormat.demangledBlockShift)
            var content: [UInt8] = []
            var compressed: [UInt8] = []
            // Room for the worst case seen (swift-format: 20 compressed bytes a name) is reserved
            // once, so the buffer is not copied as it grows; pages never written cost nothing.
            bytes.reserveCapacity(encoder.nameStrings.count * 32)
            while true {
                let unit = shared.nextUnit.wrappingAdd(1, ordering: .relaxed).oldValue
                let firstBlock = unit * DemangledNameEncoder.blocksPerUnit
                guard firstBlock < shared.blockCount else { return }
                let startBytes = bytes.count, startBlocks = blockSizes.count
                for block in firstBlock..<min(shared.blockCount, firstBlock + DemangledNameEncoder.blocksPerUnit) {
                    let records = (block * blockSize)..<min(encoder.nameStrings.count, (block + 1) * blockSize)
                    content.removeAll(keepingCapacity: true)
                    guard encoder.fill(&content, records: records) else {
                        blockSizes.append(0)
                        continue
                    }
                    let bound = ZSTD_compressBound(content.count)
                    if compressed.count < bound { compressed = [UInt8](repeating: 0, count: bound) }
                    let produced = compressed.withUnsafeMutableBytes { target in
                        content.withUnsafeBytes { source in
                            ZSTD_compress2(context, target.baseAddress, bound, source.baseAddress, source.count)
                        }
                    }
                    if ZSTD_isError(produced) != 0 {
                        error = FormatError(.limitExceeded, "zstd: \(String(cString: ZSTD_getErrorName(produced)))")
                        return
                    }
                    bytes += compressed[..<produced]
                    blockSizes.append(UInt32(produced))
                }
                pieces.append(Piece(unit: unit, bytes: startBytes..<bytes.count, blocks: startBlocks..<blockSizes.count))
            }
        }
    }

    /// Appends the entries of `records` to `content`: the stored form's length as a `UInt32`
    /// (little-endian) and its bytes, or `TableFormat.noStoredName` for none. Returns whether any
    /// record has a stored form.
    func fill(_ content: inout [UInt8], records: Range<Int>) -> Bool {
        var stored = false
        for record in records {
            let string = nameStrings[record]
            var written = false
            if string != UInt32.max {
                arena.withBytes(of: Int(string)) { name in
                    provider.withStoredForm(of: name) { form in
                        guard !written, form.count <= TableFormat.maximumStoredNameLength else { return }
                        withUnsafeBytes(of: UInt32(form.count).littleEndian) { content.append(contentsOf: $0) }
                        content.append(contentsOf: form)
                        written = true
                    }
                }
            }
            if written {
                stored = true
            } else {
                withUnsafeBytes(of: TableFormat.noStoredName.littleEndian) { content.append(contentsOf: $0) }
            }
        }
        return stored
    }
}
