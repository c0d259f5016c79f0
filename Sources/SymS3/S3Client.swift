import SymBytes
import SymHTTP
#if canImport(Glibc)
import Glibc
#endif

/// An object listed by `S3Client.list`.
public struct S3ObjectInfo: Sendable, Equatable {
    /// The key, relative to the location's prefix.
    public var key: String
    public var size: UInt64
    /// Last modification, seconds since 1970 (0 when the store did not say).
    public var modified: Int64
}

/// One page of `S3Client.list`.
public struct S3Listing: Sendable {
    public var objects: [S3ObjectInfo]
    /// Pass to the next call; nil on the last page.
    public var nextToken: String?
}

/// A blocking client of an S3-compatible object store over libcurl: AWS Signature V4 computed by
/// libcurl (`CURLOPT_AWS_SIGV4`), bodies streamed from and to files in constant memory, multipart
/// upload of large files, ranged GETs, and retries with exponential backoff on connection
/// failures, 5xx and 429 answers. No Foundation and no NIO: call it from a thread that may block.
///
/// Keys are relative to the location's prefix and must be made of unreserved characters and
/// slashes (content-addressed keys are); each call has a libcurl handle of its own for its
/// duration, taken from the client's pool (`CurlTransferPool`) so that calls reuse the
/// connections earlier ones opened, and one client is shared by any number of threads.
public struct S3Client: Sendable {
    /// Bucket, prefix, endpoint and region.
    public let location: S3Location
    let credentials: S3Credentials
    /// Size of each part of a multipart upload; files larger than one part are sent in parts.
    /// S3 requires at least 5 MiB for every part but the last.
    public var partSize: UInt64 = 64 << 20
    /// Attempts per request (the first included) before a retryable failure is reported.
    public var attempts = 4
    /// Wait before the second attempt; it doubles for each further one.
    public var firstBackoff: Duration = .milliseconds(200)
    public var connectTimeout: Duration = .seconds(5)
    /// A transfer during which nothing moves for this long is abandoned (and retried).
    public var stallTimeout: Duration = .seconds(30)
    /// Whole-request limit (large objects over slow links).
    public var timeout: Duration = .seconds(6 * 3600)

    /// Idle handles, with their open connections to the endpoint; shared by copies of the client.
    let transfers = CurlTransferPool()

    static let userAgent = "crashsym-s3"
    /// Answers kept in memory (XML listings, error documents) are cut here.
    static let answerLimit = 16 << 20

    /// A client of `location` signing with `credentials`.
    public init(location: S3Location, credentials: S3Credentials) {
        self.location = location
        self.credentials = credentials
    }

    // MARK: Objects

    /// Stores the file at `path` under `key`, streamed from disk (in parts when larger than
    /// `partSize`). `sha256` (hex), when known, is sent as the payload hash so that the store
    /// checks the bytes it received.
    public func put(fileAt path: String, key: String, sha256: String? = nil) throws(S3Error) {
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw S3Error(.io, "\(path): cannot stat: \(String(cString: strerror(errno)))")
        }
        let size = UInt64(status.st_size)
        if size > partSize {
            try putMultipart(fileAt: path, size: size, key: key)
            return
        }
        var headers: [String] = []
        if let sha256 { headers.append("x-amz-content-sha256: \(sha256)") }
        let response = try send(.put, url(key), body: .file(path: path), headers: headers)
        try expect(response, [200], "PUT \(key)")
    }

    /// Stores `bytes` under `key`.
    public func put(bytes: [UInt8], key: String, sha256: String? = nil) throws(S3Error) {
        var headers: [String] = []
        if let sha256 { headers.append("x-amz-content-sha256: \(sha256)") }
        let response = try send(.put, url(key), body: .bytes(bytes), headers: headers)
        try expect(response, [200], "PUT \(key)")
    }

    /// The size of `key`, or nil when there is no such object.
    public func size(of key: String) throws(S3Error) -> UInt64? {
        let response = try send(.head, url(key), keepsHeaders: true)
        if response.status == 404 { return nil }
        try expect(response, [200], "HEAD \(key)")
        guard let length = response.headers["content-length"].flatMap({ UInt64($0) }) else {
            throw S3Error(.protocolError, "HEAD \(key): the store gave no Content-Length")
        }
        return length
    }

    /// The bytes of `key` (within `range`, when given), at most `limit` of them.
    public func get(_ key: String, range: Range<UInt64>? = nil, limit: Int = 64 << 20) throws(S3Error) -> [UInt8] {
        var headers: [String] = []
        if let range {
            if range.isEmpty { return [] }
            headers.append("Range: bytes=\(range.lowerBound)-\(range.upperBound - 1)")
        }
        let response = try send(.get, url(key), headers: headers, sink: { .memory(limit: max(limit, 64 << 10)) })
        if response.status == 404 { throw S3Error(.notFound, "no object \(key) in \(location.bucket)", code: "NoSuchKey") }
        if response.status == 416, let range {
            // The object is shorter than the range says: what names the range is wrong about it.
            throw S3Error(.protocolError, "GET \(key): bytes \(range.lowerBound)-\(range.upperBound - 1) lie beyond the object's end")
        }
        try expect(response, [200, 206], "GET \(key)")
        guard !response.truncated, response.body.count <= limit else {
            throw S3Error(.protocolError, "GET \(key): the object is larger than \(limit) bytes")
        }
        return response.body
    }

    /// Writes the object `key` to the file `path` durably (a scratch file beside it, fsynced,
    /// renamed): a reader never sees a partial file. Returns its size.
    @discardableResult
    public func download(_ key: String, to path: String, maxBytes: UInt64 = .max) throws(S3Error) -> UInt64 {
        let scratch = "\(path).part-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let descriptor = open(scratch, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw S3Error(.io, "\(scratch): cannot create: \(String(cString: strerror(errno)))")
        }
        var keep = false
        defer {
            close(descriptor)
            if !keep { unlink(scratch) }
        }
        let response = try send(.get, url(key), sink: {
            // Each attempt starts the file again.
            _ = ftruncate(descriptor, 0)
            _ = lseek(descriptor, 0, SEEK_SET)
            return .file(descriptor: descriptor, limit: maxBytes)
        })
        guard response.status == 200 else {
            // The error document went to the file: read its start back.
            let body = (try? FileIO.readAll(descriptor, count: 64 << 10, at: 0)) ?? []
            if response.status == 404 { throw S3Error(.notFound, "no object \(key) in \(location.bucket)", code: "NoSuchKey") }
            throw error(status: response.status, body: body, "GET \(key)")
        }
        if let failure = FileIO.moveDurably(scratch, to: path), failure.step != .syncDirectory {
            throw S3Error(.io, "\(path): cannot write: \(String(cString: strerror(failure.code)))")
        }
        keep = true
        return response.bodySize
    }

    /// Removes `key`; removing a missing object is not an error.
    public func delete(_ key: String) throws(S3Error) {
        let response = try send(.delete, url(key))
        if response.status == 404 { return }
        try expect(response, [200, 204], "DELETE \(key)")
    }

    /// One page (up to 1,000) of the objects whose keys start with `prefix`, in key order.
    public func list(prefix: String = "", after token: String? = nil) throws(S3Error) -> S3Listing {
        // Canonical query: parameters sorted by name, values percent-encoded (SigV4).
        var query: [String] = []
        if let token { query.append("continuation-token=" + Self.encode(token)) }
        query.append("list-type=2")
        query.append("prefix=" + Self.encode(location.prefix + prefix))
        let response = try send(.get, bucketURL(query: query.joined(separator: "&")))
        try expect(response, [200], "LIST \(prefix)")
        let text = Substring(String(decoding: response.body, as: UTF8.self))
        var objects: [S3ObjectInfo] = []
        for block in S3XML.values("Contents", in: text) {
            guard let key = S3XML.value("Key", in: block), key.hasPrefix(location.prefix),
                  let size = S3XML.value("Size", in: block).flatMap({ UInt64($0) }) else { continue }
            let modified = S3XML.value("LastModified", in: block).flatMap(S3XML.epochSeconds) ?? 0
            objects.append(S3ObjectInfo(key: String(key.dropFirst(location.prefix.count)), size: size, modified: modified))
        }
        let truncated = S3XML.value("IsTruncated", in: text) == "true"
        let next = truncated ? S3XML.value("NextContinuationToken", in: text) : nil
        if truncated && next == nil {
            throw S3Error(.protocolError, "LIST \(prefix): a truncated listing without NextContinuationToken")
        }
        return S3Listing(objects: objects, nextToken: next)
    }

    /// Creates the bucket; one that exists already (and is ours) is fine.
    public func createBucket() throws(S3Error) {
        let response = try send(.put, bucketURL(query: ""), body: .bytes([]))
        if response.status == 409 && (errorCode(response) == "BucketAlreadyOwnedByYou" || errorCode(response) == "BucketAlreadyExists") { return }
        try expect(response, [200], "create bucket \(location.bucket)")
    }

    /// Checks that the bucket exists and the credentials are accepted (one listing of no keys).
    public func probe() throws(S3Error) {
        let response = try send(.get, bucketURL(query: "list-type=2&max-keys=0&prefix=" + Self.encode(location.prefix)))
        try expect(response, [200], "LIST")
    }

    // MARK: Multipart

    private func putMultipart(fileAt path: String, size: UInt64, key: String) throws(S3Error) {
        // S3 allows 10,000 parts: larger files get larger parts.
        let partSize = max(self.partSize, (size + 9_999) / 10_000)
        let created = try send(.post, url(key, query: "uploads="), body: .bytes([]))
        try expect(created, [200], "start multipart upload of \(key)")
        guard let uploadID = S3XML.value("UploadId", in: Substring(String(decoding: created.body, as: UTF8.self))), !uploadID.isEmpty else {
            throw S3Error(.protocolError, "start multipart upload of \(key): the answer has no UploadId")
        }
        let upload = "uploadId=" + Self.encode(uploadID)
        do throws(S3Error) {
            var etags: [String] = []
            var offset: UInt64 = 0
            while offset < size {
                let length = min(partSize, size - offset)
                let number = etags.count + 1
                let response = try send(.put, url(key, query: "partNumber=\(number)&" + upload),
                                        body: .fileRange(path: path, offset: offset, length: length), keepsHeaders: true)
                try expect(response, [200], "PUT part \(number) of \(key)")
                guard let etag = response.headers["etag"], !etag.isEmpty else {
                    throw S3Error(.protocolError, "PUT part \(number) of \(key): the store gave no ETag")
                }
                etags.append(etag)
                offset += length
            }
            var document = "<CompleteMultipartUpload>"
            for (index, etag) in etags.enumerated() {
                document += "<Part><PartNumber>\(index + 1)</PartNumber><ETag>\(S3XML.escape(etag))</ETag></Part>"
            }
            document += "</CompleteMultipartUpload>"
            let completed = try send(.post, url(key, query: upload), body: .bytes(Array(document.utf8)),
                                     contentType: "application/xml")
            try expect(completed, [200], "complete multipart upload of \(key)")
            // S3 may answer 200 and report the failure in the body.
            if errorCode(completed) != nil { throw error(completed, "complete multipart upload of \(key)") }
        } catch {
            // Best effort: an upload left open only costs storage until the bucket's lifecycle rule.
            _ = try? send(.delete, url(key, query: upload))
            throw error
        }
    }

    // MARK: Requests

    /// The URL of `key` (path-style), with a canonical `query`.
    func url(_ key: String, query: String = "") -> String {
        location.endpoint + "/" + location.bucket + "/" + Self.encode(location.prefix + key, keepingSlashes: true)
            + (query.isEmpty ? "" : "?" + query)
    }

    func bucketURL(query: String) -> String {
        location.endpoint + "/" + location.bucket + (query.isEmpty ? "" : "?" + query)
    }

    /// One request, signed, with retries on connection failures, 5xx and 429 (backoff doubling
    /// from `firstBackoff`, or the store's Retry-After when shorter than 10 s). `sink` is asked
    /// anew for each attempt.
    func send(_ method: HTTPRequest.Method, _ url: String, body: HTTPRequest.Body? = nil, headers: [String] = [],
              contentType: String? = nil, keepsHeaders: Bool = false,
              sink: () -> ResponseSink = { .memory(limit: S3Client.answerLimit) }) throws(S3Error) -> HTTPResponse {
        var request = HTTPRequest(method, url: url, body: body,
                                  contentType: contentType ?? (body == nil ? nil : "application/octet-stream"), headers: headers)
        if let token = credentials.sessionToken { request.headers.append("x-amz-security-token: \(token)") }
        // A body streamed from a callback is not hashed by libcurl 7.88 as the store expects:
        // say so explicitly (content-addressed puts pass their SHA-256 instead).
        if body != nil && !headers.contains(where: { $0.lowercased().hasPrefix("x-amz-content-sha256:") }) {
            request.headers.append("x-amz-content-sha256: UNSIGNED-PAYLOAD")
        }
        request.signature = HTTPRequest.AWSSignature(region: location.region, service: "s3", accessKeyID: credentials.accessKeyID,
                                                     secretAccessKey: credentials.secretAccessKey)
        request.keepsHeaders = keepsHeaders
        var delay = firstBackoff
        var attempt = 1
        while true {
            let outcome: Result<HTTPResponse, TransferFailure>
            do {
                outcome = try transfers.withTransfer(key: location.endpoint) { transfer in
                    transfer.perform(request, userAgent: Self.userAgent, timeout: timeout, connectTimeout: connectTimeout,
                                     stallTimeout: stallTimeout, sink: sink())
                }
            } catch {
                throw S3Error(.configuration, error.message)
            }
            switch outcome {
            case .success(let response) where (response.status >= 500 || response.status == 429) && attempt < attempts:
                if let after = response.retryAfter, after < .seconds(10) { delay = max(delay, after) }
            case .success(let response):
                return response
            case .failure(let failure) where failure.retryable && attempt < attempts:
                break
            case .failure(let failure):
                switch failure.kind {
                case .connection:
                    throw S3Error(.unavailable, "the object store at \(location.endpoint) cannot be reached: \(failure.message)")
                case .io: throw S3Error(.io, failure.message)
                case .configuration: throw S3Error(.configuration, "\(location.endpoint): \(failure.message)")
                case .tooLarge: throw S3Error(.protocolError, failure.message)
                case .transfer: throw S3Error(.unavailable, "the object store at \(location.endpoint) failed: \(failure.message)")
                }
            }
            Self.sleep(delay)
            delay = delay * 2
            attempt += 1
        }
    }

    /// Throws the store's error unless `response` has one of `statuses`.
    func expect(_ response: HTTPResponse, _ statuses: Set<Int>, _ what: String) throws(S3Error) {
        guard !statuses.contains(response.status) else { return }
        throw error(response, what)
    }

    /// The S3 `<Code>` of an error document.
    func errorCode(_ response: HTTPResponse) -> String? {
        let text = Substring(String(decoding: response.body.prefix(64 << 10), as: UTF8.self))
        guard text.contains("<Error>") else { return nil }
        return S3XML.value("Code", in: text)
    }

    /// An error that says what to do, from an answer's status and error document.
    func error(_ response: HTTPResponse, _ what: String) -> S3Error {
        error(status: response.status, body: response.body, what)
    }

    func error(status: Int, body: [UInt8], _ what: String) -> S3Error {
        let text = Substring(String(decoding: body.prefix(64 << 10), as: UTF8.self))
        let code = S3XML.value("Code", in: text)
        let detail = S3XML.value("Message", in: text).map { ": \($0.prefix(300))" } ?? ""
        let place = "s3://\(location.bucket)/\(location.prefix) at \(location.endpoint)"
        switch code {
        case "SignatureDoesNotMatch":
            return S3Error(.credentials, "the object store rejected the request signature (SignatureDoesNotMatch): "
                + "AWS_SECRET_ACCESS_KEY is wrong for the access key \(credentials.accessKeyID) of \(place)", code: code)
        case "InvalidAccessKeyId":
            return S3Error(.credentials, "the object store does not know the access key \(credentials.accessKeyID) (InvalidAccessKeyId): check AWS_ACCESS_KEY_ID", code: code)
        case "ExpiredToken", "InvalidToken", "TokenRefreshRequired":
            return S3Error(.credentials, "the object store refused AWS_SESSION_TOKEN (\(code!)): renew the session's credentials", code: code)
        case "AccessDenied":
            return S3Error(.credentials, "\(what) was denied (AccessDenied): the access key \(credentials.accessKeyID) lacks permission on \(place)", code: code)
        case "RequestTimeTooSkewed":
            return S3Error(.configuration, "this machine's clock differs too much from the object store's (RequestTimeTooSkewed): synchronise it", code: code)
        case "NoSuchBucket":
            return S3Error(.configuration, "the bucket \(location.bucket) does not exist at \(location.endpoint) (NoSuchBucket): create it or fix --object-store", code: code)
        case "NoSuchKey", "NoSuchUpload":
            return S3Error(.notFound, "\(what): not found (\(code!))", code: code)
        default:
            break
        }
        switch status {
        case 404: return S3Error(.notFound, "\(what): not found\(detail)", code: code)
        case 401, 403:
            return S3Error(.credentials, "\(what): the object store answered \(status)\(code.map { " \($0)" } ?? "")\(detail): "
                + "check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and the bucket's permissions", code: code)
        case 429, 500...599:
            return S3Error(.unavailable, "\(what): the object store at \(location.endpoint) answered \(status)\(code.map { " \($0)" } ?? "")\(detail)", code: code)
        default:
            return S3Error(.protocolError, "\(what): the object store answered \(status)\(code.map { " \($0)" } ?? "")\(detail)", code: code)
        }
    }

    static func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var time = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&time, &remaining) != 0 && errno == EINTR { time = remaining }
    }

    /// Percent-encodes as SigV4's canonical request requires (RFC 3986 unreserved kept), each
    /// segment between slashes on its own when `keepingSlashes` (an object key).
    static func encode(_ text: String, keepingSlashes: Bool = false) -> String {
        guard keepingSlashes else { return PercentEncoding.encode(text, as: .unreservedOnly) }
        return text.split(separator: "/", omittingEmptySubsequences: false)
            .map { PercentEncoding.encode(String($0), as: .unreservedOnly) }.joined(separator: "/")
    }
}
