import SymBytes
import SymReport

/// The rules document an operator stores per app (`PUT …/grouping-rules`, docs/grouping.md
/// "The rules document"): parsed and validated here, written back in one canonical form.
///
/// ```json
/// {"version": 1, "app_frames": 2, "context_frames": 1,
///  "rules": [{"action": "skip", "function": "log_fatal*", "note": "our logger aborts"}]}
/// ```
extension GroupingRules {
    /// Parses and validates a rules document (UTF-8 JSON). Every member is optional; unknown
    /// members, wrong types, unknown actions, invalid patterns and documents over the limits are
    /// refused with an error that names the place.
    public init(document bytes: some Collection<UInt8>) throws(GroupingRulesError) {
        guard bytes.count <= Self.maximumDocumentBytes else {
            throw GroupingRulesError(.tooLarge, "the rules document is \(bytes.count) bytes; at most \(Self.maximumDocumentBytes) are accepted")
        }
        guard let text = String(validating: Array(bytes), as: UTF8.self) else {
            throw GroupingRulesError(.invalidJSON, "the rules document is not UTF-8 text")
        }
        try self.init(document: text)
    }

    /// Parses and validates a rules document given as text (see `init(document:)` over bytes).
    public init(document text: String) throws(GroupingRulesError) {
        guard text.utf8.count <= Self.maximumDocumentBytes else {
            throw GroupingRulesError(.tooLarge, "the rules document is \(text.utf8.count) bytes; at most \(Self.maximumDocumentBytes) are accepted")
        }
        let root: JSONValue
        do {
            root = try JSONValue.parse(text)
        } catch {
            throw GroupingRulesError(.invalidJSON, "the rules document is not valid JSON: \(error.message)")
        }
        try self.init(json: root)
    }

    /// Validates a parsed rules document.
    public init(json root: JSONValue) throws(GroupingRulesError) {
        guard case .object(let members) = root else {
            throw GroupingRulesError(.wrongType, "the rules document must be a JSON object, not \(Self.kind(of: root))")
        }
        var appFrames = Self.defaultAppFrames, contextFrames = Self.defaultContextFrames
        var rules: [GroupingRule] = []
        var seen: Set<String> = []
        for (key, value) in members {
            guard seen.insert(key).inserted else {
                throw GroupingRulesError(.invalidValue, "'\(key)' appears more than once", path: key)
            }
            switch key {
            case "version":
                let version = try Self.integer(value, path: key, in: 1...Int.max)
                guard version == Self.documentVersion else {
                    throw GroupingRulesError(.invalidValue, "version \(version) is not supported; this server reads version \(Self.documentVersion)", path: key)
                }
            case "app_frames":
                appFrames = try Self.integer(value, path: key, in: 1...Self.maximumAppFrames)
            case "context_frames":
                contextFrames = try Self.integer(value, path: key, in: 0...Self.maximumContextFrames)
            case "rules":
                guard case .array(let elements) = value else {
                    throw GroupingRulesError(.wrongType, "must be an array of rule objects, not \(Self.kind(of: value))", path: key)
                }
                guard elements.count <= Self.maximumRules else {
                    throw GroupingRulesError(.tooLarge, "\(elements.count) rules; at most \(Self.maximumRules) are accepted", path: key)
                }
                for (index, element) in elements.enumerated() {
                    rules.append(try Self.rule(element, index: index))
                }
            default:
                throw GroupingRulesError(.unknownMember, "unknown member '\(Self.printable(key))'; the document has version, app_frames, context_frames and rules",
                                         path: Self.printable(key))
            }
        }
        self.init(operatorRules: rules, appFrames: appFrames, contextFrames: contextFrames)
    }

    private static func rule(_ value: JSONValue, index: Int) throws(GroupingRulesError) -> GroupingRule {
        let path = "rules[\(index)]"
        guard case .object(let members) = value else {
            throw GroupingRulesError(.wrongType, "a rule must be an object, not \(kind(of: value))", path: path)
        }
        var action: GroupingRule.Action?
        var patterns: [String: GlobPattern] = [:]
        var note = ""
        for (key, value) in members {
            let memberPath = "\(path).\(printable(key))"
            switch key {
            case "action":
                guard let text = value.string else { throw GroupingRulesError(.wrongType, "must be a string, not \(kind(of: value))", path: memberPath) }
                guard let known = GroupingRule.Action(rawValue: text) else {
                    throw GroupingRulesError(.invalidValue, "unknown action '\(printable(text))'; one of: \(GroupingRule.Action.allCases.map(\.rawValue).joined(separator: ", "))",
                                             path: memberPath)
                }
                guard action == nil else { throw GroupingRulesError(.invalidValue, "'action' appears more than once", path: memberPath) }
                action = known
            case "function", "module", "file":
                guard let text = value.string else { throw GroupingRulesError(.wrongType, "must be a string pattern, not \(kind(of: value))", path: memberPath) }
                guard patterns[key] == nil else { throw GroupingRulesError(.invalidValue, "'\(key)' appears more than once", path: memberPath) }
                guard text.utf8.count <= GlobPattern.maximumLength else {
                    throw GroupingRulesError(.tooLarge, "the pattern is \(text.utf8.count) bytes; at most \(GlobPattern.maximumLength) are accepted", path: memberPath)
                }
                guard let pattern = GlobPattern(text) else {
                    throw GroupingRulesError(.invalidValue, "not a valid pattern (empty, a control character, or a trailing '\\'); '*' matches any text, '?' one character", path: memberPath)
                }
                patterns[key] = pattern
            case "note":
                guard let text = value.string else { throw GroupingRulesError(.wrongType, "must be a string, not \(kind(of: value))", path: memberPath) }
                guard text.utf8.count <= maximumNoteLength else {
                    throw GroupingRulesError(.tooLarge, "the note is \(text.utf8.count) bytes; at most \(maximumNoteLength) are accepted", path: memberPath)
                }
                note = text
            default:
                throw GroupingRulesError(.unknownMember, "unknown member '\(printable(key))'; a rule has action, function, module, file and note",
                                         path: memberPath)
            }
        }
        guard let action else {
            throw GroupingRulesError(.invalidValue, "a rule needs an 'action' (\(GroupingRule.Action.allCases.map(\.rawValue).joined(separator: ", ")))", path: path)
        }
        guard !patterns.isEmpty else {
            throw GroupingRulesError(.invalidValue, "a rule needs at least one of 'function', 'module' or 'file'", path: path)
        }
        return GroupingRule(action, function: patterns["function"], module: patterns["module"], file: patterns["file"],
                            note: note, origin: .operator, index: index)
    }

    private static func integer(_ value: JSONValue, path: String, in range: ClosedRange<Int>) throws(GroupingRulesError) -> Int {
        guard case .number(let text) = value else {
            throw GroupingRulesError(.wrongType, "must be a number, not \(kind(of: value))", path: path)
        }
        guard let number = Int(text), range.contains(number) else {
            let bound = range.upperBound == Int.max ? "at least \(range.lowerBound)" : "from \(range.lowerBound) to \(range.upperBound)"
            throw GroupingRulesError(.invalidValue, "must be a whole number \(bound), not \(printable(String(text.prefix(40))))", path: path)
        }
        return number
    }

    private static func kind(of value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// A name from the document as an error may quote it: at most 64 characters, control
    /// characters replaced.
    private static func printable(_ text: String) -> String {
        let cut = text.unicodeScalars.prefix(64).map { $0.value < 0x20 || $0.value == 0x7f ? "?" : String($0) }.joined()
        return text.unicodeScalars.count > 64 ? cut + "…" : cut
    }

    /// The operator's part in the canonical document form (members in a fixed order, defaults
    /// written out): what `GET …/grouping-rules` answers. Parsing it gives these rules again.
    public var document: String {
        var out = "{\"version\":\(Self.documentVersion),\"app_frames\":\(appFrames),\"context_frames\":\(contextFrames),\"rules\":["
        for (number, rule) in operatorRules.enumerated() {
            if number > 0 { out += "," }
            out += "{\"action\":\"\(rule.action.rawValue)\""
            if let function = rule.function { out += ",\"function\":" + Self.quoted(function.text) }
            if let module = rule.module { out += ",\"module\":" + Self.quoted(module.text) }
            if let file = rule.file { out += ",\"file\":" + Self.quoted(file.text) }
            if !rule.note.isEmpty { out += ",\"note\":" + Self.quoted(rule.note) }
            out += "}"
        }
        return out + "]}"
    }

    /// A JSON string literal.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7f {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
