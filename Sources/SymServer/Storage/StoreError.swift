/// Why a storage operation failed, in the storage's own terms: routes turn it into an HTTP
/// answer, the background services into a log line or a retry (DESIGN.md "Storage").
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The thing named does not exist (or belongs to another app).
    case notFound(String)
    /// The request contradicts what is stored (a duplicate, a state that forbids it).
    case conflict(String)
    /// The store cannot be reached or written now; a retry may succeed.
    case unavailable(String)
    /// Stored data cannot be read back as written.
    case corrupt(String)

    public var description: String {
        switch self {
        case .notFound(let message): "not found: \(message)"
        case .conflict(let message): "conflict: \(message)"
        case .unavailable(let message): "unavailable: \(message)"
        case .corrupt(let message): "corrupt: \(message)"
        }
    }

    /// The answer of the HTTP API for this error.
    var serverError: ServerError {
        switch self {
        case .notFound(let message): ServerError(.notFound, message)
        case .conflict(let message): ServerError(.badRequest, message)
        case .unavailable(let message): ServerError(.unavailable, "storage unavailable: \(message)", retryAfter: 5)
        case .corrupt(let message): ServerError(.internal, "stored data is corrupt: \(message)")
        }
    }
}
