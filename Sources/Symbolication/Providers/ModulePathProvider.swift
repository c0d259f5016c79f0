import SymReport

/// The module's own file, at the absolute path the report names, when it exists here (the
/// build-id check then tells whether it is the same build).
public struct ModulePathProvider: SymbolProvider {
    /// A provider of module paths.
    public init() {}

    public func find(_ module: ModuleQuery) -> SymbolAnswer {
        guard module.path.hasPrefix("/") else { return SymbolAnswer() }
        guard FileSystem.kind(of: module.path) == .file else {
            return .notFound([SymbolCandidate(source: .modulePath, location: module.path, outcome: .absent)])
        }
        return module.inspect(module.path, source: .modulePath).answer
    }
}
