import SymBytes
import SymReport

extension CrashSignature {
    /// The version of the kept form (`keptBytes`); its `"kept"` member.
    public static let keptFormVersion = 2

    /// What the crash store keeps of the signature for every processed crash, for the console's
    /// group page: each examined frame's position, text, module, role and whether it is the
    /// app's, and each rule that decided a frame written once, frames naming it by position.
    /// Functions, source files and lines are not kept (the page shows each frame's text);
    /// `init(keptBytes:)` reads them back as nil and 0 (`kept`).
    ///
    /// The whole `Codable` form (every frame with its function, file, line and a copy of its
    /// rule's note) was as large as the symbolicated report and halved the rate of
    /// re-symbolication (docs/BENCHMARKS.md "Crash service").
    public var keptBytes: [UInt8] {
        // About 200 bytes a frame, the rules a few hundred each: written without regrowing.
        var writer = JSONWriter(capacity: 2048 + frames.count * 256)
        writer.beginObject()
        writer.field("kept", Self.keptFormVersion)
        writer.field("signature", signature)
        writer.field("title", title)
        if let stack { writer.field("stack", stack) }
        writer.field("frames_not_examined", framesNotExamined)
        // The rules that decided frames, each once, in order of first use. One signature's rules
        // come from one `GroupingRules`, where origin and index name a rule: no rule is compared
        // whole (patterns and notes) for every frame.
        var rules: [GroupingRule] = []
        var known: [Int: Int] = [:]
        var positions: [Int?] = []
        positions.reserveCapacity(frames.count)
        for frame in frames {
            guard let rule = frame.rule else { positions.append(nil); continue }
            let key = rule.origin == .builtin ? rule.index : -1 - rule.index
            if let position = known[key] {
                positions.append(position)
            } else {
                known[key] = rules.count
                positions.append(rules.count)
                rules.append(rule)
            }
        }
        writer.beginArray("rules")
        for rule in rules {
            writer.beginObject()
            writer.field("action", rule.action.rawValue)
            if let function = rule.function { writer.field("function", function.text) }
            if let module = rule.module { writer.field("module", module.text) }
            if let file = rule.file { writer.field("file", file.text) }
            writer.field("note", rule.note)
            writer.field("origin", rule.origin.rawValue)
            writer.field("index", rule.index)
            writer.endObject()
        }
        writer.endArray()
        // Each frame an array: index, inline depth, inlined, text, module, role, is_app, rule.
        writer.beginArray("frames")
        for index in frames.indices {
            // Members read in place: a copy of each frame would retain and release its strings.
            writer.beginArray()
            writer.value(frames[index].frameIndex)
            writer.value(frames[index].inlineDepth)
            writer.value(frames[index].inlined)
            writer.value(frames[index].text)
            if let module = frames[index].module { writer.value(module) } else { writer.null() }
            writer.value(frames[index].role.rawValue)
            writer.value(frames[index].isApp)
            if let position = positions[index] { writer.value(position) } else { writer.null() }
            writer.endArray()
        }
        writer.endArray()
        writer.endObject()
        return writer.bytes
    }

    /// The signature as the store keeps it (`keptBytes`): every frame without its function,
    /// source file and line.
    public var kept: CrashSignature {
        var copy = self
        for index in copy.frames.indices {
            copy.frames[index].function = nil
            copy.frames[index].file = nil
            copy.frames[index].line = 0
        }
        return copy
    }

    /// Reads the kept form (`keptBytes`) back.
    public init(keptBytes bytes: [UInt8]) throws(FormatError) {
        let root: JSONValue
        do {
            root = try JSONValue.parse(String(decoding: bytes, as: UTF8.self))
        } catch {
            throw FormatError(.invalidValue, "kept signature: \(error.message)")
        }
        guard root["kept"]?.unsigned == UInt64(Self.keptFormVersion) else {
            throw Self.malformed("\"kept\" is \(Self.describe(root["kept"])), not version \(Self.keptFormVersion)")
        }
        guard let signature = root["signature"]?.string, let title = root["title"]?.string,
              let notExamined = root["frames_not_examined"]?.unsigned.flatMap({ Int(exactly: $0) }),
              let ruleValues = root["rules"]?.array, let frameValues = root["frames"]?.array else {
            throw Self.malformed("signature, title, frames_not_examined, rules or frames is missing or of the wrong type")
        }
        let stack: Int?
        switch root["stack"] {
        case nil: stack = nil
        case let value?:
            guard let index = value.unsigned.flatMap({ Int(exactly: $0) }) else { throw Self.malformed("stack is not an index") }
            stack = index
        }
        var rules: [GroupingRule] = []
        for (position, value) in ruleValues.enumerated() { rules.append(try Self.keptRule(value, at: position)) }
        var frames: [GroupingFrame] = []
        frames.reserveCapacity(frameValues.count)
        for (position, value) in frameValues.enumerated() { frames.append(try Self.keptFrame(value, at: position, rules: rules)) }
        self.init(signature: signature, title: title, stack: stack, frames: frames, framesNotExamined: notExamined)
    }

    private static func keptRule(_ value: JSONValue, at position: Int) throws(FormatError) -> GroupingRule {
        func pattern(_ key: String) throws(FormatError) -> GlobPattern? {
            guard let member = value[key] else { return nil }
            guard let text = member.string, let pattern = GlobPattern(text) else {
                throw Self.malformed("rules[\(position)].\(key) is not a pattern")
            }
            return pattern
        }
        guard let action = value["action"]?.string.flatMap(GroupingRule.Action.init(rawValue:)),
              let note = value["note"]?.string,
              let origin = value["origin"]?.string.flatMap(GroupingRule.Origin.init(rawValue:)),
              let index = value["index"]?.unsigned.flatMap({ Int(exactly: $0) }) else {
            throw Self.malformed("rules[\(position)] lacks its action, note, origin or index")
        }
        return GroupingRule(action, function: try pattern("function"), module: try pattern("module"), file: try pattern("file"),
                            note: note, origin: origin, index: index)
    }

    private static func keptFrame(_ value: JSONValue, at position: Int, rules: [GroupingRule]) throws(FormatError) -> GroupingFrame {
        guard let members = value.array, members.count == 8,
              let frameIndex = members[0].unsigned.flatMap({ Int(exactly: $0) }),
              let inlineDepth = members[1].unsigned.flatMap({ Int(exactly: $0) }),
              let inlined = members[2].bool, let text = members[3].string,
              let role = members[5].string.flatMap(GroupingFrame.Role.init(rawValue:)), let isApp = members[6].bool else {
            throw Self.malformed("frames[\(position)] is not [index, inline depth, inlined, text, module, role, is_app, rule]")
        }
        let module: String?
        switch members[4] {
        case .null: module = nil
        case .string(let name): module = name
        default: throw Self.malformed("frames[\(position)]'s module is neither a string nor null")
        }
        let rule: GroupingRule?
        switch members[7] {
        case .null: rule = nil
        case let reference:
            guard let index = reference.unsigned.flatMap({ Int(exactly: $0) }), index < rules.count else {
                throw Self.malformed("frames[\(position)]'s rule is not a position in rules")
            }
            rule = rules[index]
        }
        return GroupingFrame(frameIndex: frameIndex, inlineDepth: inlineDepth, inlined: inlined, text: text, function: nil,
                             module: module, file: nil, line: 0, isApp: isApp, role: role, rule: rule)
    }

    private static func malformed(_ message: String) -> FormatError {
        FormatError(.invalidValue, "kept signature: " + message)
    }

    private static func describe(_ value: JSONValue?) -> String {
        switch value {
        case nil: "missing"
        case .number(let text)?: text
        case .string(let text)?: "'\(text.prefix(20))'"
        default: "not a number"
        }
    }
}

