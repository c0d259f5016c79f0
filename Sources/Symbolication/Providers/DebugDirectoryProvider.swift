import SymELF
import SymReport

/// Separate debug files: by build-id in the debug directories' `.build-id/` trees, then through
/// the `.gnu_debuglink` of a binary found by an earlier provider (`DebugFileLocator`).
public struct DebugDirectoryProvider: SymbolProvider {
    /// The debug directories and the debuglink rules.
    public let locator: DebugFileLocator

    /// A provider over `locator`'s directories.
    public init(locator: DebugFileLocator) {
        self.locator = locator
    }

    public func find(_ module: ModuleQuery) -> SymbolAnswer {
        // Debug files carry DWARF: of no use beside a table already found.
        guard !module.tableFound else { return SymbolAnswer() }
        var answer = SymbolAnswer()
        if let id = module.buildID {
            let head = String(id.prefix(2)), rest = String(id.dropFirst(2))
            for directory in locator.debugDirectories {
                let candidate = directory.hasSuffix(".build-id")
                    ? "\(directory)/\(head)/\(rest).debug" : "\(directory)/.build-id/\(head)/\(rest).debug"
                if FileSystem.kind(of: candidate) == .file {
                    answer.merge(module.inspect(candidate, source: .debugDirectory).answer)
                } else {
                    answer.candidates.append(SymbolCandidate(source: .debugDirectory, location: candidate, outcome: .absent))
                }
            }
        }
        let objects = module.objects + answer.objects
        if !objects.contains(where: { $0.hasDWARF }), let binary = objects.first, let debug = locator.locate(for: binary) {
            answer.candidates.append(SymbolCandidate(source: .debugLink, location: debug.path,
                                                     outcome: .debugFileFound(binary: binary.path)))
            answer.objects.append(debug)
        }
        return answer
    }
}
