import Foundation
import Hummingbird
import SymBundle

/// An answer other than 2xx: an HTTP status, a stable code and a message (docs/http-api.md, "Errors").
public struct ServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The error classes of the HTTP API, each with its status.
    public enum Code: String, Sendable {
        case badRequest = "bad-request"
        case unauthorized
        case notFound = "not-found"
        case timeout
        case tooLarge = "too-large"
        case invalidBundle = "invalid-bundle"
        case tooManyRequests = "too-many-requests"
        case unsupportedMediaType = "unsupported-media-type"
        /// A store (database, object store) cannot be reached now, or the server holds as many
        /// upload bytes as it may: retry after `Retry-After`.
        case unavailable
        case `internal`

        /// The HTTP status of this class.
        public var status: HTTPResponse.Status {
            switch self {
            case .badRequest: .badRequest
            case .unauthorized: .unauthorized
            case .notFound: .notFound
            case .timeout: .requestTimeout
            case .tooLarge: .contentTooLarge
            case .invalidBundle: .unprocessableContent
            case .tooManyRequests: .tooManyRequests
            case .unsupportedMediaType: .unsupportedMediaType
            case .unavailable: .serviceUnavailable
            case .internal: .internalServerError
            }
        }
    }

    /// The error class.
    public var code: Code
    /// One line for the client.
    public var message: String
    /// Seconds after which a retry makes sense (429, 503).
    public var retryAfter: Int?

    /// Creates an error.
    public init(_ code: Code, _ message: String, retryAfter: Int? = nil) {
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// The JSON answer `{"error": {"code": …, "message": …}}`.
    func response() -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        // Sorted keys: the same error gives the same bytes (a 401 must not tell its causes apart).
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = (try? encoder.encode(ErrorResponse(code: code.rawValue, message: message))) ?? Data()
        return Response(status: code.status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
