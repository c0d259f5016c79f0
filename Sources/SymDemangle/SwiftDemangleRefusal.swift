/// Why a Swift name was printed mangled although it may be a valid name.
public enum SwiftDemangleRefusal: Sendable, Hashable, CustomStringConvertible {
    /// Longer than `Demangler.maximumSwiftNameLength`.
    case nameTooLong
    /// The demangler ran past its CPU, memory or time limit on it (or crashed).
    case runaway
    /// Its demangled text would pass `SwiftDemanglerChild.maximumAnswerLength`.
    case answerTooLong
    /// Too many names ran away recently; this one was not tried.
    case runawayBudget
    /// No child process could be started.
    case noChild

    /// Said after a count of names ("2 ran the Swift demangler past its CPU or memory limit").
    public var description: String {
        switch self {
        case .nameTooLong: "over \(Demangler.maximumSwiftNameLength) bytes long (no Swift toolchain writes such names)"
        case .runaway: "ran the Swift demangler past its CPU or memory limit"
        case .answerTooLong: "would demangle to more than \(SwiftDemanglerChild.maximumAnswerLength) bytes"
        case .runawayBudget: "not tried: too many names ran the Swift demangler past its limits just before"
        case .noChild: "not tried: no process could be started to demangle them safely"
        }
    }
}
