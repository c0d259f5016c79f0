#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CLibz
import CZstd
import SymBytes

/// A compressed section decompressed in order, on demand, into a reserved region of its full
/// size, with the pages behind the reader given back.
///
/// The whole section stays addressable at its own offsets (`bytes`), so readers need not know it
/// is streamed; only the bytes between the release mark and the fill mark are resident. A reader
/// that walks the section in order (`fill(upTo:)` before reading, `release(below:)` after) keeps
/// a window of a unit or two instead of the whole section: libc's `.debug_info` is 5.8 MB
/// decompressed, its largest unit 0.2 MB. Bytes read outside the window are zeros (fresh or given
/// back anonymous pages), never out of bounds, so a reader that strays gets wrong values it must
/// be ready for anyway (it reads untrusted input), not a crash.
// The audited `@unchecked Sendable` wrapper of the zlib and zstd stream handles (STYLE.md rule 11):
// the stream is advanced by one thread at a time (the one walking the section; the DWARF reader
// never walks a streamed section on two threads), and `bytes` only points into the region.
public final class SectionStream: @unchecked Sendable {
    /// The section's decompressed bytes at their offsets; resident only inside the window.
    public let bytes: UnsafeRawBufferPointer
    /// How many leading bytes have been decompressed since the last rewind.
    public private(set) var filled = 0
    /// Offset below which the pages have been given back (a page boundary).
    private var released = 0

    private let region: UnsafeMutableRawPointer
    private let regionSize: Int
    private let payload: UnsafeRawBufferPointer
    /// Keeps `payload` valid; whether its pages may be given back once read.
    private let payloadOwner: ByteStorage
    private let algorithm: UInt32
    private let sectionName: String
    private let payloadOffset: UInt64
    private let zlib: UnsafeMutablePointer<z_stream>?
    private let zstd: OpaquePointer?
    /// Compressed bytes consumed so far.
    private var consumed = 0
    /// Whether the compressed stream has ended.
    private var ended = false

    /// Smallest step of decompression: fewer, larger calls into the decompressor.
    static let step = 256 << 10

    /// Prepares to decompress `payload` (`declaredSize` bytes once decompressed, already checked
    /// against the limits) with `algorithm`.
    init(payload: UnsafeRawBufferPointer, owner: ByteStorage, algorithm: UInt32, declaredSize: Int,
         payloadOffset: UInt64, sectionName: String) throws(FormatError) {
        guard algorithm == ELF.ELFCOMPRESS_ZLIB || algorithm == ELF.ELFCOMPRESS_ZSTD else {
            throw FormatError(.unsupported, "section \(sectionName) uses compression type \(algorithm)",
                              offset: payloadOffset)
        }
        guard payload.baseAddress != nil, payload.count > 0 else {
            throw FormatError(.decompression, "section \(sectionName) has no compressed data", offset: payloadOffset)
        }
        let pageSize = max(1, sysconf(Int32(_SC_PAGESIZE)))
        regionSize = max(pageSize, (declaredSize + pageSize - 1) / pageSize * pageSize)
        // Reserved, not committed: pages cost memory only once written.
        let mapping = mmap(nil, regionSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
        guard let mapping, mapping != MAP_FAILED else {
            throw FormatError(.limitExceeded, "cannot reserve \(declaredSize) bytes for section \(sectionName)")
        }
        region = mapping
        bytes = UnsafeRawBufferPointer(start: mapping, count: declaredSize)
        self.payload = payload
        payloadOwner = owner
        self.algorithm = algorithm
        self.sectionName = sectionName
        self.payloadOffset = payloadOffset
        if algorithm == ELF.ELFCOMPRESS_ZLIB {
            // zlib keeps a pointer to the stream in its state: the stream must not move.
            let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
            stream.initialize(to: z_stream())
            guard inflateInit_(stream, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
                stream.deallocate()
                munmap(mapping, regionSize)
                throw FormatError(.decompression, "zlib cannot start on section \(sectionName)", offset: payloadOffset)
            }
            zlib = stream
            zstd = nil
        } else {
            guard let context = ZSTD_createDStream() else {
                munmap(mapping, regionSize)
                throw FormatError(.decompression, "zstd cannot start on section \(sectionName)", offset: payloadOffset)
            }
            zlib = nil
            zstd = context
        }
    }

    deinit {
        if let zlib {
            inflateEnd(zlib)
            zlib.deinitialize(count: 1)
            zlib.deallocate()
        }
        if let zstd { ZSTD_freeDStream(zstd) }
        munmap(region, regionSize)
    }

    /// Decompresses at least up to `offset` (clamped to the section's size). Throws when the
    /// compressed data is corrupt, ends early, or goes on past the declared size.
    public func fill(upTo offset: Int) throws(FormatError) {
        let target = min(max(offset, 0), bytes.count)
        guard target > filled else { return }
        // Decompress in steps of at least `step` bytes, up to the end of the section.
        let end = min(bytes.count, max(target, filled + Self.step))
        while filled < end {
            try decompress(into: end)
        }
        if filled == bytes.count {
            try finish()
        }
        releaseConsumedInput()
    }

    /// Gives back the pages wholly below `offset`; reading them again yields zeros until the
    /// stream is rewound and filled again.
    public func release(below offset: Int) {
        let pageSize = max(1, sysconf(Int32(_SC_PAGESIZE)))
        let end = min(max(offset, 0), filled) / pageSize * pageSize
        guard end > released else { return }
        _ = madvise(region + released, end - released, MADV_DONTNEED)
        released = end
    }

    /// Gives back every page and starts again from the first compressed byte.
    public func rewind() throws(FormatError) {
        _ = madvise(region, regionSize, MADV_DONTNEED)
        filled = 0
        released = 0
        consumed = 0
        ended = false
        if let zlib {
            guard inflateReset(zlib) == Z_OK else {
                throw FormatError(.decompression, "zlib cannot restart on section \(sectionName)", offset: payloadOffset)
            }
        }
        if let zstd {
            let status = ZSTD_DCtx_reset(zstd, ZSTD_reset_session_only)
            guard ZSTD_isError(status) == 0 else {
                throw FormatError(.decompression, "zstd cannot restart on section \(sectionName)", offset: payloadOffset)
            }
        }
    }

    /// One call into the decompressor, writing at most up to `end`.
    private func decompress(into end: Int) throws(FormatError) {
        guard !ended else {
            throw FormatError(.decompression, "section \(sectionName) decompressed to \(filled) bytes, declared \(bytes.count)",
                              offset: payloadOffset)
        }
        let output = region + filled
        let input = payload.baseAddress! + consumed
        let available = payload.count - consumed
        if let zlib {
            // zlib counts in 32-bit words: feed and take at most 1 GiB a call.
            let inputChunk = min(available, 1 << 30)
            let outputChunk = min(end - filled, 1 << 30)
            zlib.pointee.next_in = UnsafeMutablePointer(mutating: input.assumingMemoryBound(to: Bytef.self))
            zlib.pointee.avail_in = uInt(inputChunk)
            zlib.pointee.next_out = output.assumingMemoryBound(to: Bytef.self)
            zlib.pointee.avail_out = uInt(outputChunk)
            let status = inflate(zlib, Z_NO_FLUSH)
            consumed += inputChunk - Int(zlib.pointee.avail_in)
            filled += outputChunk - Int(zlib.pointee.avail_out)
            switch status {
            case Z_STREAM_END:
                ended = true
            case Z_OK:
                break
            case Z_BUF_ERROR:
                // No progress possible with output room left: the compressed data ran out.
                throw FormatError(.decompression, "section \(sectionName) inflated to \(filled) bytes, declared \(bytes.count)",
                                  offset: payloadOffset)
            default:
                throw FormatError(.decompression, "zlib error \(status) in section \(sectionName)", offset: payloadOffset)
            }
        } else if let zstd {
            var inBuffer = ZSTD_inBuffer(src: input, size: available, pos: 0)
            var outBuffer = ZSTD_outBuffer(dst: output, size: end - filled, pos: 0)
            let status = ZSTD_decompressStream(zstd, &outBuffer, &inBuffer)
            consumed += inBuffer.pos
            filled += outBuffer.pos
            if ZSTD_isError(status) != 0 {
                let reason = String(cString: ZSTD_getErrorName(status))
                throw FormatError(.decompression, "zstd error in section \(sectionName): \(reason)", offset: payloadOffset)
            }
            // 0: a frame is complete; the section is one frame or more, and ends with the input.
            if status == 0 && consumed == payload.count {
                ended = true
            } else if inBuffer.pos == 0 && outBuffer.pos == 0 {
                throw FormatError(.decompression, "section \(sectionName) decompressed to \(filled) bytes, declared \(bytes.count)",
                                  offset: payloadOffset)
            }
        }
    }

    /// At the declared size: the stream must end there.
    private func finish() throws(FormatError) {
        guard !ended else { return }
        // Output space is full; one more call tells whether the stream ends or has more.
        if let zlib {
            var spare: UInt8 = 0
            let inputChunk = min(payload.count - consumed, 1 << 30)
            zlib.pointee.next_in = UnsafeMutablePointer(mutating: (payload.baseAddress! + consumed).assumingMemoryBound(to: Bytef.self))
            zlib.pointee.avail_in = uInt(inputChunk)
            let status = withUnsafeMutablePointer(to: &spare) { pointer in
                zlib.pointee.next_out = pointer
                zlib.pointee.avail_out = 1
                return inflate(zlib, Z_NO_FLUSH)
            }
            consumed += inputChunk - Int(zlib.pointee.avail_in)
            if status == Z_STREAM_END && zlib.pointee.avail_out == 1 {
                ended = true
                return
            }
        } else if let zstd {
            var spare: UInt8 = 0
            let status = withUnsafeMutablePointer(to: &spare) { pointer in
                var inBuffer = ZSTD_inBuffer(src: payload.baseAddress! + consumed, size: payload.count - consumed, pos: 0)
                var outBuffer = ZSTD_outBuffer(dst: pointer, size: 1, pos: 0)
                let status = ZSTD_decompressStream(zstd, &outBuffer, &inBuffer)
                consumed += inBuffer.pos
                return (status, outBuffer.pos)
            }
            if ZSTD_isError(status.0) == 0 && status.1 == 0 && status.0 == 0 && consumed == payload.count {
                ended = true
                return
            }
        }
        throw FormatError(.decompression, "section \(sectionName) does not end at its declared \(bytes.count) bytes",
                          offset: payloadOffset)
    }

    /// Gives back the compressed bytes' file pages behind the decompressor (file mappings only).
    private func releaseConsumedInput() {
        guard case .mapped = payloadOwner, let base = payload.baseAddress else { return }
        FileMappedPages.release(of: base, count: payload.count, 0..<consumed)
    }
}
