/// A crash report with every frame resolved (or flagged): what the writers print.
public struct SymbolicatedReport: Sendable {
    /// The report as parsed.
    public var report: CrashReport
    /// One resolution per frame: `frames[s][f]` is `report.stacks[s].frames[f]`.
    public var frames: [[FrameResolution]]

    /// Creates a symbolicated report.
    public init(report: CrashReport, frames: [[FrameResolution]]) {
        self.report = report
        self.frames = frames
    }

    /// Resolutions of frames that did not resolve.
    public var unresolvedCount: Int {
        frames.reduce(0) { $0 + $1.filter { $0.status != .ok }.count }
    }
}

/// The outcome of one frame.
public enum FrameStatus: String, Sendable, CaseIterable {
    /// Resolved to at least one function.
    case ok
    /// No symbols were found for the frame's module.
    case noSymbols = "no-symbols"
    /// Symbols were found, but for another build of the module: not used.
    case buildIDMismatch = "build-id-mismatch"
    /// The module's symbols cover no function at the address.
    case notInFunction = "not-in-function"
    /// The frame names no module (or the report has no module at its address).
    case noModule = "no-module"
    /// The frame line could not be read fully.
    case malformed
    /// The symbol table could not be read.
    case corruptSymbols = "corrupt-symbols"
}

/// One source position of a resolved frame (innermost first, physical function last).
public struct SourceLocation: Sendable, Equatable {
    /// The demangled function name ("??" when unknown).
    public var function: String
    /// The name as stored (mangled when the compiler mangled it).
    public var mangled: String
    /// The source path, empty when unknown.
    public var file: String
    /// The line (0 when unknown).
    public var line: UInt32
    /// The column (0 when unknown).
    public var column: UInt32

    /// Creates a location.
    public init(function: String, mangled: String, file: String, line: UInt32, column: UInt32) {
        self.function = function
        self.mangled = mangled
        self.file = file
        self.line = line
        self.column = column
    }
}

/// The locations of one resolved address, innermost first, physical function last, with their
/// text and JSON renderings made once. Reports repeat addresses and functions, so a symbolicator
/// that keeps one chain per looked-up range hands the same chain to many frames, and the writers
/// copy its bytes instead of escaping and formatting names and paths again for every frame.
public final class LocationChain: Sendable {
    /// Which writers' renderings a chain carries (a chain without one is rendered by the writer
    /// from `locations` each time).
    public struct Renderings: OptionSet, Sendable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// The text writer's lines.
        public static let text = Renderings(rawValue: 1)
        /// The JSON writer's `"symbolized"` elements.
        public static let json = Renderings(rawValue: 2)
        /// Both.
        public static let all: Renderings = [.text, .json]
    }

    /// The locations, innermost first, physical function last (never empty).
    public let locations: [SourceLocation]
    /// One `function file:line:column` line per location (newline included), back to back: what
    /// the text writer prints after ` in ` and after each `inlined into `; nil when not rendered.
    let text: [UInt8]?
    /// The end offset in `text` of each location's line.
    let textEnds: [Int]
    /// The locations' JSON objects, comma-separated: the contents of a frame's `"symbolized"`
    /// array; nil when not rendered.
    let json: [UInt8]?

    /// A chain of `locations` (not empty), with the `renderings` made now.
    public init(_ locations: [SourceLocation], renderings: Renderings = .all) {
        self.locations = locations
        var text: [UInt8] = [], ends: [Int] = []
        if renderings.contains(.text) {
            for location in locations {
                ReportWriter.describe(location, to: &text)
                ends.append(text.count)
            }
        }
        self.text = renderings.contains(.text) ? text : nil
        textEnds = ends
        if renderings.contains(.json) {
            var json = JSONText()
            for location in locations { ReportWriter.appendJSON(location, to: &json) }
            self.json = json.bytes
        } else {
            json = nil
        }
    }
}

/// One line of what was tried to find a module's symbols, with its kind: the writers choose
/// lines by kind, never by their text.
public struct ExplanationStep: Sendable, Equatable {
    /// What a step says.
    public enum Kind: Sendable, Equatable {
        /// A place looked at and what was found there.
        case tried
        /// The module's table was fetched from a crashsym server (text `--explain` prints it
        /// under resolved frames too).
        case fetched
    }

    /// What the step says.
    public var kind: Kind
    /// The step in English (`ReportWriter.describe(_:)`).
    public var text: String

    /// Creates a step.
    public init(_ kind: Kind, _ text: String) {
        self.kind = kind
        self.text = text
    }

    /// The step of `candidate`, its English written once by `ReportWriter.describe(_:)`.
    public init(_ candidate: SymbolCandidate) {
        if case .fetched = candidate.outcome { kind = .fetched } else { kind = .tried }
        text = ReportWriter.describe(candidate)
    }
}

/// What a frame's resolution says about its module: where its symbols came from and what was
/// tried to find them. The same for every frame of the module in a report.
public final class ModuleFacts: Sendable {
    /// Where the symbols came from (a `.csym` or ELF path), when found.
    public let source: String?
    /// What was tried, in order, with each step's kind.
    public let steps: [ExplanationStep]
    /// What was tried, in order (for `--explain`), in English.
    public let explanation: [String]
    /// What was tried, in order, as data (empty when the facts were made from English only).
    public let candidates: [SymbolCandidate]

    /// Creates the facts of a module from English steps (each a place tried).
    public convenience init(source: String?, explanation: [String]) {
        self.init(source: source, steps: explanation.map { ExplanationStep(.tried, $0) })
    }

    /// Creates the facts of a module from its steps.
    public init(source: String?, steps: [ExplanationStep]) {
        self.source = source
        self.steps = steps
        explanation = steps.map(\.text)
        candidates = []
    }

    /// Creates the facts of a module from the candidates its providers tried (their English
    /// written once, by `ReportWriter.describe(_:)`).
    public init(source: String?, candidates: [SymbolCandidate]) {
        self.source = source
        self.candidates = candidates
        steps = candidates.map(ExplanationStep.init)
        explanation = steps.map(\.text)
    }
}

/// How one frame was resolved.
public struct FrameResolution: Sendable, Equatable {
    /// The outcome.
    public var status: FrameStatus
    /// Why the frame did not resolve (nil when it did).
    public var reason: String?
    /// The printed address as a file virtual address of the module, when it could be computed.
    public var moduleAddress: UInt64?
    /// The address looked up (`moduleAddress - 1` for return addresses).
    public var lookupAddress: UInt64?
    /// Where the symbols came from and what was tried: the module's facts, one object shared by
    /// the frames of its module (nil: neither).
    public var moduleFacts: ModuleFacts?
    /// The frames at the address with their renderings (nil: none), shared between frames.
    public var chain: LocationChain?
    /// Whether `chain` is the sender's own symbolication (`ReportFrame.senderLocations`), kept
    /// because the symbolicator has no symbols of the frame's module.
    public var bySender = false

    /// Where the symbols came from (a `.csym` or ELF path), when found.
    public var source: String? {
        get { moduleFacts?.source }
        set { moduleFacts = ModuleFacts(source: newValue, steps: explanationSteps) }
    }

    /// What was tried, in order, with each step's kind.
    public var explanationSteps: [ExplanationStep] { moduleFacts?.steps ?? [] }

    /// What was tried, in order (for `--explain`).
    public var explanation: [String] {
        get { moduleFacts?.explanation ?? [] }
        set { moduleFacts = ModuleFacts(source: source, explanation: newValue) }
    }

    /// Frames at the address, innermost first, physical function last.
    public var locations: [SourceLocation] {
        get { chain?.locations ?? [] }
        set { chain = newValue.isEmpty ? nil : LocationChain(newValue) }
    }

    /// Creates a resolution.
    public init(status: FrameStatus, reason: String? = nil, moduleAddress: UInt64? = nil, lookupAddress: UInt64? = nil,
                source: String? = nil, locations: [SourceLocation] = [], explanation: [String] = []) {
        self.init(status: status, reason: reason, moduleAddress: moduleAddress, lookupAddress: lookupAddress,
                  source: source, chain: locations.isEmpty ? nil : LocationChain(locations), explanation: explanation)
    }

    /// Creates a resolution with a chain made before (one chain serves every frame at its address).
    public init(status: FrameStatus, reason: String? = nil, moduleAddress: UInt64? = nil, lookupAddress: UInt64? = nil,
                source: String? = nil, chain: LocationChain?, explanation: [String] = []) {
        self.status = status
        self.reason = reason
        self.moduleAddress = moduleAddress
        self.lookupAddress = lookupAddress
        self.chain = chain
        self.moduleFacts = source == nil && explanation.isEmpty ? nil : ModuleFacts(source: source, explanation: explanation)
    }

    /// Creates a resolution whose source and explanation are `moduleFacts`'s (one object serves
    /// every frame of a module: a frame copies one reference, not a string and an array).
    public init(status: FrameStatus, reason: String? = nil, moduleAddress: UInt64? = nil, lookupAddress: UInt64? = nil,
                moduleFacts: ModuleFacts?, chain: LocationChain? = nil) {
        self.status = status
        self.reason = reason
        self.moduleAddress = moduleAddress
        self.lookupAddress = lookupAddress
        self.moduleFacts = moduleFacts
        self.chain = chain
    }

    /// Resolutions are equal when they say the same, whether or not they share a chain.
    public static func == (lhs: FrameResolution, rhs: FrameResolution) -> Bool {
        lhs.status == rhs.status && lhs.reason == rhs.reason && lhs.moduleAddress == rhs.moduleAddress
            && lhs.lookupAddress == rhs.lookupAddress && lhs.source == rhs.source
            && (lhs.chain === rhs.chain || lhs.locations == rhs.locations) && lhs.explanation == rhs.explanation
    }
}
