extension ReportWriter {
    /// The English line `--explain` prints for `candidate` (`<source> <location>: <outcome>`).
    public static func describe(_ candidate: SymbolCandidate) -> String {
        // "fetched from <server>" first (the issue's words), then where.
        if case .fetched = candidate.outcome { return "\(describe(candidate.outcome)): \(candidate.location)" }
        let place = candidate.location.isEmpty ? candidate.source.rawValue : "\(candidate.source.rawValue) \(candidate.location)"
        return "\(place): \(describe(candidate.outcome))"
    }

    /// The English for what a candidate turned out to be.
    public static func describe(_ outcome: SymbolCandidate.Outcome) -> String {
        switch outcome {
        case .matched(.table, let byName):
            return byName ? "symbol table, matched by name (the report gives no build-id)" : "symbol table, build-id matches"
        case .matched(.elf(let hasDWARF), let byName):
            return "ELF file, \(byName ? "matched by name (the report gives no build-id)" : "build-id matches")"
                + (hasDWARF ? ", with DWARF" : ", no DWARF")
        case .debugFileFound(let binary):
            return "found for \(binary)"
        case .buildIDMismatch(.table, let found, let expected):
            return "table for build-id \(found ?? "none"), the report says \(expected)"
        case .buildIDMismatch(.elf, let found, let expected):
            return "build-id \(found ?? "none"), the report says \(expected)"
        case .otherModule(let name, let buildID):
            return "\(name) with build-id \(buildID ?? "none"), another module"
        case .absent:
            return "not found"
        case .noMatchingFile(let buildID, let name):
            return "no file with \(buildID.map { "build-id \($0)" } ?? "name \(name)")"
        case .unreadable(let reason), .notStored(let reason):
            return reason
        case .fetched(let server, let earlier):
            return earlier ? "fetched from \(server) by an earlier run (kept in the cache), build-id matches"
                : "fetched from \(server), build-id matches"
        case .stored:
            return "written"
        case .notSymbolFile:
            return "neither an ELF file nor a .csym table"
        case .ambiguous(let name, let count):
            return "one of \(count) files named \(name): ambiguous without a build-id, not used"
        }
    }

    /// Why a module was not symbolicated when `candidate` (one of several files of its name) is
    /// the reason: the frame's one-line reason.
    public static func ambiguityReason(_ candidate: SymbolCandidate) -> String? {
        guard case .ambiguous(let name, let count) = candidate.outcome else { return nil }
        return "ambiguous: \(count) symbol files named \(name) and the report gives no build-id to tell them apart; not guessed"
    }

    /// Why a module was not symbolicated when `candidate` (a build-id mismatch) is the reason:
    /// the frame's one-line reason.
    public static func mismatchReason(_ candidate: SymbolCandidate) -> String? {
        guard case .buildIDMismatch(let kind, let found, let expected) = candidate.outcome else { return nil }
        return kind == .table
            ? "\(candidate.location) is for build-id \(found ?? "none"), the report says \(expected)"
            : "\(candidate.location) has build-id \(found ?? "none"), the report says \(expected)"
    }
}
