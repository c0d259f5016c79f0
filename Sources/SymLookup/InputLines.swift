#if canImport(Glibc)
import Glibc
#endif

/// Reads a file descriptor line by line. Every complete line of a read is handed over before the
/// next read, and `afterChunk` runs before blocking again, so a partner on a pipe that waits for
/// each answer gets it.
public enum InputLines {
    /// Longest line kept whole (1 MiB); no path and address come near it.
    public static let maximumLineLength = 1 << 20

    public static func forEachLine(of descriptor: Int32, _ body: (UnsafeRawBufferPointer) -> Void,
                            afterChunk: () -> Void) {
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            pending.append(contentsOf: chunk[0..<count])
            var lineStart = 0
            pending.withUnsafeBytes { bytes in
                var index = 0
                while index < bytes.count {
                    if bytes[index] == 0x0a {
                        body(UnsafeRawBufferPointer(rebasing: bytes[lineStart..<index]))
                        lineStart = index + 1
                    }
                    index += 1
                }
            }
            pending.removeFirst(lineStart)
            // A line without end cannot grow without bound: past the limit it is answered as it is.
            if pending.count > maximumLineLength {
                pending.withUnsafeBytes { body($0) }
                pending.removeAll(keepingCapacity: true)
            }
            afterChunk()
        }
        if !pending.isEmpty { pending.withUnsafeBytes { body($0) } }
        afterChunk()
    }
}
