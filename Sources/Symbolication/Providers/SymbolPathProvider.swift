import SymBytes
import SymELF
import SymReport
import Synchronization

/// One `--symbols` path: a directory of `.csym` tables and ELF files (searched by build-id, and
/// by name for reports without build-ids), a `.build-id/xx/rest.debug` tree, or a single file.
public final class SymbolPathProvider: SymbolProvider {
    /// The path as given.
    public let path: String
    /// The directory's files by build-id and name, read on first use.
    private let index = Mutex<DirectoryIndex?>(nil)

    /// A provider over `path`.
    public init(path: String) {
        self.path = path
    }

    public func find(_ module: ModuleQuery) -> SymbolAnswer {
        switch FileSystem.kind(of: path) {
        case .directory: return findInDirectory(module)
        case .file: return findFile(module)
        default: return .notFound([SymbolCandidate(source: .symbolsPath, location: path, outcome: .absent)])
        }
    }

    private func findInDirectory(_ module: ModuleQuery) -> SymbolAnswer {
        var answer = SymbolAnswer()
        if let id = module.buildID {
            let head = String(id.prefix(2)), rest = String(id.dropFirst(2))
            for candidate in ["\(path)/\(id).csym", "\(path)/.build-id/\(head)/\(rest).debug", "\(path)/\(head)/\(rest).debug"]
            where FileSystem.kind(of: candidate) == .file {
                if collect(module.inspect(candidate, source: .symbolsPath), into: &answer) { return answer }
            }
        }
        let index = directoryIndex()
        let matches = module.buildID.map { index.byBuildID[$0] ?? [] } ?? index.byName[module.name] ?? []
        if matches.isEmpty {
            answer.candidates.append(SymbolCandidate(source: .symbolsPath, location: path,
                                                     outcome: .noMatchingFile(buildID: module.buildID, name: module.name)))
        }
        for candidate in matches where !answer.candidates.contains(where: { $0.location == candidate }) {
            if collect(module.inspect(candidate, source: .symbolsPath), into: &answer) { return answer }
        }
        // Files of the module's name with another build-id say why nothing matched.
        if let id = module.buildID, let others = index.byName[module.name] {
            for other in others where !matches.contains(other) {
                answer.candidates.append(SymbolCandidate(
                    source: .symbolsPath, location: other,
                    outcome: .buildIDMismatch(other.hasSuffix(".csym") ? .table : .elf(hasDWARF: false),
                                              found: index.buildIDs[other], expected: id)))
            }
        }
        return answer
    }

    /// Adds an inspection to `answer`; true when it was a table (the search ends).
    private func collect(_ inspection: ModuleQuery.Inspection, into answer: inout SymbolAnswer) -> Bool {
        answer.merge(inspection.answer)
        return inspection.table != nil
    }

    /// A single file serves the module with its build-id; with another build-id it is a mismatch
    /// only when it bears the module's name (else it is another module's file).
    private func findFile(_ module: ModuleQuery) -> SymbolAnswer {
        guard let identity = Self.identify(path) else {
            // Named for the module: its table or ELF file, broken (the reason says how).
            let fileName = ReportModule.fileName(of: path)
            let named = [module.name, module.name + ".csym"] + (module.buildID.map { [$0 + ".csym", $0 + ".debug"] } ?? [])
            if named.contains(fileName) { return module.inspect(path, source: .symbolsPath).answer }
            return .notFound([SymbolCandidate(source: .symbolsPath, location: path, outcome: .notSymbolFile)])
        }
        let sameName = identity.name == module.name || ReportModule.fileName(of: path) == module.name
        if (module.buildID != nil && identity.buildID == module.buildID) || sameName {
            return module.inspect(path, source: .symbolsPath).answer
        }
        return .notFound([SymbolCandidate(source: .symbolsPath, location: path,
                                          outcome: .otherModule(name: identity.name, buildID: identity.buildID))])
    }

    /// The files under the path (or the path itself) that bear the module name `name`, each with
    /// its build-id (nil when it has none): what a module reported without a build-id could be.
    func files(named name: String) -> [(path: String, buildID: String?)] {
        switch FileSystem.kind(of: path) {
        case .directory:
            let index = directoryIndex()
            return (index.byName[name] ?? []).map { ($0, index.buildIDs[$0]) }
        case .file:
            guard let identity = Self.identify(path),
                  identity.name == name || ReportModule.fileName(of: path) == name else { return [] }
            return [(path, identity.buildID)]
        default:
            return []
        }
    }

    /// The build-id and module name of an ELF file or `.csym` table; nil for other files.
    static func identify(_ path: String) -> (buildID: String?, name: String)? {
        guard let prefix = FileSystem.prefix(of: path, count: 4), prefix.count == 4 else { return nil }
        if ELF.hasMagic(prefix) {
            guard let file = try? ELFFile(path: path) else { return nil }
            return (file.buildIDHex, ReportModule.fileName(of: path))
        }
        guard path.hasSuffix(".csym"), let table = try? ModuleSymbols(tableAt: path) else { return nil }
        let buildID = table.table.module.buildID
        return (buildID.isEmpty ? nil : hexString(buildID), table.table.module.name)
    }

    /// ELF files and tables under the directory, by build-id and by file name.
    struct DirectoryIndex: Sendable {
        var byBuildID: [String: [String]] = [:]
        var byName: [String: [String]] = [:]
        var buildIDs: [String: String] = [:]
    }

    private func directoryIndex() -> DirectoryIndex {
        index.withLock { known in
            if let known { return known }
            var index = DirectoryIndex()
            for file in FileSystem.files(under: path) {
                guard let identity = Self.identify(file) else { continue }
                if let id = identity.buildID {
                    index.byBuildID[id, default: []].append(file)
                    index.buildIDs[file] = id
                }
                index.byName[identity.name, default: []].append(file)
            }
            known = index
            return index
        }
    }
}

/// The `--symbols` paths together: a module reported without a build-id is found by its file
/// name, and when the paths hold files of that name from more than one build (or without
/// build-ids to tell them apart), which one the report means is unknown: every such file is an
/// `ambiguous` candidate and none is used (as the server does among the tables of a version),
/// instead of the first path's file being guessed. Otherwise the paths are asked in order.
public struct SymbolPathsProvider: SymbolProvider {
    /// One provider per path, in the order given.
    public let paths: [SymbolPathProvider]

    /// The providers over `paths`.
    public init(paths: [String]) {
        self.paths = paths.map(SymbolPathProvider.init(path:))
    }

    public func find(_ module: ModuleQuery) -> SymbolAnswer {
        if module.buildID == nil {
            var files: [(path: String, buildID: String?)] = []
            for provider in paths {
                for file in provider.files(named: module.name) where !files.contains(where: { $0.path == file.path }) {
                    files.append(file)
                }
            }
            // Files of one build (a binary, its debug file, its table) are one answer; a file
            // without a build-id cannot be shown to be of another's build.
            let builds = Set(files.map { $0.buildID ?? "\0" + $0.path })
            if builds.count > 1 {
                return .notFound(files.map {
                    SymbolCandidate(source: .symbolsPath, location: $0.path,
                                    outcome: .ambiguous(name: module.name, count: files.count))
                })
            }
        }
        return SymbolProviderChain(paths).find(module)
    }
}
