import SymBytes

/// Whatever keeps an ELF file's bytes alive: a memory mapping or an owned heap buffer.
enum ByteStorage: Sendable {
    /// A read-only mapping of a file on disk.
    case mapped(MappedFile)
    /// Bytes copied or decompressed into memory this module owns.
    case owned(OwnedBuffer)

    /// The bytes; valid while the storage (and so its owner object) is alive.
    var bytes: UnsafeRawBufferPointer {
        switch self {
        case .mapped(let file): file.bytes
        case .owned(let buffer): buffer.bytes
        }
    }
}
