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

    /// The rule's fields, shared by its copies: every frame of every crash carries a copy of the
    /// rule that decided it, and a copy is then one reference, not seven.
    private final class Storage: Sendable {
        let action: Action
        let function: GlobPattern?
        let module: GlobPattern?
        let file: GlobPattern?
        let note: String
        let origin: Origin
        let index: Int

        init(_ action: Action, _ function: GlobPattern?, _ module: GlobPattern?, _ file: GlobPattern?, _ note: String,
             _ origin: Origin, _ index: Int) {
            self.action = action
            self.function = function
            self.module = module
            self.file = file
            self.note = note
            self.origin = origin
            self.index = index
        }
    }

    private let storage: Storage

    /// What a matching frame is.
    public var action: Action { storage.action }
    /// The function (normalised, as signatures print it), when the rule looks at it.
    public var function: GlobPattern? { storage.function }
    /// The module: its file name, or its path when the pattern starts with `/`.
    public var module: GlobPattern? { storage.module }
    /// The source file path, when the rule looks at it.
    public var file: GlobPattern? { storage.file }
    /// Why the rule exists (shown next to the frames it decided).
    public var note: String { storage.note }
    /// Built-in or the operator's.
    public var origin: Origin { storage.origin }
    /// The rule's position in its list (0-based): in the built-in table or the operator's `rules`.
    public var index: Int { storage.index }

    /// Creates a rule; at least one of `function`, `module`, `file` should be given (a rule
    /// without any matches every frame).
    public init(_ action: Action, function: GlobPattern? = nil, module: GlobPattern? = nil, file: GlobPattern? = nil,
                note: String = "", origin: Origin = .operator, index: Int = 0) {
        storage = Storage(action, function, module, file, note, origin, index)
    }

    public static func == (a: GroupingRule, b: GroupingRule) -> Bool {
        a.storage === b.storage
            || (a.action == b.action && a.function == b.function && a.module == b.module && a.file == b.file
                && a.note == b.note && a.origin == b.origin && a.index == b.index)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(action)
        hasher.combine(function)
        hasher.combine(module)
        hasher.combine(file)
        hasher.combine(note)
        hasher.combine(origin)
        hasher.combine(index)
    }

    private enum CodingKeys: String, CodingKey {
        case action, function, module, file, note, origin, index
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(try container.decode(Action.self, forKey: .action),
                  function: try container.decodeIfPresent(GlobPattern.self, forKey: .function),
                  module: try container.decodeIfPresent(GlobPattern.self, forKey: .module),
                  file: try container.decodeIfPresent(GlobPattern.self, forKey: .file),
                  note: try container.decode(String.self, forKey: .note),
                  origin: try container.decode(Origin.self, forKey: .origin),
                  index: try container.decode(Int.self, forKey: .index))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(action, forKey: .action)
        try container.encodeIfPresent(function, forKey: .function)
        try container.encodeIfPresent(module, forKey: .module)
        try container.encodeIfPresent(file, forKey: .file)
        try container.encode(note, forKey: .note)
        try container.encode(origin, forKey: .origin)
        try container.encode(index, forKey: .index)
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
