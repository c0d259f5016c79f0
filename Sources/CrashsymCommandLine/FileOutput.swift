import SymBytes
#if canImport(Glibc)
import Glibc
#endif

/// Buffered writes to a file descriptor (standard output by default), flushed explicitly, so
/// answering 100,000 lookups costs a few system calls rather than one per line.
public struct OutputBuffer {
    private var bytes: [UInt8] = []
    private let descriptor: Int32
    private let limit = 1 << 16

    /// Creates a buffer writing to `descriptor`.
    public init(descriptor: Int32 = STDOUT_FILENO) {
        self.descriptor = descriptor
        bytes.reserveCapacity(limit)
    }

    /// Appends `text`, flushing when the buffer is full.
    public mutating func write(_ text: String) {
        bytes.append(contentsOf: text.utf8)
        if bytes.count >= limit { flush() }
    }

    /// Writes out what is buffered.
    public mutating func flush() {
        FileOutput.writeAll(bytes, to: descriptor)
        bytes.removeAll(keepingCapacity: true)
    }
}

/// Unbuffered writes to the standard streams.
public enum FileOutput {
    /// Writes `text` to standard error.
    public static func standardError(_ text: String) {
        writeAll(Array(text.utf8), to: STDERR_FILENO)
    }

    /// Writes `text` to standard output.
    public static func standardOutput(_ text: String) {
        writeAll(Array(text.utf8), to: STDOUT_FILENO)
    }

    /// Writes all of `bytes` to `descriptor`, retrying interrupted writes.
    public static func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
        _ = bytes.withUnsafeBytes { FileIO.writeAll(descriptor, $0) }
    }

    /// Whether standard error is a terminal (progress bars go there).
    public static var standardErrorIsTerminal: Bool { isatty(STDERR_FILENO) != 0 }
}

/// A one-line progress bar on standard error, redrawn in place; silent unless on a terminal.
public struct ProgressBar: Sendable {
    /// Steps in all.
    public let total: Int
    /// Whether anything is drawn (a terminal, and enough steps).
    public let enabled: Bool
    /// Text before the bar.
    public let label: String

    /// Creates a bar for `total` steps; drawn only on a terminal and from `minimum` steps.
    public init(total: Int, label: String, minimum: Int = 4) {
        self.total = total
        self.label = label
        enabled = FileOutput.standardErrorIsTerminal && total >= minimum
    }

    /// Redraws the bar at `done` steps.
    public func update(_ done: Int) {
        guard enabled else { return }
        let width = 30
        let filled = total == 0 ? width : done * width / total
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        FileOutput.standardError("\r\(label) [\(bar)] \(done)/\(total)")
        if done == total { FileOutput.standardError("\n") }
    }
}
