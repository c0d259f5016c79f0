import SymHTTP
/// A failed request, as a value: a stable code, a one-line message, and what the server said.
///
/// Messages never contain the app key.
public struct ClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable error classes.
    public enum Code: String, Sendable {
        /// No connection could be made, or it broke mid-transfer (retried).
        case connection
        /// The overall deadline passed before the request succeeded.
        case deadline
        /// The server answered with a non-2xx status.
        case http
        /// A 2xx answer whose body is not what the API promises.
        case invalidResponse = "invalid-response"
        /// A local file could not be read.
        case io
        /// The client settings cannot work (bad server URL, missing key).
        case configuration
        /// Any other libcurl failure (TLS, protocol).
        case transfer
    }

    /// The error class.
    public var code: Code
    /// A human-readable, one-line explanation.
    public var message: String
    /// The HTTP status of the last answer, if there was one.
    public var status: Int?
    /// The `error.code` of the server's JSON error body (`unauthorized`, `invalid-bundle`, …).
    public var serverCode: String?
    /// How many attempts were made.
    public var attempts: Int

    /// Creates an error.
    public init(_ code: Code, _ message: String, status: Int? = nil, serverCode: String? = nil, attempts: Int = 1) {
        self.code = code
        self.message = message
        self.status = status
        self.serverCode = serverCode
        self.attempts = attempts
    }

    public var description: String {
        var text = ""
        if let status { text += "HTTP \(status)" + (serverCode.map { " \($0)" } ?? "") + ": " }
        text += message
        if attempts > 1 { text += " (after \(attempts) attempts)" }
        return text
    }
}

extension ClientError.Code {
    /// The class of a transport failure.
    init(_ kind: TransferFailure.Kind) {
        switch kind {
        case .connection: self = .connection
        case .configuration: self = .configuration
        case .transfer, .tooLarge: self = .transfer
        case .io: self = .io
        }
    }
}
