import SymTable
import Symbolication

/// String pieces both drop-in renderers (`SymbolizerRenderer`, `Addr2lineRenderer`) build from a
/// table, keyed for their per-module caches.
enum SymbolizerStrings {
    /// Output fragments both renderers print, as bytes, made once.
    static let hexPrefix = Array("0x".utf8)
    static let unknown = Array("??".utf8)
    static let newline = Array("\n".utf8)
    static let colon = Array(": ".utf8)
    static let at = Array(" at ".utf8)
    static let inlinedBy = Array(" (inlined by) ".utf8)

    /// A cache key for one table string.
    static func key(_ reference: StringRef) -> UInt64 {
        UInt64(reference.offset) << 32 | UInt64(reference.length)
    }

    /// A cache key for a (directory, file) pair: files are few, their offsets fit one key.
    static func key(_ directory: StringRef, _ file: StringRef) -> UInt64 {
        UInt64(directory.offset) << 32 | UInt64(file.offset)
    }

    /// The printed path of a frame's (directory, file), from `cache` or else joined, passed
    /// through `render` (base name, escaping) and stored there.
    static func path(_ table: SymbolTable, _ directory: StringRef, _ file: StringRef, cache: inout FrameRenderer.ByteCache,
                     render: ([UInt8]) -> [UInt8]) -> [UInt8] {
        let key = key(directory, file)
        if let cached = cache.value(key) { return cached }
        let bytes = render(FrameRenderer.joinedPath(table, directory, file))
        cache.store(key, bytes)
        return bytes
    }

    /// The last component of `path` (what `--basenames`/`-s` print).
    static func baseName(_ path: [UInt8]) -> [UInt8] {
        guard let slash = path.lastIndex(of: UInt8(ascii: "/")) else { return path }
        return Array(path[(slash + 1)...])
    }
}
