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
/// decompressed, its largest unit 84 KB. Bytes read outside the window are zeros (fresh or given
/// back anonymous pages), never out of bounds, so a reader that strays gets wrong values it must
/// be ready for anyway (it reads untrusted input), not a crash.
///
/// `startReadingAhead(lead:)` moves the decompression to a thread of its own, which keeps up to
/// `lead` bytes ready past the release mark: the reader's thread then only waits when it catches
/// up, and a second pass over the section costs little more wall time than the first.
// The audited `@unchecked Sendable` wrapper of the zlib and zstd stream handles (STYLE.md rule 11):
// the decompressor and `decoded` belong to one thread at a time (the reader's, or the read-ahead
// thread's between `startReadingAhead` and `stopReadingAhead`); what both threads see
// (`published`, `releaseMark`, the read-ahead state, a failure) is read and written under `lock`,
// which also orders the region's bytes below `published` before the reader's reads of them.
public final class SectionStream: @unchecked Sendable {
    /// The section's decompressed bytes at their offsets; resident only inside the window.
    public let bytes: UnsafeRawBufferPointer

    private let region: UnsafeMutableRawPointer
    private let regionSize: Int
    private let payload: UnsafeRawBufferPointer
    /// Keeps `payload` valid; whether its pages may be given back once read.
    private let payloadOwner: ByteStorage
    private let sectionName: String
    private let payloadOffset: UInt64
    private let zlib: UnsafeMutablePointer<z_stream>?
    private let zstd: OpaquePointer?

    // Owned by the thread decompressing.

    /// Bytes decompressed.
    private var decoded = 0
    /// Compressed bytes consumed so far.
    private var consumed = 0
    /// Whether the compressed stream has ended.
    private var ended = false

    // Owned by the reader's thread.

    /// Offset below which the pages have been given back (a page boundary).
    private var released = 0
    private var readAheadThread: pthread_t?

    // Guarded by `lock`.

    private let lock: UnsafeMutablePointer<pthread_mutex_t>
    /// Signalled when `published`, `releaseMark`, `wanted` or the read-ahead state change.
    private let changed: UnsafeMutablePointer<pthread_cond_t>
    /// Bytes the reader may read.
    private var published = 0
    /// The reader's last `release(below:)`: the read-ahead thread stays within `lead` of it.
    private var releaseMark = 0
    /// The offset the reader waits for: the read-ahead thread goes past its lead to reach it (a
    /// unit longer than the lead).
    private var wanted = 0
    /// Whether the read-ahead thread decompresses (and the reader waits for it).
    private var readingAhead = false
    /// Asks the read-ahead thread to stop.
    private var stopRequested = false
    /// Bytes the read-ahead thread keeps ready past `releaseMark`.
    private var lead = 0
    /// What stopped the read-ahead thread, for the reader to throw.
    private var failure: FormatError?
    /// Which thread waits on `changed`: the other wakes it only then, and only when it can go
    /// on (a reader releasing every unit would otherwise wake the read-ahead thread thousands of
    /// times for nothing).
    private var readerWaits = false
    private var readAheadWaits = false

    /// Fewest bytes given back at a time (see `release(below:)`).
    static let releaseBatch = 256 << 10
    /// Smallest step of decompression: fewer, larger calls into the decompressor.
    static let step = 128 << 10

    /// Prepares to decompress `payload` (`declaredSize` bytes once decompressed; checked by
    /// `ELFFile.compressedPayload`) with zstd, or else zlib.
    init(payload: UnsafeRawBufferPointer, owner: ByteStorage, isZstd: Bool, declaredSize: Int,
         payloadOffset: UInt64, sectionName: String) throws(FormatError) {
        // One byte more than the section: `finish` offers the decompressor that much room to see
        // whether the stream ends at the declared size.
        regionSize = (declaredSize + 1 + Pages.size - 1) / Pages.size * Pages.size
        // Reserved, not committed: pages cost memory only once written.
        let mapping = mmap(nil, regionSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
        guard let mapping, mapping != MAP_FAILED else {
            throw FormatError(.limitExceeded, "cannot reserve \(declaredSize) bytes for section \(sectionName)")
        }
        region = mapping
        bytes = UnsafeRawBufferPointer(start: mapping, count: declaredSize)
        self.payload = payload
        payloadOwner = owner
        self.sectionName = sectionName
        self.payloadOffset = payloadOffset
        if !isZstd {
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
        lock = .allocate(capacity: 1)
        pthread_mutex_init(lock, nil)
        changed = .allocate(capacity: 1)
        pthread_cond_init(changed, nil)
    }

    deinit {
        stopReadingAhead()
        if let zlib {
            inflateEnd(zlib)
            zlib.deinitialize(count: 1)
            zlib.deallocate()
        }
        if let zstd { ZSTD_freeDStream(zstd) }
        munmap(region, regionSize)
        pthread_cond_destroy(changed)
        changed.deallocate()
        pthread_mutex_destroy(lock)
        lock.deallocate()
    }

    /// How many leading bytes have been decompressed (and may be read) since the last rewind.
    var filled: Int {
        withLock { published }
    }

    /// Makes at least the bytes up to `offset` (clamped to the section's size) readable:
    /// decompresses them, or waits for the read-ahead thread to. Throws when the compressed data
    /// is corrupt, ends early, or goes on past the declared size.
    public func fill(upTo offset: Int) throws(FormatError) {
        let target = min(max(offset, 0), bytes.count)
        let outcome: Result<Bool, FormatError> = withLock {
            if readingAhead && published < target {
                wanted = max(wanted, target)
                if readAheadWaits { pthread_cond_broadcast(changed) }
                readerWaits = true
                while readingAhead && published < target { pthread_cond_wait(changed, lock) }
                readerWaits = false
            }
            if published >= target { return .success(true) }
            // The read-ahead thread stopped short: on a failure, or when asked to (the reader
            // decompresses the rest itself then).
            if let failure { return .failure(failure) }
            return .success(false)
        }
        guard try outcome.get() == false else { return }
        // Decompress in steps of at least `step` bytes, up to the end of the section.
        try decompress(upTo: min(bytes.count, max(target, decoded + Self.step)))
        withLock { published = decoded }
    }

    /// Gives back the pages wholly below `offset` (once there are `releaseBatch` bytes of them,
    /// or `offset` is the end); reading them again yields zeros until the stream is rewound and
    /// filled again.
    public func release(below offset: Int) {
        let readable = withLock {
            releaseMark = max(releaseMark, offset)
            if readAheadWaits && published - releaseMark < lead { pthread_cond_broadcast(changed) }
            return published
        }
        let end = min(max(offset, 0), readable) / Pages.size * Pages.size
        // In batches: each call interrupts the other core to flush its TLB (the read-ahead thread
        // runs in this address space), and a reader releasing every unit made thousands of calls.
        guard end - released >= Self.releaseBatch || (end > released && offset >= bytes.count) else { return }
        Pages.advise(MADV_DONTNEED, whollyInside: region + released, count: end - released)
        released = end
    }

    /// Gives back every page and starts again from the first compressed byte.
    public func rewind() throws(FormatError) {
        stopReadingAhead()
        Pages.advise(MADV_DONTNEED, whollyInside: region, count: regionSize)
        decoded = 0
        released = 0
        consumed = 0
        ended = false
        withLock {
            published = 0
            releaseMark = 0
            wanted = 0
            failure = nil
        }
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

    /// Starts again from the first compressed byte, decompressing on a thread of its own up to
    /// `lead` bytes ahead of the reader (see `startReadingAhead`).
    public func restart(lead: Int) throws(FormatError) {
        try rewind()
        startReadingAhead(lead: lead)
    }

    /// Starts again and decompresses the whole section on a thread of its own, giving nothing
    /// back (a reader that turns out to need it all).
    public func restartWhole() throws(FormatError) {
        try restart(lead: bytes.count)
    }

    /// Starts a thread that decompresses ahead of the reader, keeping up to `lead` bytes ready past
    /// the last `release(below:)` (and whatever `fill` waits for). Returns whether it started;
    /// if not, `fill` decompresses on the reader's thread as before.
    @discardableResult
    public func startReadingAhead(lead: Int) -> Bool {
        guard readAheadThread == nil else { return true }
        let startable = withLock {
            guard published < bytes.count && failure == nil else { return false }
            self.lead = max(0, lead)
            readingAhead = true
            stopRequested = false
            return true
        }
        guard startable else { return false }
        var thread = pthread_t()
        // Unretained: the thread is joined before the stream can go (`stopReadingAhead`, `deinit`).
        let context = Unmanaged.passUnretained(self).toOpaque()
        let status = pthread_create(&thread, nil, { context in
            guard let context else { return nil }
            Unmanaged<SectionStream>.fromOpaque(context).takeUnretainedValue().readAhead()
            return nil
        }, context)
        guard status == 0 else {
            withLock { readingAhead = false }
            return false
        }
        readAheadThread = thread
        return true
    }

    /// Stops the read-ahead thread, if any, and waits for it; the reader decompresses from then on.
    public func stopReadingAhead() {
        guard let thread = readAheadThread else { return }
        withLock {
            stopRequested = true
            pthread_cond_broadcast(changed)
        }
        pthread_join(thread, nil)
        readAheadThread = nil
    }

    /// The read-ahead thread: decompresses a step at a time while it is within `lead` of the
    /// reader's release mark or short of what the reader waits for, until the end, a failure or
    /// a stop request.
    private func readAhead() {
        while true {
            let go = withLock {
                readAheadWaits = true
                while !stopRequested && decoded - releaseMark >= lead && decoded >= wanted {
                    pthread_cond_wait(changed, lock)
                }
                readAheadWaits = false
                if stopRequested || decoded >= bytes.count {
                    readingAhead = false
                    if readerWaits { pthread_cond_broadcast(changed) }
                    return false
                }
                return true
            }
            guard go else { return }
            do {
                try decompress(upTo: min(bytes.count, decoded + Self.step))
                withLock {
                    published = decoded
                    if readerWaits { pthread_cond_broadcast(changed) }
                }
            } catch {
                withLock {
                    failure = error
                    readingAhead = false
                    if readerWaits { pthread_cond_broadcast(changed) }
                }
                return
            }
        }
    }

    /// Decompresses up to `end` (checking, at the declared size, that the stream ends there) and
    /// gives back the compressed pages read.
    private func decompress(upTo end: Int) throws(FormatError) {
        while decoded < end {
            try decompress(into: end)
        }
        if decoded == bytes.count {
            try finish()
        }
        releaseConsumedInput()
    }

    /// Runs `body` holding `lock`.
    private func withLock<Result>(_ body: () -> Result) -> Result {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return body()
    }

    /// One call into the decompressor, writing at most up to `end`.
    private func decompress(into end: Int) throws(FormatError) {
        guard !ended else {
            throw FormatError(.decompression, "section \(sectionName) decompressed to \(decoded) bytes, declared \(bytes.count)",
                              offset: payloadOffset)
        }
        let output = region + decoded
        let input = payload.baseAddress! + consumed
        let available = payload.count - consumed
        if let zlib {
            // zlib counts in 32-bit words: feed and take at most 1 GiB a call.
            let inputChunk = min(available, 1 << 30)
            let outputChunk = min(end - decoded, 1 << 30)
            zlib.pointee.next_in = UnsafeMutablePointer(mutating: input.assumingMemoryBound(to: Bytef.self))
            zlib.pointee.avail_in = uInt(inputChunk)
            zlib.pointee.next_out = output.assumingMemoryBound(to: Bytef.self)
            zlib.pointee.avail_out = uInt(outputChunk)
            let status = inflate(zlib, Z_NO_FLUSH)
            consumed += inputChunk - Int(zlib.pointee.avail_in)
            decoded += outputChunk - Int(zlib.pointee.avail_out)
            switch status {
            case Z_STREAM_END:
                ended = true
            case Z_OK:
                break
            case Z_BUF_ERROR:
                // No progress possible with output room left: the compressed data ran out.
                throw FormatError(.decompression, "section \(sectionName) inflated to \(decoded) bytes, declared \(bytes.count)",
                                  offset: payloadOffset)
            default:
                throw FormatError(.decompression, "zlib error \(status) in section \(sectionName)", offset: payloadOffset)
            }
        } else if let zstd {
            var inBuffer = ZSTD_inBuffer(src: input, size: available, pos: 0)
            var outBuffer = ZSTD_outBuffer(dst: output, size: end - decoded, pos: 0)
            let status = ZSTD_decompressStream(zstd, &outBuffer, &inBuffer)
            consumed += inBuffer.pos
            decoded += outBuffer.pos
            if ZSTD_isError(status) != 0 {
                let reason = String(cString: ZSTD_getErrorName(status))
                throw FormatError(.decompression, "zstd error in section \(sectionName): \(reason)", offset: payloadOffset)
            }
            // 0: a frame is complete; the section is one frame or more, and ends with the input.
            if status == 0 && consumed == payload.count {
                ended = true
            } else if inBuffer.pos == 0 && outBuffer.pos == 0 {
                throw FormatError(.decompression, "section \(sectionName) decompressed to \(decoded) bytes, declared \(bytes.count)",
                                  offset: payloadOffset)
            }
        }
    }

    /// At the declared size: the stream must end there. Offered one byte more of room (the
    /// region has it), the decompressor must end without writing it.
    private func finish() throws(FormatError) {
        guard !ended else { return }
        try decompress(into: bytes.count + 1)
        guard ended && decoded == bytes.count else {
            throw FormatError(.decompression, "section \(sectionName) does not end at its declared \(bytes.count) bytes",
                              offset: payloadOffset)
        }
    }

    /// Gives back the compressed bytes' file pages behind the decompressor (file mappings only).
    ///
    /// The whole prefix each time, not from where the last call stopped: reading a page maps its
    /// neighbours too (fault-around, 64 KB-aligned), those behind the reader included (libc: 0.5 MB
    /// more at the peak with a watermark).
    private func releaseConsumedInput() {
        guard case .mapped = payloadOwner, let base = payload.baseAddress else { return }
        FileMappedPages.release(of: base, count: payload.count, 0..<consumed)
    }
}
