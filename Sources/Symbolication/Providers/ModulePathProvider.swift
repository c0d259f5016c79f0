import SymReport

/// The module's own file at the path the report names, when it exists here (the build-id check
/// then tells whether it is the same build). A relative path (`./bin/app` in a glibc backtrace of
/// a program started that way) is tried against each base directory in order: the `--symbols`
/// directories, the directory of the report file (`ModuleQuery.reportDirectory`: a report kept
/// next to the program it came from), then the working directory.
public struct ModulePathProvider: SymbolProvider {
    /// Directories a relative module path is resolved against first, in order.
    public let baseDirectories: [String]
    /// The directory a relative module path is resolved against last (after the report's).
    public let workingDirectory: String?

    /// A provider of module paths, resolving relative ones against `baseDirectories`, the
    /// report's directory, then `workingDirectory`.
    public init(relativeTo baseDirectories: [String] = [], workingDirectory: String? = nil) {
        self.baseDirectories = baseDirectories
        self.workingDirectory = workingDirectory
    }

    public func find(_ module: ModuleQuery) -> SymbolAnswer {
        guard !module.path.isEmpty else { return SymbolAnswer() }
        var paths = [module.path]
        if !module.path.hasPrefix("/") {
            let bases = baseDirectories + [module.reportDirectory, workingDirectory].compactMap { $0 }
            paths = []
            for base in bases {
                let path = Self.join(base, module.path)
                if !paths.contains(path) { paths.append(path) }
            }
        }
        var answer = SymbolAnswer()
        for path in paths {
            guard FileSystem.kind(of: path) == .file else {
                answer.candidates.append(SymbolCandidate(source: .modulePath, location: path, outcome: .absent))
                continue
            }
            let inspection = module.inspect(path, source: .modulePath)
            answer.merge(inspection.answer)
            if inspection.object != nil || inspection.table != nil { break }
        }
        return answer
    }

    /// `relative` under `directory`, without its leading `./` components.
    static func join(_ directory: String, _ relative: String) -> String {
        var relative = Substring(relative)
        while relative.hasPrefix("./") { relative = relative.dropFirst(2).drop { $0 == "/" } }
        return directory.hasSuffix("/") ? directory + relative : directory + "/" + relative
    }
}
