/// Why an S3 request failed, classified for the caller, with a message that says what to do.
public struct S3Error: Error, Sendable, Equatable, CustomStringConvertible {
    /// Failure classes.
    public enum Kind: String, Sendable {
        /// No such key (404 `NoSuchKey`).
        case notFound
        /// The store refused the credentials (wrong secret, unknown key id, no permission).
        case credentials
        /// The store cannot be reached or answers 5xx; a retry later may succeed.
        case unavailable
        /// The configuration cannot work (no such bucket, malformed URL, missing credentials).
        case configuration
        /// The store answered something this client cannot use.
        case protocolError
        /// A local file could not be read or written.
        case io
    }

    public var kind: Kind
    public var message: String
    /// The S3 error code, when the store gave one (`SignatureDoesNotMatch`).
    public var code: String?

    public init(_ kind: Kind, _ message: String, code: String? = nil) {
        self.kind = kind
        self.message = message
        self.code = code
    }

    public var description: String { message }
}
