/// Why the file at a module's path was refused as the image a core mapped there: a stable code,
/// a message, and the file. The walker decides it (`CoreFile.diskImage`); frames, `--explain` and
/// the JSON module object (`"refusal"`) show it.
public struct ModuleRefusal: Error, Sendable, Equatable, Hashable, CustomStringConvertible {
    /// Stable machine-readable refusal classes (the JSON `"code"`).
    public enum Code: String, Sendable, Hashable {
        /// The file starts like ELF but cannot be read as an ELF file (cut short, corrupt).
        case unreadableImage = "unreadable-image"
        /// The file reads as ELF but contradicts what the core says of the image's mappings
        /// (their places in its segments, its size, the read-only pages the core holds).
        case mappingMismatch = "mapping-mismatch"
    }

    /// The refusal class.
    public var code: Code
    /// One line saying what contradicts the core (it names `path` when the module's path is another).
    public var message: String
    /// The file refused.
    public var path: String

    /// Creates a refusal.
    public init(_ code: Code, _ message: String, path: String) {
        self.code = code
        self.message = message
        self.path = path
    }

    public var description: String { message }
}
