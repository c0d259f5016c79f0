import SymBytes
#if canImport(Glibc)
import Glibc
#endif

/// Messages of the front ends to standard error, written whole at once (the executable's
/// `FileOutput` is not visible here: SymLookup links no ArgumentParser).
enum StandardError {
    /// Writes `text` to standard error.
    static func write(_ text: String) {
        var copy = text
        _ = copy.withUTF8 { FileIO.writeAll(STDERR_FILENO, UnsafeRawBufferPointer($0)) }
    }
}
