/// One rule of the grouping rules: which frames it matches and what it decides about them
/// (docs/grouping.md "Rules"). The first rule that matches a frame decides; an operator's rules
/// come before the built-in ones.
public struct GroupingRule: Sendable, Equatable, Hashable, Codable {
    /// What a matching frame is.
    public enum Action: String, Sendable, Equatable, Hashable, Codable, CaseIterable {
        /// Says nothing about the bug (abort, raise, sanitizer runtime): left out of the signature.
        case skip
        /// The crash reporter: this frame and every frame above it (a signal handler and its
        /// trampoline) are left out.
        case reporter
        /// Code of a library (standard library, system module, vendored library): shown before
        /// the app's frames as context, never counted as the app's.
        case library
        /// The app's own code, even where a built-in rule would say otherwise.
        case app
    }

    /// Where a rule comes from.
    public enum Origin: String, Sendable, Equatable, Hashable, Codable {
        /// crashsym's built-in table.
        case builtin
        /// The app's rules document (`PUT …/grouping-rules`).
        case `operator`
    }

    /// What a matching frame is.
    public var action: Action
    /// The function (normalised, as signatures print it), when the rule looks at it.
    public var function: GlobPattern?
    /// The module: its file name, or its path when the pattern starts with `/`.
    public var module: GlobPattern?
    /// The source file path, when the rule looks at it.
    public var file: GlobPattern?
    /// Why the rule exists (shown next to the frames it decided).
    public var note: String
    /// Built-in or the operator's.
    public var origin: Origin
    /// The rule's position in its list (0-based): in the built-in table or the operator's `rules`.
    public var index: Int

    /// Creates a rule; at least one of `function`, `module`, `file` should be given (a rule
    /// without any matches every frame).
    public init(_ action: Action, function: GlobPattern? = nil, module: GlobPattern? = nil, file: GlobPattern? = nil,
                note: String = "", origin: Origin = .operator, index: Int = 0) {
        self.action = action
        self.function = function
        self.module = module
        self.file = file
        self.note = note
        self.origin = origin
        self.index = index
    }

    /// Whether the rule matches a frame with this normalised function (nil: unresolved), module
    /// name and path, and source file.
    public func matches(function name: String?, moduleName: String?, modulePath: String?, file path: String?) -> Bool {
        if let function {
            guard let name, function.matches(name) else { return false }
        }
        if let module {
            let subject = module.text.hasPrefix("/") ? modulePath : moduleName
            guard let subject, module.matches(subject) else { return false }
        }
        if let file {
            guard let path, !path.isEmpty, file.matches(path) else { return false }
        }
        return true
    }

    /// A short form: `skip function:abort` (origin and index are not part of it).
    public var summary: String {
        var parts = [action.rawValue]
        if let function { parts.append("function:\(function.text)") }
        if let module { parts.append("module:\(module.text)") }
        if let file { parts.append("file:\(file.text)") }
        return parts.joined(separator: " ")
    }
}

extension GlobPattern: Codable {
    /// Decodes a pattern from its text.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let pattern = GlobPattern(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a valid pattern: \(text)")
        }
        self = pattern
    }

    /// Encodes the pattern as its text.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }
}
