import SymBytes

extension ELFFile {
    /// The XXH64 of every byte of the file: what tells apart two files with one build-id (a
    /// hostile file carrying a genuine build-id, a rebuilt file whose build-id was not changed).
    /// Hashing reads the whole file once (about 5 ms for 24 MB); the conversion cache pays it
    /// per module and run, a small part of reading the module's DWARF.
    public var contentHash: UInt64 {
        ContentHash.xxh64(storage.bytes)
    }
}
