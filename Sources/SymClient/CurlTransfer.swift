import CCurl
#if canImport(Glibc)
import Glibc
#endif

/// One HTTP request to make: a POST of bytes in memory or of a file streamed from disk.
struct HTTPRequest {
    /// Where the body comes from.
    enum Body {
        /// A small body (JSON).
        case bytes([UInt8])
        /// A file read in chunks by libcurl's read callback: memory stays constant whatever its size.
        case file(path: String)
    }

    var url: String
    var body: Body
    var contentType: String
    var headers: [String]
}

/// What came back from one attempt.
struct HTTPResponse {
    var status: Int
    /// The body, cut at `CurlTransfer.responseLimit` bytes.
    var body: [UInt8]
    /// The server's `Retry-After`, when it gave a positive one.
    var retryAfter: Duration?
}

/// How one attempt failed before an HTTP answer arrived.
struct TransferFailure: Error {
    var code: ClientError.Code
    var message: String
    /// Whether another attempt may succeed (connection refused, reset, stalled).
    var retryable: Bool
}

/// A libcurl easy handle. Not thread-safe, like the handle itself: each `SymbolClient` owns one and is
/// used from one thread at a time.
final class CurlTransfer {
    /// Answers longer than this are cut (our API's answers are small; a hostile server gets no more).
    static let responseLimit = 1 << 20
    /// libcurl's upload buffer: larger than the 64 KiB default for loopback and LAN throughput.
    static let uploadBufferSize = 1 << 20

    private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    private let handle: UnsafeMutableRawPointer
    private let errorBuffer: UnsafeMutablePointer<CChar>

    init() throws(ClientError) {
        guard Self.globalInit, let handle = curl_easy_init() else {
            let reason = crashsym_curl_load_error().map { String(cString: $0) } ?? "curl_global_init failed"
            throw ClientError(.configuration, "libcurl could not be initialised: \(reason)")
        }
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    /// Performs one attempt of `request`, giving up at `timeout` overall.
    func perform(_ request: HTTPRequest, userAgent: String, timeout: Duration, connectTimeout: Duration,
                 stallTimeout: Duration, progress: ((UInt64, UInt64) -> Void)?) -> Result<HTTPResponse, TransferFailure> {
        let context: TransferContext
        switch request.body {
        case .bytes(let bytes):
            context = TransferContext(bytes: bytes)
        case .file(let path):
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                return .failure(TransferFailure(code: .io, message: "\(path): cannot open: \(String(cString: strerror(errno)))", retryable: false))
            }
            var status = stat()
            guard fstat(descriptor, &status) == 0 else {
                close(descriptor)
                return .failure(TransferFailure(code: .io, message: "\(path): cannot stat", retryable: false))
            }
            context = TransferContext(descriptor: descriptor, size: UInt64(status.st_size), path: path)
        }
        context.progress = progress
        defer { context.close() }

        var headerList: UnsafeMutablePointer<curl_slist>?
        // An empty `Expect:` stops libcurl from sending `Expect: 100-continue` with bodies over
        // 1 MiB: a server or proxy that does not answer `100 Continue` would make each upload wait
        // libcurl's one-second timeout first. crashsym serve answers it at once, before it checks
        // the key, so asking would save nothing there. Auth and limits come with the final answer.
        for header in request.headers + ["Content-Type: \(request.contentType)", "Accept: application/json", "Expect:"] {
            headerList = curl_slist_append(headerList, header)
        }
        defer { curl_slist_free_all(headerList) }

        curl_easy_reset(handle)
        errorBuffer[0] = 0
        let opaque = Unmanaged.passUnretained(context).toOpaque()
        var ok = true
        func check(_ code: CURLcode) { if code != CURLE_OK { ok = false } }
        check(crashsym_curl_setopt_string(handle, CURLOPT_URL, request.url))
        check(crashsym_curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer))
        check(crashsym_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
        check(crashsym_curl_setopt_string(handle, CURLOPT_USERAGENT, userAgent))
        check(crashsym_curl_setopt_pointer(handle, CURLOPT_HTTPHEADER, headerList))
        check(crashsym_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
        // Never follow redirects: the key would go wherever the server points.
        check(crashsym_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))
        check(crashsym_curl_setopt_long(handle, CURLOPT_POST, 1))
        check(crashsym_curl_setopt_off_t(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(context.size)))
        check(crashsym_curl_setopt_long(handle, CURLOPT_UPLOAD_BUFFERSIZE, Self.uploadBufferSize))
        check(crashsym_curl_set_read_function(handle) { buffer, size, count, userdata in
            guard let buffer, let userdata else { return Int(CURL_READFUNC_ABORT) }
            let context = Unmanaged<TransferContext>.fromOpaque(userdata).takeUnretainedValue()
            return context.read(into: UnsafeMutableRawPointer(buffer), capacity: size * count)
        })
        check(crashsym_curl_setopt_pointer(handle, CURLOPT_READDATA, opaque))
        check(crashsym_curl_set_seek_function(handle) { userdata, offset, origin in
            guard let userdata else { return CURL_SEEKFUNC_FAIL }
            let context = Unmanaged<TransferContext>.fromOpaque(userdata).takeUnretainedValue()
            return context.seek(to: Int64(offset), origin: origin) ? CURL_SEEKFUNC_OK : CURL_SEEKFUNC_FAIL
        })
        check(crashsym_curl_setopt_pointer(handle, CURLOPT_SEEKDATA, opaque))
        check(crashsym_curl_set_write_function(handle) { buffer, size, count, userdata in
            guard let userdata else { return 0 }
            let context = Unmanaged<TransferContext>.fromOpaque(userdata).takeUnretainedValue()
            if let buffer { context.receive(UnsafeRawBufferPointer(start: buffer, count: size * count)) }
            return size * count
        })
        check(crashsym_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, opaque))
        if progress != nil {
            check(crashsym_curl_setopt_long(handle, CURLOPT_NOPROGRESS, 0))
            check(crashsym_curl_set_xferinfo_function(handle) { userdata, _, _, uploadTotal, uploadNow in
                guard let userdata else { return 0 }
                let context = Unmanaged<TransferContext>.fromOpaque(userdata).takeUnretainedValue()
                context.progress?(UInt64(max(0, uploadNow)), UInt64(max(0, uploadTotal)))
                return 0
            })
            check(crashsym_curl_setopt_pointer(handle, CURLOPT_XFERINFODATA, opaque))
        }
        check(crashsym_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, timeout.curlMilliseconds))
        check(crashsym_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, min(timeout, connectTimeout).curlMilliseconds))
        check(crashsym_curl_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, 1))
        check(crashsym_curl_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, max(1, Int(stallTimeout.components.seconds))))
        guard ok else {
            return .failure(TransferFailure(code: .configuration, message: "libcurl rejected an option", retryable: false))
        }

        let code = curl_easy_perform(handle)
        if let failure = context.readFailure {
            return .failure(TransferFailure(code: .io, message: failure, retryable: false))
        }
        guard code == CURLE_OK else {
            let detail = errorBuffer[0] != 0 ? String(cString: errorBuffer) : String(cString: curl_easy_strerror(code))
            return .failure(Self.failure(code, detail: detail))
        }
        var status = 0
        _ = crashsym_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        var retryAfter: curl_off_t = 0
        _ = crashsym_curl_getinfo_off_t(handle, CURLINFO_RETRY_AFTER, &retryAfter)
        return .success(HTTPResponse(status: status, body: context.response,
                                     retryAfter: retryAfter > 0 ? .seconds(Int64(retryAfter)) : nil))
    }

    /// Classifies a libcurl error: connection-level failures are worth another attempt.
    static func failure(_ code: CURLcode, detail: String) -> TransferFailure {
        switch code {
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_SEND_ERROR,
             CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            return TransferFailure(code: .connection, message: detail, retryable: true)
        case CURLE_OPERATION_TIMEDOUT:
            return TransferFailure(code: .connection, message: detail, retryable: true)
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            return TransferFailure(code: .configuration, message: detail, retryable: false)
        default:
            return TransferFailure(code: .transfer, message: detail, retryable: false)
        }
    }
}

/// State shared with libcurl's callbacks during one attempt: the body source and the answer.
final class TransferContext {
    let size: UInt64
    private var bytes: [UInt8]
    private var offset = 0
    private var descriptor: Int32
    private let path: String
    private(set) var response: [UInt8] = []
    private(set) var readFailure: String?
    var progress: ((UInt64, UInt64) -> Void)?

    init(bytes: [UInt8]) {
        self.bytes = bytes
        size = UInt64(bytes.count)
        descriptor = -1
        path = ""
    }

    init(descriptor: Int32, size: UInt64, path: String) {
        bytes = []
        self.size = size
        self.descriptor = descriptor
        self.path = path
    }

    func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }

    /// Fills libcurl's buffer: 0 at the end, `CURL_READFUNC_ABORT` on a read error.
    func read(into buffer: UnsafeMutableRawPointer, capacity: Int) -> Int {
        if descriptor < 0 {
            let count = min(capacity, bytes.count - offset)
            guard count > 0 else { return 0 }
            bytes.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress! + offset, byteCount: count) }
            offset += count
            return count
        }
        while true {
            let count = Glibc.read(descriptor, buffer, capacity)
            if count >= 0 { return count }
            if errno == EINTR { continue }
            readFailure = "\(path): cannot read: \(String(cString: strerror(errno)))"
            return Int(CURL_READFUNC_ABORT)
        }
    }

    /// Rewinds the body (libcurl asks when it must send it again on the same attempt).
    func seek(to position: Int64, origin: Int32) -> Bool {
        guard origin == SEEK_SET, position >= 0, UInt64(position) <= size else { return false }
        if descriptor < 0 {
            offset = Int(position)
            return true
        }
        return lseek(descriptor, off_t(position), SEEK_SET) == off_t(position)
    }

    /// Keeps the answer, up to `CurlTransfer.responseLimit` bytes.
    func receive(_ chunk: UnsafeRawBufferPointer) {
        let room = CurlTransfer.responseLimit - response.count
        guard room > 0 else { return }
        response.append(contentsOf: chunk.prefix(room))
    }
}
