import SymBytes
import SymELF
import SymReport
import SymTable

/// A module a provider is asked about, and the one judgement of whether a file is that module's
/// (`check`): providers use it to say what they found, and the engine applies it again to every
/// answer, so no provider can hand it another build's symbols.
public struct ModuleQuery: Sendable {
    /// The GNU build-id (lowercase hex) the report gives; nil when it gives none.
    public var buildID: String?
    /// The module's file name.
    public var name: String
    /// The module's path as the report names it (may be relative or absent here).
    public var path: String
    /// The directory of the report file naming the module (absolute), nil when the report was
    /// not read from a file: a relative module path may be relative to it.
    public var reportDirectory: String?
    /// ELF files of the module found by the providers asked before this one (a debuglink
    /// provider reads the binary's `.gnu_debuglink`).
    public var objects: [ELFFile] = []
    /// Whether a provider asked before found a table: only ELF files that place its addresses
    /// are still of use (a provider may skip looking for DWARF).
    public var tableFound = false

    /// A query for the module with `buildID` (lowercase hex), `name` and `path`.
    public init(buildID: String?, name: String, path: String) {
        self.buildID = buildID
        self.name = name
        self.path = path
    }

    /// The query for a report's module.
    public init(_ module: ReportModule) {
        self.init(buildID: module.buildID, name: module.name, path: module.path)
    }

    /// What examining one file found: its candidate, and the table or ELF file when it is the
    /// module's.
    public struct Inspection: Sendable {
        /// What to report about the file.
        public var candidate: SymbolCandidate
        /// The module's table (nil: not a table, or not this module's).
        public var table: ModuleSymbols?
        /// The module's ELF file (nil: not ELF, or not this module's).
        public var object: ELFFile?

        /// The inspection as a provider's answer.
        public var answer: SymbolAnswer {
            SymbolAnswer(table: table, tableLocation: table == nil ? nil : candidate.location,
                         objects: object.map { [$0] } ?? [], candidates: [candidate])
        }
    }

    /// Examines the file at `path` (an ELF file or a `.csym` table, told apart by their bytes,
    /// whatever the file is named): whether it is this module's, as `source` reports it.
    /// A table is opened through `tables` when given (once however many threads ask).
    public func inspect(_ path: String, source: SymbolCandidate.Source, tables: OpenedTableCache? = nil) -> Inspection {
        func failed(_ reason: String) -> Inspection {
            Inspection(candidate: SymbolCandidate(source: source, location: path, outcome: .unreadable(reason: reason)))
        }
        guard let prefix = FileSystem.prefix(of: path, count: 4), prefix.count == 4 else { return failed("not readable") }
        if ELF.hasMagic(prefix) {
            do {
                let file = try ELFFile(path: path)
                let candidate = check(file, source: source)
                return Inspection(candidate: candidate, object: candidate.isMatch ? file : nil)
            } catch {
                return failed("\(error)")
            }
        }
        do {
            let symbols = try tables.map { cache throws(FormatError) in try cache.table(at: path) } ?? ModuleSymbols(tableAt: path)
            let candidate = check(symbols, at: path, source: source)
            return Inspection(candidate: candidate, table: candidate.isMatch ? symbols : nil)
        } catch {
            return failed("\(error)")
        }
    }

    /// The answer of the table file at `path` (see `inspect`): the table when it is this
    /// module's, else not-found with the reason.
    public func table(at path: String, source: SymbolCandidate.Source, opening tables: OpenedTableCache? = nil) -> SymbolAnswer {
        inspect(path, source: source, tables: tables).answer
    }

    /// Whether `file` is this module's ELF file: its build-id is the report's (by name, when the
    /// report gives none; the caller chose the file by name).
    public func check(_ file: ELFFile, source: SymbolCandidate.Source) -> SymbolCandidate {
        let found = file.buildIDHex
        let kind = SymbolCandidate.FileKind.elf(hasDWARF: file.hasDWARF)
        if let buildID, found != buildID {
            return SymbolCandidate(source: source, location: file.path, outcome: .buildIDMismatch(kind, found: found, expected: buildID))
        }
        return SymbolCandidate(source: source, location: file.path, outcome: .matched(kind, byName: buildID == nil))
    }

    /// Whether `symbols` (found at `location`) is this module's table: its header's build-id is
    /// the report's (by name, when the report gives none).
    public func check(_ symbols: ModuleSymbols, at location: String, source: SymbolCandidate.Source) -> SymbolCandidate {
        let found = symbols.buildIDHex
        if let buildID, found != buildID {
            return SymbolCandidate(source: source, location: location,
                                   outcome: .buildIDMismatch(.table, found: found.isEmpty ? nil : found, expected: buildID))
        }
        return SymbolCandidate(source: source, location: location, outcome: .matched(.table, byName: buildID == nil))
    }
}

extension SymbolCandidate {
    /// Whether the candidate is the module's symbols.
    var isMatch: Bool {
        switch outcome {
        case .matched, .fetched: return true
        default: return false
        }
    }
}
