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

    /// The build-id and module name of an ELF file or `.csym` table; nil for other files.
    static func identify(_ path: String) -> (buildID: String?, name: String)? {
        guard let prefix = FileSystem.prefix(of: path, count: 4), prefix.count == 4 else { return nil }
        if prefix == ModuleQuery.elfMagic {
            guard let file = try? ELFFile(path: path) else { return nil }
            return (file.buildIDHex, ReportModule.fileName(of: path))
        }
        guard path.hasSuffix(".csym"), let table = try? ModuleSymbols(tableAt: path) else { return nil }
        return (hexString(table.table.module.buildID), table.table.module.name)
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
