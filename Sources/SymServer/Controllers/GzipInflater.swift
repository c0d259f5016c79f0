import CLibz

/// Inflates a `Content-Encoding: gzip` request body as it arrives, refusing it as soon as the
/// inflated bytes pass `limit`: a gzip bomb costs the server one output buffer and the time to
/// inflate `limit` bytes, never the bytes it would expand to. Several gzip members in a row
/// (RFC 1952 §2.2) are read as one body. One per request, from one task.
final class GzipInflater {
    /// Why inflation stopped.
    enum Failure: Error, Equatable {
        /// The inflated bytes passed the limit.
        case tooLarge(limit: Int)
        /// Not gzip, or corrupt: zlib's message.
        case corrupt(String)
    }

    private let stream: UnsafeMutablePointer<z_stream>
    private let limit: Int
    private var output = [UInt8](repeating: 0, count: 64 << 10)
    /// Inflated bytes handed over so far.
    private(set) var produced = 0
    /// Whether the last member ended exactly at the end of the input seen (the body may end here).
    private(set) var atMemberEnd = false

    /// An inflater of at most `limit` bytes of output.
    init(limit: Int) throws(Failure) {
        self.limit = limit
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // 16 + 15: a gzip header and trailer around a deflate stream with a 32 KiB window.
        guard inflateInit2_(stream, 16 + MAX_WBITS, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw .corrupt("zlib cannot start")
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Inflates `input`, handing each piece of output to `sink`.
    func inflate(_ input: UnsafeRawBufferPointer, _ sink: (ArraySlice<UInt8>) throws -> Void) throws {
        guard let base = input.baseAddress, !input.isEmpty else { return }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(input.count)
        while stream.pointee.avail_in > 0 {
            atMemberEnd = false
            let room = output.count
            let status = output.withUnsafeMutableBytes { buffer -> Int32 in
                stream.pointee.next_out = buffer.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.pointee.avail_out = uInt(room)
                return CLibz.inflate(stream, Z_NO_FLUSH)
            }
            let count = room - Int(stream.pointee.avail_out)
            if count > 0 {
                produced += count
                guard produced <= limit else { throw Failure.tooLarge(limit: limit) }
                try sink(output[0..<count])
            }
            switch status {
            case Z_OK:
                continue
            case Z_BUF_ERROR where count > 0:
                continue
            case Z_STREAM_END:
                atMemberEnd = true
                // Another member may follow.
                guard inflateReset(stream) == Z_OK else { throw Failure.corrupt("zlib cannot restart") }
            case Z_BUF_ERROR:
                return  // all input used; more is needed
            default:
                let message = stream.pointee.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                throw Failure.corrupt(message)
            }
        }
    }
}
