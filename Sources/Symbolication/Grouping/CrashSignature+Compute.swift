import SymDemangle
import SymReport

extension CrashSignature {
    /// The signature of `report`'s crashing stack under `rules` (docs/grouping.md "How a
    /// signature is made"): the sanitizer's access stack or the crashed thread; frames at and
    /// above a reporter and skipped frames left out; then the library frames the app called
    /// (`contextFrames`) and the app's first `appFrames` frames, inline frames counted.
    public static func compute(for report: SymbolicatedReport, rules: GroupingRules = .defaults) -> CrashSignature {
        guard let stackIndex = crashingStack(of: report.report) else {
            return CrashSignature(signature: emptySignature, title: title(report.report.signal, nil), stack: nil, frames: [])
        }
        var (frames, notExamined) = expand(report, stack: stackIndex)
        let decisions = frames.map { rules.rule(function: $0.name, moduleName: $0.frame.module, modulePath: $0.modulePath, file: $0.frame.file) }
        for index in frames.indices {
            frames[index].frame.rule = decisions[index]
            frames[index].frame.isApp = decisions[index].map { $0.action == .app } ?? true
        }

        // The reporter: the deepest frame a reporter rule matched, and everything above it.
        var start = 0
        if let deepest = decisions.lastIndex(where: { $0?.action == .reporter }) {
            for index in 0...deepest {
                frames[index].frame.role = .reporter
                frames[index].frame.rule = decisions[deepest]
            }
            start = deepest + 1
            // Without the C library's symbols the trampoline is a nameless libc frame.
            if start < frames.count, frames[start].name == nil, decisions[start]?.action == .library {
                frames[start].frame.role = .trampoline
                start += 1
            }
        }

        // A glibc backtrace printed by a signal handler: see `signalHandlerCut`.
        if start == 0, report.report.format == .glibc, let trampoline = signalHandlerCut(frames, decisions) {
            for index in 0..<trampoline { frames[index].frame.role = .reporter }
            frames[trampoline].frame.role = .trampoline
            start = trampoline + 1
        }

        var signatureFrames: [Int] = []
        var pendingLibrary: [Int] = []
        var appCount = 0
        var firstCandidates: [Int] = []  // frames usable when the stack has no app frame at all
        var done = false
        var lastConsidered: Int?  // the frame above, for `.repeated`
        for index in frames.indices.dropFirst(start) {
            let decision = decisions[index]
            if done { frames[index].frame.role = .notNeeded; continue }
            if decision?.action == .skip { frames[index].frame.role = .skipped; continue }
            if let previous = lastConsidered, frames[previous].name != nil, frames[previous].name == frames[index].name {
                frames[index].frame.role = .repeated
                continue
            }
            lastConsidered = index
            if decision?.action == .library {
                frames[index].frame.isApp = false
                if frames[index].name == nil {
                    frames[index].frame.role = .unresolvedLibrary
                    firstCandidates.append(index)
                    continue
                }
                pendingLibrary.append(index)
                firstCandidates.append(index)
                continue
            }
            // An app frame.
            if appCount == 0 {
                let context = pendingLibrary.suffix(rules.contextFrames)
                for library in pendingLibrary where !context.contains(library) { frames[library].frame.role = .libraryAboveContext }
                for library in context { frames[library].frame.role = .signature; signatureFrames.append(library) }
            } else {
                // Library frames between two app frames (a callback through qsort) are context too.
                for library in pendingLibrary { frames[library].frame.role = .signature; signatureFrames.append(library) }
            }
            pendingLibrary.removeAll()
            frames[index].frame.role = .signature
            signatureFrames.append(index)
            appCount += 1
            if appCount == rules.appFrames { done = true }
        }
        if appCount == 0 {
            // No frame of the app: the first frames of whatever ran (named ones first).
            let named = firstCandidates.filter { frames[$0].name != nil }
            let chosen = Array((named.isEmpty ? firstCandidates : named).prefix(rules.appFrames + rules.contextFrames))
            for index in firstCandidates { frames[index].frame.role = chosen.contains(index) ? .signature : .notNeeded }
            signatureFrames = chosen
        } else {
            // Library frames after the last app frame taken are not part of it.
            for library in pendingLibrary where frames[library].frame.role == .signature { frames[library].frame.role = .notNeeded }
        }
        for index in frames.indices where frames[index].frame.role == .signature && !signatureFrames.contains(index) {
            frames[index].frame.role = .notNeeded
        }
        signatureFrames.sort()
        let texts = signatureFrames.map { frames[$0].frame.text }
        let signature = texts.isEmpty ? emptySignature : texts.joined(separator: " | ")
        return CrashSignature(signature: signature, title: title(report.report.signal, texts.first), stack: stackIndex,
                              frames: frames.map(\.frame), framesNotExamined: notExamined)
    }

    /// The trampoline of a glibc `backtrace_symbols` report printed by a signal handler, when no
    /// rule named it: such a report starts with the frames of the function that called
    /// `backtrace()`, so its first C library frame that is followed by app frames, with no C
    /// library frame above it, is where the signal interrupted the program (`__restore_rt`,
    /// unnamed without the C library's symbols). Everything above it is the handler.
    static func signalHandlerCut(_ frames: [Candidate], _ decisions: [GroupingRule?]) -> Int? {
        let libc = GlobPattern("libc.so*")
        guard let first = frames.firstIndex(where: { $0.frame.module.map { libc?.matches($0) ?? false } ?? false }),
              first > 0, frames[first].name == nil else { return nil }
        let appBelow = frames[(first + 1)...].indices.contains { decisions[$0] == nil || decisions[$0]?.action == .app }
        return appBelow ? first : nil
    }

    /// The stack a signature comes from: the first stack marked crashed (a sanitizer's access
    /// stack, the crashed thread), else the first stack with frames.
    static func crashingStack(of report: CrashReport) -> Int? {
        report.stacks.firstIndex(where: { $0.crashed && !$0.frames.isEmpty })
            ?? report.stacks.firstIndex(where: { !$0.frames.isEmpty })
    }

    static func title(_ signal: String?, _ top: String?) -> String {
        let what = signal.map { $0.isEmpty ? "Crash" : $0 } ?? "Crash"
        return top.map { "\(what) in \($0)" } ?? what
    }

    /// How a name the report gives is spelled: the form tables store (`Demangler()`), which the
    /// engine's locations use by default.
    static let demangler = Demangler()

    /// A frame being decided, with what matching needs.
    struct Candidate {
        var frame: GroupingFrame
        /// The normalised function name, nil when unresolved.
        var name: String?
        var modulePath: String?
    }

    /// The frames of one stack, inline frames expanded, top first.
    static func expand(_ report: SymbolicatedReport, stack stackIndex: Int) -> ([Candidate], Int) {
        let stack = report.report.stacks[stackIndex]
        let resolutions = stackIndex < report.frames.count ? report.frames[stackIndex] : []
        var candidates: [Candidate] = []
        var notExamined = 0
        for (frameIndex, frame) in stack.frames.enumerated() {
            guard candidates.count < maximumFramesExamined else {
                notExamined = stack.frames.count - frameIndex
                break
            }
            let module = frame.module.flatMap { $0 < report.report.modules.count ? report.report.modules[$0] : nil }
            let resolution = frameIndex < resolutions.count ? resolutions[frameIndex] : nil
            let locations = resolution?.status == .ok ? resolution?.locations ?? [] : []
            if !locations.isEmpty && locations.allSatisfy({ !$0.function.isEmpty && $0.function != "??" }) {
                for (depth, location) in locations.enumerated() where candidates.count < maximumFramesExamined {
                    let name = FunctionNameNormalizer.normalizeRemembered(location.function, mangled: location.mangled.isEmpty ? nil : location.mangled)
                    let frame = GroupingFrame(frameIndex: frameIndex, inlineDepth: depth, inlined: depth < locations.count - 1,
                                              text: name.isEmpty ? location.function : name, function: location.function,
                                              module: module?.name, file: location.file.isEmpty ? nil : location.file,
                                              line: location.line, isApp: true, role: .notNeeded, rule: nil)
                    candidates.append(Candidate(frame: frame, name: name.isEmpty ? location.function : name, modulePath: module?.path))
                }
                continue
            }
            // Unresolved: the name the report gives (glibc's `func+0x…`), else module+offset.
            // The report's name is the symbol as the binary spells it (`_Z4drawIiEvv`): spelled by
            // the one naming rule, as a symbolicated frame's name is, so that both group alike.
            let mangled = frame.function.flatMap { $0.isEmpty || $0 == "??" ? nil : $0 }
            let reported = mangled.map { demangler.demangleOrSelf($0) }
            let name = reported.map { FunctionNameNormalizer.normalizeRemembered($0, mangled: mangled) }
            let text: String
            if let name, !name.isEmpty {
                text = name
            } else if let module, let offset = resolution?.moduleAddress ?? (frame.offsetBase == .virtualAddress ? frame.moduleOffset : nil) {
                text = "\(module.name)+0x\(String(offset, radix: 16))"
            } else if let module {
                text = "\(module.name)+?"
            } else {
                text = "<unknown>"
            }
            let grouping = GroupingFrame(frameIndex: frameIndex, inlineDepth: 0, inlined: false, text: text, function: reported,
                                         module: module?.name, file: nil, line: 0, isApp: true, role: .notNeeded, rule: nil)
            candidates.append(Candidate(frame: grouping, name: name.flatMap { $0.isEmpty ? nil : $0 }, modulePath: module?.path))
        }
        return (candidates, notExamined)
    }
}
