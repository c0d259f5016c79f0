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
        for rule in Self.builtinRules where rule.matches(function: function, moduleName: moduleName, modulePath: modulePath, file: file) {
            return rule
        }
        return nil
    }
}
