import Synchronization

/// The rules that turn a crashing stack into a signature: crashcym's built-in table
/// (`builtinRules`, docs/grouping.md) plus an app's own rules from its rules document, and how
/// many frames a signature takes. The operator's rules come first: the first rule that matches a
/// frame decides.
public struct GroupingRules: Sendable, Equatable {
    /// The version of the rules document format this code reads and writes.
    public static let documentVersion = 1

    /// The app's rules (from its document), in document order; empty by default.
    public var operatorRules: [GroupingRule]
    /// How many of the app's frames a signature takes (1…`maximumAppFrames`).
    public var appFrames: Int
    /// How many library frames just above the first app frame a signature shows as context
    /// (0…`maximumContextFrames`): the library function the app called.
    public var contextFrames: Int

    /// The default number of app frames.
    public static let defaultAppFrames = 2
    /// The default number of context frames.
    public static let defaultContextFrames = 1
    /// The largest `appFrames` accepted.
    public static let maximumAppFrames = 16
    /// The largest `contextFrames` accepted.
    public static let maximumContextFrames = 8
    /// The most rules a document may hold.
    public static let maximumRules = 256
    /// The largest rules document accepted (bytes).
    public static let maximumDocumentBytes = 64 * 1024
    /// The longest note accepted (bytes).
    public static let maximumNoteLength = 1024

    /// The built-in rules alone, with the default frame counts.
    public static let defaults = GroupingRules()

    /// Rules with `operatorRules` before the built-in table.
    public init(operatorRules: [GroupingRule] = [], appFrames: Int = GroupingRules.defaultAppFrames,
                contextFrames: Int = GroupingRules.defaultContextFrames) {
        self.operatorRules = operatorRules
        self.appFrames = min(max(appFrames, 1), Self.maximumAppFrames)
        self.contextFrames = min(max(contextFrames, 0), Self.maximumContextFrames)
    }

    /// Every rule in the order they are tried: the operator's, then the built-in table.
    public var allRules: [GroupingRule] { operatorRules + Self.builtinRules }

    /// The first rule that decides a frame, nil when none matches.
    public func rule(function: String?, moduleName: String?, modulePath: String?, file: String?) -> GroupingRule? {
        for rule in operatorRules where rule.matches(function: function, moduleName: moduleName, modulePath: modulePath, file: file) {
            return rule
        }
        return Self.builtinIndex.firstMatchRemembered(function: function, moduleName: moduleName, modulePath: modulePath, file: file)
    }

    /// The first built-in rule that matches, by a plain scan of the table (what the index must
    /// answer; for tests).
    static func firstBuiltinByScan(function: String?, moduleName: String?, modulePath: String?, file: String?) -> GroupingRule? {
        builtinRules.first { $0.matches(function: function, moduleName: moduleName, modulePath: modulePath, file: file) }
    }

    static let builtinIndex = BuiltinIndex(builtinRules)

    /// The built-in table with its wildcard-free single-pattern rules in dictionaries: most of
    /// the table is exact function or module names, and every frame is tried against all of it.
    struct BuiltinIndex: Sendable {
        let rules: [GroupingRule]
        /// The first rule per exact function name (rules with only a function pattern).
        let exactFunctions: [String: Int]
        /// The first rule per exact module file name (rules with only a module pattern).
        let exactModules: [String: Int]
        /// Every other rule, in table order.
        let scanned: [Int]

        init(_ rules: [GroupingRule]) {
            self.rules = rules
            var functions: [String: Int] = [:], modules: [String: Int] = [:], scanned: [Int] = []
            for (index, rule) in rules.enumerated() {
                if let function = rule.function, rule.module == nil, rule.file == nil, function.isLiteral {
                    if functions[function.literal] == nil { functions[function.literal] = index }
                } else if let module = rule.module, rule.function == nil, rule.file == nil, module.isLiteral,
                          !module.text.hasPrefix("/") {
                    if modules[module.literal] == nil { modules[module.literal] = index }
                } else {
                    scanned.append(index)
                }
            }
            exactFunctions = functions
            exactModules = modules
            self.scanned = scanned
        }

        /// The first rule in table order that matches.
        func firstMatch(function: String?, moduleName: String?, modulePath: String?, file: String?) -> GroupingRule? {
            var best = Int.max
            if let function, let index = exactFunctions[function] { best = index }
            if let moduleName, let index = exactModules[moduleName], index < best { best = index }
            for index in scanned {
                guard index < best else { break }
                if rules[index].matches(function: function, moduleName: moduleName, modulePath: modulePath, file: file) { return rules[index] }
            }
            return best == Int.max ? nil : rules[best]
        }

        /// `firstMatch`, remembered: the frames of a program's crashes repeat, and every frame of
        /// every crash is matched against the table. A direct-mapped table of 8,192 entries (a
        /// collision only costs matching again), so memory stays bounded.
        func firstMatchRemembered(function: String?, moduleName: String?, modulePath: String?, file: String?) -> GroupingRule? {
            var hasher = Hasher()
            hasher.combine(function)
            hasher.combine(moduleName)
            hasher.combine(modulePath)
            hasher.combine(file)
            let slot = hasher.finalize() & (Self.rememberedSlots - 1)
            let remembered: Int?? = Self.remembered.withLock { table in
                guard let entry = table[slot], entry.function == function, entry.moduleName == moduleName,
                      entry.modulePath == modulePath, entry.file == file else { return nil }
                return .some(entry.rule)
            }
            if let remembered { return remembered.map { rules[$0] } }
            let found = firstMatch(function: function, moduleName: moduleName, modulePath: modulePath, file: file)
            Self.remembered.withLock { $0[slot] = Remembered(function: function, moduleName: moduleName, modulePath: modulePath,
                                                             file: file, rule: found?.index) }
            return found
        }

        private struct Remembered {
            var function, moduleName, modulePath, file: String?
            /// The rule's index in the built-in table (its `index`), nil when none matched.
            var rule: Int?
        }

        private static let rememberedSlots = 8192
        private static let remembered = Mutex<[Remembered?]>(Array(repeating: nil, count: rememberedSlots))
    }
}
