/// How crashsym spells demangled Swift names.
public enum SwiftNameStyle: String, Sendable, CaseIterable {
    /// As `swift-demangle` prints them by default: module-qualified, with argument and result
    /// types, sugared types (`[Swift.String]`, `[Swift.String : Swift.Int]`, `Swift.Int?`).
    case full
    /// The Swift backtracer's short form (`Matrix.at(_:_:)`): the runtime's own simplified
    /// spelling, without modules, argument types or specialization details.
    case simplified
}
