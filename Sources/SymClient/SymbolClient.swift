import Foundation
import Logging
import SymBundle
import SymHTTP

/// Client of the crashsym symbol API (`docs/http-api.md`) over libcurl.
///
/// Requests are retried on connection errors, 429 and 5xx with exponential backoff and jitter (a
/// server's `Retry-After` is honoured) until `RetryPolicy.maxAttempts` or the configuration's
/// deadline. Bundles are streamed from disk in constant memory. The client owns one libcurl handle:
/// use it from one task at a time (create one per task for parallel uploads).
public final class SymbolClient {
    /// The settings.
    public let configuration: ClientConfiguration
    private let logger: Logger
    private let transfer: CurlTransfer
    private var random = SystemRandomNumberGenerator()

    /// Creates a client; fails when the server URL is not http(s) or the key is empty.
    public init(configuration: ClientConfiguration, logger: Logger) throws(ClientError) {
        let server = configuration.server.lowercased()
        guard server.hasPrefix("http://") || server.hasPrefix("https://") else {
            throw ClientError(.configuration, "server URL must start with http:// or https://: '\(ClientConfiguration.redacting(configuration.server))'")
        }
        guard !configuration.appKey.isEmpty else { throw ClientError(.configuration, "no app key") }
        guard !configuration.appID.isEmpty else { throw ClientError(.configuration, "no app id") }
        self.configuration = configuration
        self.logger = logger
        do {
            transfer = try CurlTransfer()
        } catch {
            throw ClientError(.configuration, error.message)
        }
    }

    /// Asks which of the modules the server lacks (and links the present ones to the version).
    public func missingSymbols(_ request: MissingSymbolsRequest) throws(ClientError) -> MissingSymbolsResponse {
        let body: Data
        do {
            body = try JSONEncoder().encode(request)
        } catch {
            throw ClientError(.configuration, "cannot encode the request: \(error)")
        }
        let response = try send(HTTPRequest(url: url("symbols/missing"), body: .bytes(Array(body)),
                                            contentType: "application/json", headers: apiHeaders),
                                progress: nil)
        return try decode(MissingSymbolsResponse.self, from: response)
    }

    /// Uploads the bundle at `path`, streamed from disk; `progress(sent, total)` follows each attempt.
    public func uploadBundle(at path: String, progress: ((UInt64, UInt64) -> Void)? = nil) throws(ClientError) -> UploadResponse {
        let response = try send(HTTPRequest(url: url("symbols"), body: .file(path: path),
                                            contentType: "application/zip", headers: apiHeaders),
                                progress: progress)
        return try decode(UploadResponse.self, from: response)
    }

    private var apiHeaders: [String] { ["Authorization: Bearer \(configuration.appKey)", "Accept: application/json"] }

    /// `<server>/api/v1/apps/<app id>/<endpoint>`, the app id percent-encoded.
    func url(_ endpoint: String) -> String {
        var base = configuration.server
        while base.hasSuffix("/") { base.removeLast() }
        return "\(base)/api/v1/apps/\(PercentEncoding.encode(configuration.appID, as: .pathSegment))/\(endpoint)"
    }

    /// Sends `request` until it gets a 2xx, a final error, or the deadline passes.
    func send(_ request: HTTPRequest, progress: ((UInt64, UInt64) -> Void)?) throws(ClientError) -> HTTPResponse {
        let clock = ContinuousClock()
        var attempt = 0
        while true {
            attempt += 1
            let remaining = clock.now.duration(to: configuration.deadline)
            guard remaining > .zero else {
                throw ClientError(.deadline, "deadline reached before \(describe(request)) could be sent", attempts: attempt - 1)
            }
            let outcome = transfer.perform(request, userAgent: configuration.userAgent, timeout: remaining,
                                           connectTimeout: configuration.connectTimeout,
                                           stallTimeout: configuration.stallTimeout, progress: progress)
            let error: ClientError
            let retryable: Bool
            var retryAfter: Duration?
            switch outcome {
            case .success(let response) where (200..<300).contains(response.status):
                return response
            case .success(let response):
                error = Self.httpError(response, attempts: attempt)
                retryable = response.status == 429 || response.status == 408 || response.status >= 500
                retryAfter = response.retryAfter
            case .failure(let failure):
                let expired = clock.now >= configuration.deadline
                error = ClientError(expired ? .deadline : ClientError.Code(failure.kind),
                                    expired ? "deadline reached: \(failure.message)" : failure.message, attempts: attempt)
                retryable = failure.retryable && !expired
            }
            guard retryable, attempt < configuration.retry.maxAttempts else { throw error }
            let delay = configuration.retry.delay(beforeAttempt: attempt + 1, retryAfter: retryAfter, using: &random)
            guard clock.now + delay < configuration.deadline else {
                var final = error
                final.message += "; no time left for another attempt before the deadline"
                throw final
            }
            logger.notice("retrying \(describe(request)) after: \(error)", metadata: [
                "crashsym.attempt": "\(attempt + 1)", "crashsym.delay_ms": "\(delay.curlMilliseconds)",
            ])
            configuration.sleep(delay)
        }
    }

    private func describe(_ request: HTTPRequest) -> String {
        "POST \(ClientConfiguration.redacting(request.url))"
    }

    /// The error of a non-2xx answer, with the server's code and message when its body has them.
    static func httpError(_ response: HTTPResponse, attempts: Int) -> ClientError {
        if let body = try? JSONDecoder().decode(ErrorResponse.self, from: Data(response.body)) {
            return ClientError(.http, body.error.message, status: response.status, serverCode: body.error.code,
                               attempts: attempts)
        }
        let text = String(decoding: response.body.prefix(200), as: UTF8.self)
            .split(whereSeparator: \.isNewline).joined(separator: " ")
        return ClientError(.http, text.isEmpty ? "no error body" : text, status: response.status, attempts: attempts)
    }

    private func decode<Answer: Decodable>(_ type: Answer.Type, from response: HTTPResponse) throws(ClientError) -> Answer {
        do {
            return try JSONDecoder().decode(type, from: Data(response.body))
        } catch {
            throw ClientError(.invalidResponse, "unexpected answer (HTTP \(response.status)): \(error)", status: response.status)
        }
    }
}
