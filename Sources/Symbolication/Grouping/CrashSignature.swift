import SymReport

/// A crash's signature: the text that decides its group, a title for people, and the frames
/// that made it with the rule that decided every other frame (docs/grouping.md). Computed from
/// a symbolicated report by `compute(for:rules:)`; recomputed whenever the crash is symbolicated
/// again.
public struct CrashSignature: Sendable, Equatable, Codable {
    /// Bumped whenever the computation changes what a signature says for the same input, so a
    /// store knows its signatures are stale.
    public static let algorithmVersion = 1
    /// The most frames (inline frames counted) examined in a stack; frames below are not looked at.
    public static let maximumFramesExamined = 256
    /// The signature of a stack with no frame to use.
    public static let emptySignature = "<no frames>"

    /// The frames that made the signature, joined by `" | "`: what groups crashes.
    public var signature: String
    /// Signal or error kind and the first signature frame: `SIGSEGV in parse_header`.
    public var title: String
    /// The report stack the signature comes from (`CrashReport.stacks` index), nil when the report has none.
    public var stack: Int?
    /// Every frame examined, top of the stack first, each with what it did for the signature.
    public var frames: [GroupingFrame]
    /// Frames of the stack that were not examined (beyond `maximumFramesExamined`).
    public var framesNotExamined: Int

    /// Creates a signature.
    public init(signature: String, title: String, stack: Int?, frames: [GroupingFrame], framesNotExamined: Int = 0) {
        self.signature = signature
        self.title = title
        self.stack = stack
        self.frames = frames
        self.framesNotExamined = framesNotExamined
    }

    /// The frames that made the signature, in signature order.
    public var contributingFrames: [GroupingFrame] { frames.filter { $0.role == .signature } }
    /// The other frames examined, each with the role (and rule) that kept it out.
    public var skippedFrames: [GroupingFrame] { frames.filter { $0.role != .signature } }

    enum CodingKeys: String, CodingKey {
        case signature, title, stack, frames
        case framesNotExamined = "frames_not_examined"
    }
}

/// One frame as grouping saw it: an inline frame of a report frame, or the report frame itself
/// when it did not resolve.
public struct GroupingFrame: Sendable, Equatable, Codable {
    /// What the frame did for the signature.
    public enum Role: String, Sendable, Equatable, Codable, CaseIterable {
        /// Part of the signature.
        case signature
        /// Left out by a `skip` rule (`rule`).
        case skipped
        /// The crash reporter: at or above the frame a `reporter` rule matched (`rule`), or above
        /// the signal trampoline of a glibc backtrace printed by a signal handler (no rule).
        case reporter
        /// The signal trampoline below a reporter: an unnamed frame of the C library.
        case trampoline
        /// A library frame without a name: nothing in it would be the same on another machine.
        case unresolvedLibrary = "unresolved-library"
        /// A library frame further above the app's first frame than the context frames reach.
        case libraryAboveContext = "library-above-context"
        /// Below the frames the signature took.
        case notNeeded = "not-needed"
        /// The same function as the frame just above it: recursion, or one function split in two
        /// by an optimiser (gcc's partial inlining calls `f.part.0` from an inlined `f`).
        case repeated
    }

    /// The frame's position in its report stack (`ReportStack.frames` index).
    public var frameIndex: Int
    /// The position in the frame's inline chain: 0 is the innermost function.
    public var inlineDepth: Int
    /// Whether this function was inlined into the next one (not the physical function).
    public var inlined: Bool
    /// The frame's text in a signature: the normalised function, else `module+0xoffset`.
    public var text: String
    /// The function as symbolicated (or as the report named it), nil when unresolved.
    public var function: String?
    /// The module's file name, when known.
    public var module: String?
    /// The source file, when known.
    public var file: String?
    /// The source line (0 when unknown).
    public var line: UInt32
    /// Whether the frame counts as the app's code (not a library's).
    public var isApp: Bool
    /// What the frame did for the signature.
    public var role: Role
    /// The rule that decided the frame, when one matched.
    public var rule: GroupingRule?

    /// Creates a frame.
    public init(frameIndex: Int, inlineDepth: Int, inlined: Bool, text: String, function: String?, module: String?,
                file: String?, line: UInt32, isApp: Bool, role: Role, rule: GroupingRule?) {
        self.frameIndex = frameIndex
        self.inlineDepth = inlineDepth
        self.inlined = inlined
        self.text = text
        self.function = function
        self.module = module
        self.file = file
        self.line = line
        self.isApp = isApp
        self.role = role
        self.rule = rule
    }

    /// Why the frame is or is not part of the signature, in one English line (for a console
    /// that does not word the roles itself).
    public var reason: String {
        let ruleText = rule.map { rule in
            let origin = rule.origin == .builtin ? "built-in rule \(rule.index)" : "rule \(rule.index) of the app's rules"
            return "\(origin) (\(rule.summary))" + (rule.note.isEmpty ? "" : ": \(rule.note)")
        }
        switch role {
        case .signature: return isApp ? "part of the signature: the app's frame" : "part of the signature: the library function the app called"
        case .skipped: return "skipped by " + (ruleText ?? "a rule")
        case .reporter:
            return ruleText.map { "the crash reporter, at or above the frame matched by " + $0 }
                ?? "the signal handler that printed the backtrace: above the signal trampoline"
        case .trampoline: return "the signal trampoline: an unnamed C library frame just below the crash reporter"
        case .unresolvedLibrary: return "an unnamed frame of a library module: its offset would differ between machines"
        case .libraryAboveContext: return "a library frame further from the app's code than the context frames reach"
        case .notNeeded: return "below the frames the signature takes"
        case .repeated: return "the same function as the frame above it (recursion, or a function split in two by the optimiser)"
        }
    }

    enum CodingKeys: String, CodingKey {
        case frameIndex = "frame_index", inlineDepth = "inline_depth", inlined, text, function, module, file, line
        case isApp = "is_app", role, rule
    }
}
