#if canImport(Glibc)
import Glibc
#endif

/// Buffered writes to a file descriptor (standard output by default), flushed explicitly, so
/// answering 100,000 lookups costs a few system calls rather than one per line.
struct OutputBuffer {
    private var bytes: [UInt8] = []
    private let descriptor: Int32
    private let limit = 1 << 16

    init(descriptor: Int32 = STDOUT_FILENO) {
        self.descriptor = descriptor
        bytes.reserveCapacity(limit)
    }

    mutating func write(_ text: String) {
        bytes.append(contentsOf: text.utf8)
        if bytes.count >= limit { flush() }
    }

    mutating func flush() {
        FileOutput.writeAll(bytes, to: descriptor)
        bytes.removeAll(keepingCapacity: true)
    }
}

/// Unbuffered writes to the standard streams.
enum FileOutput {
    /// Writes `text` to standard error.
    static func standardError(_ text: String) {
        writeAll(Array(text.utf8), to: STDERR_FILENO)
    }

    /// Writes `text` to standard output.
    static func standardOutput(_ text: String) {
        writeAll(Array(text.utf8), to: STDOUT_FILENO)
    }

    static func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }

    /// Whether standard error is a terminal (progress bars go there).
    static var standardErrorIsTerminal: Bool { isatty(STDERR_FILENO) != 0 }
}

/// A one-line progress bar on standard error, redrawn in place; silent unless on a terminal.
struct ProgressBar: Sendable {
    let total: Int
    let enabled: Bool
    let label: String

    init(total: Int, label: String, minimum: Int = 4) {
        self.total = total
        self.label = label
        enabled = FileOutput.standardErrorIsTerminal && total >= minimum
    }

    func update(_ done: Int) {
        guard enabled else { return }
        let width = 30
        let filled = total == 0 ? width : done * width / total
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        FileOutput.standardError("\r\(label) [\(bar)] \(done)/\(total)")
        if done == total { FileOutput.standardError("\n") }
    }
}
