/// One place a symbol provider looked for a module's symbols, and what it found there: data,
/// which `ReportWriter` turns into English for `--explain` (`ReportWriter.describe(_:)`).
public struct SymbolCandidate: Sendable, Equatable {
    /// Which source tried the candidate: `--symbols`, `module path`, `debug directory`, … A
    /// provider of another kind names itself (`store`, a server's URL).
    public struct Source: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        /// A `--symbols` path (directory, `.build-id/` tree or single file).
        public static let symbolsPath = Source(rawValue: "--symbols")
        /// The persistent conversion cache.
        public static let cache = Source(rawValue: "cache")
        /// The module's own path as the report names it.
        public static let modulePath = Source(rawValue: "module path")
        /// A debug directory's `.build-id/` tree.
        public static let debugDirectory = Source(rawValue: "debug directory")
        /// A separate debug file found through `.gnu_debuglink` (or by build-id) for a binary.
        public static let debugLink = Source(rawValue: "debug file")
    }

    /// The kind of file a candidate is.
    public enum FileKind: Sendable, Equatable {
        /// A `.csym` symbol table.
        case table
        /// An ELF file (`hasDWARF`: it carries DWARF debug information).
        case elf(hasDWARF: Bool)
    }

    /// What the candidate turned out to be.
    public enum Outcome: Sendable, Equatable {
        /// The module's symbols: its build-id matches, or without a build-id in the report, its name.
        case matched(FileKind, byName: Bool)
        /// A separate debug file, found for the binary at `binary`.
        case debugFileFound(binary: String)
        /// A file of the module's name (or at its path) with another build-id (`found`; nil: none).
        case buildIDMismatch(FileKind, found: String?, expected: String)
        /// A file of another module (`name`, `buildID`), not a mismatch.
        case otherModule(name: String, buildID: String?)
        /// Nothing at the location.
        case absent
        /// A directory searched without a file of the module's build-id (or, without one, name).
        case noMatchingFile(buildID: String?, name: String)
        /// The module's file (chosen by build-id, name or path) is there but cannot be read as
        /// symbols (`reason`): the frames say `corrupt-symbols`.
        case unreadable(reason: String)
        /// A file of unknown module that is neither an ELF file nor a `.csym` table.
        case notSymbolFile
        /// One of `count` files that match a module reported without a build-id by its name
        /// alone: which is the module's cannot be told, so none is used (not guessed).
        case ambiguous(name: String, count: Int)
        /// The module's table, fetched from the crashsym server `server` (by this run, or by an
        /// earlier one and kept in the cache: `earlier`); its build-id matches.
        case fetched(server: String, earlier: Bool)
        /// The engine wrote the module's converted table there (the conversion cache).
        case stored
        /// The engine could not write the converted table (`reason`).
        case notStored(reason: String)
    }

    /// Which source tried it.
    public var source: Source
    /// Where: a path, a URL or a store key (empty when the source has no single location).
    public var location: String
    /// What was found.
    public var outcome: Outcome

    /// Creates a candidate.
    public init(source: Source, location: String, outcome: Outcome) {
        self.source = source
        self.location = location
        self.outcome = outcome
    }

    /// Whether the candidate is the module's file, unreadable.
    public var isUnreadable: Bool {
        if case .unreadable = outcome { return true }
        return false
    }

    /// Whether the candidate is one of several files that share the module's name.
    public var isAmbiguous: Bool {
        if case .ambiguous = outcome { return true }
        return false
    }

    /// Whether the candidate is a file of the module with another build-id.
    public var isBuildIDMismatch: Bool {
        if case .buildIDMismatch = outcome { return true }
        return false
    }
}
