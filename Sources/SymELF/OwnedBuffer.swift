#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import SymBytes

/// Heap bytes owned by one object: a copy of caller-provided input or a decompressed section.
// The audited `@unchecked Sendable` wrapper of SymELF (STYLE.md rule 11): the memory is written
// only inside `init` (before the object can be shared) and freed only in `deinit`; every other
// access is a read, so concurrent use from several threads cannot race.
final class OwnedBuffer: @unchecked Sendable {
    /// Start of the allocation; never nil, even for zero bytes.
    private let base: UnsafeMutableRawPointer
    /// Number of meaningful bytes.
    let count: Int

    /// Allocates `count` bytes and lets `fill` write all of them; the buffer is freed if it throws.
    ///
    /// Uses `malloc` rather than Swift allocation so that an allocation refused by the system
    /// becomes a `FormatError` instead of a trap.
    init(count: Int, fill: (UnsafeMutableRawBufferPointer) throws(FormatError) -> Void) throws(FormatError) {
        precondition(count >= 0, "negative buffer size")
        guard let pointer = malloc(max(count, 1)) else {
            throw FormatError(.limitExceeded, "cannot allocate \(count) bytes")
        }
        do {
            try fill(UnsafeMutableRawBufferPointer(start: pointer, count: count))
        } catch {
            free(pointer)
            throw error
        }
        base = pointer
        self.count = count
    }

    /// Takes ownership of `count` bytes at `pointer`, which `malloc` or `realloc` returned.
    init(adopting pointer: UnsafeMutableRawPointer, count: Int) {
        precondition(count >= 0, "negative buffer size")
        base = pointer
        self.count = count
    }

    /// Copies `bytes`.
    convenience init(copying bytes: UnsafeRawBufferPointer) throws(FormatError) {
        try self.init(count: bytes.count) { destination in
            if let source = bytes.baseAddress, bytes.count > 0 {
                destination.baseAddress!.copyMemory(from: source, byteCount: bytes.count)
            }
        }
    }

    deinit {
        free(base)
    }

    /// The owned bytes; valid while this object is alive.
    var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base, count: count)
    }
}
