import SymBytes
import SymHTTP
import SymReport
#if canImport(Glibc)
import Glibc
#endif

/// Sends one queued report to `POST /api/v1/apps/{appId}/crashes` over libcurl (SymHTTP), with
/// an `Idempotency-Key` derived from its bytes, and says what the answer means for the queue.
public final class Forwarder {
    /// What the queue does with a report after one attempt.
    public enum Outcome: Sendable, Equatable {
        /// Stored by the server (2xx): remove it from the queue.
        case delivered(status: Int)
        /// Refused for good (4xx other than 401, 403, 408 and 429): move it to `rejected/` with
        /// this answer.
        case rejected(status: Int, answer: [UInt8])
        /// Worth another attempt later (connection failure, 401/403: a key to fix, 408, 429, 5xx), after `retryAfter`
        /// when the server gave one.
        case transient(reason: String, retryAfter: Duration?)
    }

    private let configuration: AgentConfiguration
    private let transfer: CurlTransfer
    private let userAgent: String
    /// `--symbols`: each report symbolicated here and sent as crashsym JSON (nil: sent as taken).
    private let symbolication: LocalSymbolication?

    /// The drop totals reported with each submission until acknowledged (nil: none).
    private let counts: DropCounts?

    /// A forwarder; fails when libcurl cannot be loaded.
    public init(configuration: AgentConfiguration, host: HostMetadata = .current,
                symbolication: LocalSymbolication? = nil, counts: DropCounts? = nil) throws(AgentError) {
        self.configuration = configuration
        self.symbolication = symbolication
        self.counts = counts
        do {
            transfer = try CurlTransfer()
        } catch {
            throw AgentError("cannot send crashes: \(error.message)")
        }
        userAgent = "crashsym-agent (\(host.system))"
    }

    /// The `Idempotency-Key` of the file at `path`: `sha256:` and the SHA-256 of its bytes, so a
    /// retry after a lost answer (or a file taken twice after a power loss) is stored once.
    public static func idempotencyKey(ofFile path: String) throws(AgentError) -> String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw AgentError("\(path): cannot open: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var hasher = SHA256Hasher()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw AgentError("\(path): cannot read: \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
        }
        return "sha256:" + hexString(hasher.finalize())
    }

    /// The URL a report with `metadata` is posted to, its settings as query parameters.
    func url(for metadata: ReportQueue.Metadata, format: String?) -> String {
        var base = configuration.server
        while base.hasSuffix("/") { base.removeLast() }
        var query = [("host", configuration.host)]
        if let version = metadata.version { query.append(("version", version)) }
        if let environment = metadata.environment { query.append(("environment", environment)) }
        if let format { query.append(("input_format", format)) }
        let encoded = query.map { "\($0.0)=\(Self.percentEncoded($0.1))" }.joined(separator: "&")
        return "\(base)/api/v1/apps/\(Self.percentEncoded(metadata.appID))/crashes?\(encoded)"
    }

    /// One attempt at sending the report at `path`.
    public func send(path: String, metadata: ReportQueue.Metadata) -> Outcome {
        let key: String
        do {
            key = try Self.idempotencyKey(ofFile: path)
        } catch {
            return .rejected(status: 0, answer: Array("{\"error\": {\"code\": \"unreadable\", \"message\": \(Self.jsonString(error.description))}}".utf8))
        }
        // The Idempotency-Key stays the taken file's: symbolicating it again gives the same crash.
        var body = HTTPRequest.Body.file(path: path), format = metadata.format, contentType = "text/plain; charset=utf-8"
        if let symbolication {
            // A file crashsym cannot read as a report is sent as taken: the server says why not.
            if case .success(let json) = symbolication.json(ofFile: path, format: metadata.format.flatMap(ReportFormat.init(rawValue:))) {
                body = .bytes(json)
                format = ReportFormat.crashsymJSON.rawValue
                contentType = "application/json"
            }
        }
        var headers = ["Authorization: Bearer \(configuration.appKey)", "Idempotency-Key: \(key)", "Accept: application/json"]
        let reported = counts?.pending()
        if let reported { headers.append("Crashsym-Agent-Counts: \(reported.header)") }
        let request = HTTPRequest(url: url(for: metadata, format: format), body: body, contentType: contentType, headers: headers)
        let outcome = transfer.perform(request, userAgent: userAgent, timeout: configuration.requestTimeout,
                                       connectTimeout: .seconds(10), stallTimeout: .seconds(30))
        switch outcome {
        case .success(let response) where (200..<300).contains(response.status):
            if let reported { counts?.acknowledge(dropped: reported.dropped, suppressed: reported.suppressed) }
            return .delivered(status: response.status)
        case .success(let response) where response.status == 408 || response.status == 429 || response.status >= 500
                                          || response.status < 400:
            let text = String(decoding: response.body.prefix(200), as: UTF8.self).split(whereSeparator: \.isNewline).joined(separator: " ")
            return .transient(reason: "HTTP \(response.status): \(text)", retryAfter: response.retryAfter)
        case .success(let response) where response.status == 401 || response.status == 403:
            // The key, not the report, is wrong (rotated, mistyped): keep every report queued until
            // the configuration is fixed instead of rejecting them all.
            return .transient(reason: "HTTP \(response.status): the server refused the app key for app \(metadata.appID) "
                                + "(check --app-id and --app-key)", retryAfter: nil)
        case .success(let response):
            return .rejected(status: response.status, answer: response.body)
        case .failure(let failure) where failure.kind == .io:
            return .rejected(status: 0, answer: Array("{\"error\": {\"code\": \"unreadable\", \"message\": \(Self.jsonString(failure.message))}}".utf8))
        case .failure(let failure):
            return .transient(reason: "\(HTTPRequest.redacting(configuration.server)): \(failure.message)", retryAfter: nil)
        }
    }

    /// RFC 3986 unreserved characters stay, every other byte is `%XX`.
    static func percentEncoded(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            if (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~") {
                result.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                result += "%" + hexString([byte]).uppercased()
            }
        }
        return result
    }

    /// `text` as a JSON string literal.
    public static func jsonString(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case _ where scalar.value < 0x20: result += "\\u00" + hexString([UInt8(scalar.value)])
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}

/// An agent failure with a message saying what to do.
public struct AgentError: Error, CustomStringConvertible, Sendable {
    public var description: String
    /// An error.
    public init(_ description: String) { self.description = description }
}
