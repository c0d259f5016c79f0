import SymTable

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

    /// The source path of a frame: the file name under its directory unless it is absolute;
    /// empty when the file is unknown.
    static func joinedPath(_ table: SymbolTable, _ directory: StringRef, _ file: StringRef) -> [UInt8] {
        var name: [UInt8] = [], folder: [UInt8] = []
        table.withUTF8(file) { name = Array($0) }
        table.withUTF8(directory) { folder = Array($0) }
        guard !name.isEmpty else { return [] }
        var joined: [UInt8] = []
        if !folder.isEmpty && name.first != UInt8(ascii: "/") {
            joined = folder
            if folder.last != UInt8(ascii: "/") { joined.append(UInt8(ascii: "/")) }
        }
        joined.append(contentsOf: name)
        return joined
    }

    /// The printed path of a frame's (directory, file), from `cache` or else joined, passed
    /// through `render` (base name, escaping) and stored there.
    static func path(_ table: SymbolTable, _ directory: StringRef, _ file: StringRef, cache: inout FrameRenderer.ByteCache,
                     render: ([UInt8]) -> [UInt8]) -> [UInt8] {
        let key = key(directory, file)
        if let cached = cache.value(key) { return cached }
        let bytes = render(joinedPath(table, directory, file))
        cache.store(key, bytes)
        return bytes
    }

    /// The last component of `path` (what `--basenames`/`-s` print).
    static func baseName(_ path: [UInt8]) -> [UInt8] {
        guard let slash = path.lastIndex(of: UInt8(ascii: "/")) else { return path }
        return Array(path[(slash + 1)...])
    }
}
