/// Why a grouping-rules document was refused: a code, a message saying what to change, and where
/// (a path into the document such as `rules[3].function`, and the line and column for text that
/// is not JSON). The server answers it as a 400 with this message.
public struct GroupingRulesError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of problem.
    public enum Code: String, Sendable, Equatable {
        /// The text is not one JSON document (or not UTF-8).
        case invalidJSON = "invalid-json"
        /// The document exceeds a size limit (bytes, rules, pattern or note length).
        case tooLarge = "too-large"
        /// A value has the wrong JSON type.
        case wrongType = "wrong-type"
        /// A member the format does not define (a typo would otherwise be silently ignored).
        case unknownMember = "unknown-member"
        /// A value of the right type that is not allowed (unknown action, bad pattern, range).
        case invalidValue = "invalid-value"
    }

    /// The kind of problem.
    public var code: Code
    /// What is wrong and what to do.
    public var message: String
    /// Where in the document (`rules[3].function`), empty for the whole document.
    public var path: String

    /// Creates an error.
    public init(_ code: Code, _ message: String, path: String = "") {
        self.code = code
        self.message = message
        self.path = path
    }

    /// `rules[3].function: …`.
    public var description: String { path.isEmpty ? message : "\(path): \(message)" }
}
