/// An error in input data or I/O, with a stable code, a message and where it went wrong.
public struct FormatError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable machine-readable error classes.
    public enum Code: String, Sendable {
        /// The input ended before a structure it declares.
        case truncated
        /// A magic number, version or identifier is not the expected one.
        case badMagic = "bad-magic"
        /// A value read from the input is out of its allowed range.
        case invalidValue = "invalid-value"
        /// A feature the reader does not implement.
        case unsupported
        /// Decompression failed or produced a size other than declared.
        case decompression
        /// The operating system refused an operation (open, mmap, write).
        case io
        /// A limit (size, count, depth) protecting against hostile input was exceeded.
        case limitExceeded = "limit-exceeded"
    }

    /// The error class.
    public var code: Code
    /// A human-readable, one-line explanation.
    public var message: String
    /// Byte offset into the input where the problem was found, when known.
    public var offset: UInt64?
    /// The file being read, when known.
    public var path: String?

    /// Creates an error.
    public init(_ code: Code, _ message: String, offset: UInt64? = nil, path: String? = nil) {
        self.code = code
        self.message = message
        self.offset = offset
        self.path = path
    }

    /// The same error, attributed to a file.
    public func at(path: String) -> FormatError {
        var copy = self
        if copy.path == nil { copy.path = path }
        return copy
    }

    public var description: String {
        var text = ""
        if let path { text += "\(path): " }
        text += message
        if let offset { text += " (at byte offset 0x\(String(offset, radix: 16)))" }
        return text
    }
}
