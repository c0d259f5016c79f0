import CCurl
import SymBytes
#if canImport(Glibc)
import Glibc
#endif

/// One HTTP request to make: its method, URL, headers and, for a POST or PUT, a body of bytes in
/// memory or a file streamed from disk.
public struct HTTPRequest: Sendable {
    /// The HTTP method.
    public enum Method: String, Sendable {
        case get = "GET", head = "HEAD", post = "POST", put = "PUT", delete = "DELETE"
    }

    /// Where a body comes from.
    public enum Body: Sendable {
        /// A small body (JSON).
        case bytes([UInt8])
        /// A file read in chunks by libcurl's read callback: memory stays constant whatever its size.
        case file(path: String)
        /// `length` bytes of a file from `offset` (one part of a multipart upload), read as `file`.
        case fileRange(path: String, offset: UInt64, length: UInt64)
    }

    /// AWS Signature Version 4, computed by libcurl (`CURLOPT_AWS_SIGV4`) over the method, the
    /// URL (its query must already be in canonical order and encoding) and the headers.
    public struct AWSSignature: Sendable {
        /// `aws:amz:<region>:<service>`.
        public var provider: String
        public var accessKeyID: String
        public var secretAccessKey: String

        public init(region: String, service: String, accessKeyID: String, secretAccessKey: String) {
            provider = "aws:amz:\(region):\(service)"
            self.accessKeyID = accessKeyID
            self.secretAccessKey = secretAccessKey
        }
    }

    public var method: Method
    public var url: String
    public var body: Body?
    /// The body's `Content-Type`, when there is a body.
    public var contentType: String?
    /// Extra header lines (`Name: value`).
    public var headers: [String]
    /// Addresses to connect to instead of resolving the URL's host again, in libcurl's
    /// `CURLOPT_RESOLVE` form (`host:port:address[,address…]`, IPv6 addresses in brackets): a
    /// caller that checked where a name points connects exactly there.
    public var pinnedAddresses: [String] = []
    /// Signs the request for an S3-compatible store.
    public var signature: AWSSignature?
    /// Whether the answer's header lines are kept (`HTTPResponse.headers`).
    public var keepsHeaders = false

    /// A request; a POST or PUT without a body sends an empty one.
    public init(_ method: Method, url: String, body: Body? = nil, contentType: String? = nil, headers: [String] = []) {
        self.method = method
        self.url = url
        self.body = body
        self.contentType = contentType
        self.headers = headers
    }

    /// A POST of `body`.
    public init(url: String, body: Body, contentType: String, headers: [String]) {
        self.init(.post, url: url, body: body, contentType: contentType, headers: headers)
    }
}

/// Where an answer's body goes.
public enum ResponseSink {
    /// Kept in memory, cut at `limit` bytes (the answer's `truncated` says so).
    case memory(limit: Int)
    /// Written to an open file as it arrives; more than `limit` bytes aborts the transfer with
    /// `TransferFailure.Kind.tooLarge`.
    case file(descriptor: Int32, limit: UInt64)
}

/// What came back from one attempt.
public struct HTTPResponse: Sendable {
    public var status: Int
    /// The body, with a memory sink (cut at its limit).
    public var body: [UInt8]
    /// How many body bytes arrived (with a file sink: were written).
    public var bodySize: UInt64
    /// Whether a memory sink dropped bytes past its limit.
    public var truncated: Bool
    /// The server's `Retry-After`, when it gave a positive one.
    public var retryAfter: Duration?
    /// The answer's header fields, names in lower case (only when the request `keepsHeaders`).
    public var headers: [String: String] = [:]
    /// Connections libcurl opened for this attempt (0: it reused one left open by an earlier
    /// request on the same handle, `CurlTransferPool`).
    public var connectionsOpened = 0
}

/// How one attempt failed before a whole HTTP answer arrived.
public struct TransferFailure: Error, Sendable {
    /// Failure classes.
    public enum Kind: String, Sendable {
        /// No connection could be made, or it broke mid-transfer.
        case connection
        /// The request cannot work as configured (malformed URL, unsupported scheme, bad option).
        case configuration
        /// Any other libcurl failure (TLS, protocol).
        case transfer
        /// A local file could not be read or written.
        case io
        /// The answer's body was larger than the sink's limit.
        case tooLarge
    }

    public var kind: Kind
    public var message: String
    /// Whether another attempt may succeed (connection refused, reset, stalled).
    public var retryable: Bool

    public init(kind: Kind, message: String, retryable: Bool) {
        self.kind = kind
        self.message = message
        self.retryable = retryable
    }
}

/// A libcurl easy handle. Not thread-safe, like the handle itself: each user owns one and uses it
/// from one thread at a time (make one per task for parallel transfers).
public final class CurlTransfer {
    /// Answers longer than this are cut by the default memory sink (our API's answers are small;
    /// a hostile server gets no more).
    public static let responseLimit = 1 << 20
    /// libcurl's upload buffer: larger than the 64 KiB default for loopback and LAN throughput.
    static let uploadBufferSize = 1 << 20

    private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    private let handle: UnsafeMutableRawPointer
    private let errorBuffer: UnsafeMutablePointer<CChar>

    /// Loads libcurl (on first use in the process) and makes a handle; fails with the reason when
    /// libcurl cannot be loaded.
    public init() throws(TransferFailure) {
        guard Self.globalInit, let handle = curl_easy_init() else {
            let reason = crashsym_curl_load_error().map { String(cString: $0) } ?? "curl_global_init failed"
            throw TransferFailure(kind: .configuration, message: "libcurl could not be initialised: \(reason)", retryable: false)
        }
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    /// Performs one attempt of `request`, giving up at `timeout` overall, at `connectTimeout` for
    /// the connection, and when nothing moves for `stallTimeout`. The body of the answer goes to
    /// `sink`; `progress(sent, total)` follows an upload.
    public func perform(_ request: HTTPRequest, userAgent: String, timeout: Duration, connectTimeout: Duration,
                        stallTimeout: Duration, sink: ResponseSink = .memory(limit: CurlTransfer.responseLimit),
                        progress: ((UInt64, UInt64) -> Void)? = nil) -> Result<HTTPResponse, TransferFailure> {
        let context: TransferContext
        switch request.body {
        case nil:
            context = TransferContext(bytes: [], sink: sink)
        case .bytes(let bytes):
            context = TransferContext(bytes: bytes, sink: sink)
        case .file(let path), .fileRange(let path, _, _):
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                return .failure(TransferFailure(kind: .io, message: "\(path): cannot open: \(String(cString: strerror(errno)))", retryable: false))
            }
            var status = stat()
            guard fstat(descriptor, &status) == 0 else {
                close(descriptor)
                return .failure(TransferFailure(kind: .io, message: "\(path): cannot stat", retryable: false))
            }
            var start: UInt64 = 0, size = UInt64(status.st_size)
            if case .fileRange(_, let offset, let length) = request.body {
                guard offset <= size, length <= size - offset else {
                    close(descriptor)
                    return .failure(TransferFailure(kind: .io, message: "\(path): shorter than \(offset) + \(length) bytes", retryable: false))
                }
                start = offset
                size = length
            }
            context = TransferContext(descriptor: descriptor, start: start, size: size, path: path, sink: sink)
        }
        context.keepsHeaders = request.keepsHeaders
        context.progress = progress
        defer { context.close() }
        let sendsBody = request.method == .post || request.method == .put

        var headerList: UnsafeMutablePointer<curl_slist>?
        var lines = request.headers
        if let type = request.contentType, sendsBody { lines.append("Content-Type: \(type)") }
        // An empty `Expect:` stops libcurl from sending `Expect: 100-continue` with bodies over
        // 1 MiB: a server or proxy that does not answer `100 Continue` would make each upload wait
        // libcurl's one-second timeout first. crashsym serve answers it at once, before it checks
        // the key, so asking would save nothing there. Auth and limits come with the final answer.
        // Not for signed requests: libcurl 7.88 signs the empty header it does not send, and the
        // store computes another signature (S3 stores answer `100 Continue` anyway).
        if sendsBody && request.signature == nil { lines.append("Expect:") }
        for header in lines {
            headerList = curl_slist_append(headerList, header)
        }
        defer { curl_slist_free_all(headerList) }
        var resolveList: UnsafeMutablePointer<curl_slist>?
        for entry in request.pinnedAddresses {
            resolveList = curl_slist_append(resolveList, entry)
        }
        defer { curl_slist_free_all(resolveList) }

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
        if let resolveList { check(crashsym_curl_setopt_pointer(handle, CURLOPT_RESOLVE, resolveList)) }
        check(crashsym_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
        // Never follow redirects: a key would go wherever the server points.
        check(crashsym_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))
        switch request.method {
        case .get:
            check(crashsym_curl_setopt_long(handle, CURLOPT_HTTPGET, 1))
        case .head:
            check(crashsym_curl_setopt_long(handle, CURLOPT_NOBODY, 1))
        case .delete:
            check(crashsym_curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, "DELETE"))
        case .post, .put:
            check(crashsym_curl_setopt_long(handle, CURLOPT_POST, 1))
            if request.method == .put { check(crashsym_curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, "PUT")) }
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
        }
        check(crashsym_curl_set_write_function(handle) { buffer, size, count, userdata in
            guard let userdata else { return 0 }
            let context = Unmanaged<TransferContext>.fromOpaque(userdata).takeUnretainedValue()
            guard let buffer else { return size * count }
            // Anything else than the count taken aborts the transfer (CURLE_WRITE_ERROR).
            return context.receive(UnsafeRawBufferPointer(start: buffer, count: size * count)) ? size * count : 0
        })
        check(crashsym_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, opaque))
        if let signature = request.signature {
            check(crashsym_curl_setopt_string(handle, CURLOPT_AWS_SIGV4, signature.provider))
            check(crashsym_curl_setopt_string(handle, CURLOPT_USERNAME, signature.accessKeyID))
            check(crashsym_curl_setopt_string(handle, CURLOPT_PASSWORD, signature.secretAccessKey))
        }
        if request.keepsHeaders {
            check(crashsym_curl_set_header_function(handle) { buffer, size, count, userdata in
                guard let buffer, let userdata else { return size * count }
                let context = Unmanaged<TransferContext>.fromOpaque(userdata).takeUnretainedValue()
                context.header(UnsafeRawBufferPointer(start: buffer, count: size * count))
                return size * count
            })
            check(crashsym_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, opaque))
        }
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
            return .failure(TransferFailure(kind: .configuration, message: "libcurl rejected an option", retryable: false))
        }

        let code = curl_easy_perform(handle)
        if let failure = context.failure {
            return .failure(failure)
        }
        guard code == CURLE_OK else {
            let detail = errorBuffer[0] != 0 ? String(cString: errorBuffer) : String(cString: curl_easy_strerror(code))
            return .failure(Self.failure(code, detail: detail))
        }
        var status = 0
        _ = crashsym_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        var retryAfter: curl_off_t = 0
        _ = crashsym_curl_getinfo_off_t(handle, CURLINFO_RETRY_AFTER, &retryAfter)
        var connects = 0
        _ = crashsym_curl_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &connects)
        return .success(HTTPResponse(status: status, body: context.response, bodySize: context.received,
                                     truncated: context.truncated,
                                     retryAfter: retryAfter > 0 ? .seconds(Int64(retryAfter)) : nil, headers: context.headers,
                                     connectionsOpened: connects))
    }

    /// Classifies a libcurl error: connection-level failures are worth another attempt.
    static func failure(_ code: CURLcode, detail: String) -> TransferFailure {
        switch code {
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_SEND_ERROR,
             CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            return TransferFailure(kind: .connection, message: detail, retryable: true)
        case CURLE_OPERATION_TIMEDOUT:
            return TransferFailure(kind: .connection, message: detail, retryable: true)
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            return TransferFailure(kind: .configuration, message: detail, retryable: false)
        default:
            return TransferFailure(kind: .transfer, message: detail, retryable: false)
        }
    }
}

/// State shared with libcurl's callbacks during one attempt: the body source and the answer.
final class TransferContext {
    let size: UInt64
    private var bytes: [UInt8]
    private var offset = 0
    private var descriptor: Int32
    /// Where the body starts in the file (a part of a multipart upload).
    private let start: UInt64
    private var remaining: UInt64
    private let path: String
    var keepsHeaders = false
    /// The answer's header fields (lower-case names), at most `headerLimit` of them.
    private(set) var headers: [String: String] = [:]
    static let headerLimit = 100
    private let sink: ResponseSink
    private(set) var response: [UInt8] = []
    private(set) var received: UInt64 = 0
    private(set) var truncated = false
    /// Why the transfer was stopped from a callback (a read or write error, a body too large).
    private(set) var failure: TransferFailure?
    var progress: ((UInt64, UInt64) -> Void)?

    init(bytes: [UInt8], sink: ResponseSink) {
        self.bytes = bytes
        size = UInt64(bytes.count)
        start = 0
        remaining = 0
        descriptor = -1
        path = ""
        self.sink = sink
    }

    init(descriptor: Int32, start: UInt64 = 0, size: UInt64, path: String, sink: ResponseSink) {
        bytes = []
        self.size = size
        self.start = start
        remaining = size
        if start > 0 { lseek(descriptor, off_t(start), SEEK_SET) }
        self.descriptor = descriptor
        self.path = path
        self.sink = sink
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
        guard remaining > 0 else { return 0 }
        while true {
            let count = Glibc.read(descriptor, buffer, Int(min(UInt64(capacity), remaining)))
            if count >= 0 {
                remaining -= UInt64(count)
                return count
            }
            if errno == EINTR { continue }
            failure = TransferFailure(kind: .io, message: "\(path): cannot read: \(String(cString: strerror(errno)))", retryable: false)
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
        remaining = size - UInt64(position)
        return lseek(descriptor, off_t(start + UInt64(position)), SEEK_SET) == off_t(start + UInt64(position))
    }

    /// Takes one header line of the answer (`Name: value\r\n`); a new status line (after a
    /// redirect or `100 Continue`) starts the fields again.
    func header(_ line: UnsafeRawBufferPointer) {
        guard keepsHeaders else { return }
        let text = String(decoding: line, as: UTF8.self)
        if text.hasPrefix("HTTP/") {
            headers = [:]
            return
        }
        guard headers.count < Self.headerLimit, let colon = text.firstIndex(of: ":") else { return }
        let name = text[..<colon].lowercased()
        let value = text[text.index(after: colon)...].trimmingWhitespace()
        headers[name] = value
    }

    /// Takes a chunk of the answer into the sink; false stops the transfer.
    func receive(_ chunk: UnsafeRawBufferPointer) -> Bool {
        switch sink {
        case .memory(let limit):
            received += UInt64(chunk.count)
            let room = limit - response.count
            if chunk.count > room { truncated = true }
            if room > 0 { response.append(contentsOf: chunk.prefix(room)) }
            return true
        case .file(let output, let limit):
            guard received + UInt64(chunk.count) <= limit else {
                failure = TransferFailure(kind: .tooLarge, message: "the answer is larger than \(limit) bytes", retryable: false)
                return false
            }
            let error = FileIO.writeAll(output, chunk)
            guard error == 0 else {
                failure = TransferFailure(kind: .io, message: "cannot write the answer: \(String(cString: strerror(error)))", retryable: false)
                return false
            }
            received += UInt64(chunk.count)
            return true
        }
    }
}

extension Duration {
    /// Whole milliseconds, rounded up, at least 1 (0 would mean "no limit" to libcurl).
    public var curlMilliseconds: Int {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 1 }
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        let (total, carry) = product.addingReportingOverflow((attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
        if overflow || carry { return Int.max }
        return max(1, Int(total))
    }
}

extension CurlTransfer {
    /// The outcome of `download`: the status, and whether the file was written.
    public struct Download: Sendable {
        /// The HTTP status of the answer.
        public var status: Int
        /// Bytes written to the destination (0 unless the status was 200).
        public var size: UInt64
    }

    /// GETs `url` into the file `path`: the body is written to a scratch file beside it, fsynced
    /// and renamed into place only on a 200, so a reader never sees a partial file; any other
    /// status leaves `path` as it was. More than `maxBytes` of body fails with `.tooLarge`.
    public func download(_ url: String, headers: [String] = [], to path: String, maxBytes: UInt64,
                         userAgent: String, timeout: Duration, connectTimeout: Duration,
                         stallTimeout: Duration) -> Result<Download, TransferFailure> {
        let scratch = "\(path).part-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let descriptor = open(scratch, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            return .failure(TransferFailure(kind: .io, message: "\(scratch): cannot create: \(String(cString: strerror(errno)))", retryable: false))
        }
        var keep = false
        defer {
            close(descriptor)
            if !keep { unlink(scratch) }
        }
        let outcome = perform(HTTPRequest(.get, url: url, headers: headers), userAgent: userAgent, timeout: timeout,
                              connectTimeout: connectTimeout, stallTimeout: stallTimeout,
                              sink: .file(descriptor: descriptor, limit: maxBytes))
        switch outcome {
        case .failure(let failure):
            return .failure(failure)
        case .success(let response) where response.status != 200:
            return .success(Download(status: response.status, size: 0))
        case .success(let response):
            // FileIO's durable rename; a directory that cannot be flushed leaves the file in place.
            if let failure = FileIO.moveDurably(scratch, to: path), failure.step != .syncDirectory {
                return .failure(TransferFailure(kind: .io, message: "\(path): cannot write: \(String(cString: strerror(failure.code)))", retryable: false))
            }
            keep = true
            return .success(Download(status: 200, size: response.bodySize))
        }
    }
}

extension Substring {
    /// The text without leading and trailing spaces, tabs and line ends.
    func trimmingWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
