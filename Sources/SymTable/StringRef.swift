/// A string inside a symbol table's string data: an offset and a length, resolved with
/// `SymbolTable.string(_:)` or `SymbolTable.withUTF8(_:_:)` of the table it came from.
public struct StringRef: Sendable, Hashable {
    /// Offset of the first UTF-8 byte within the table's string data.
    public let offset: UInt32
    /// Number of UTF-8 bytes.
    public let length: UInt32

    /// The empty string (valid in every table).
    public static let empty = StringRef(offset: 0, length: 0)

    /// Creates a reference; only the reader makes references that point at real strings.
    init(offset: UInt32, length: UInt32) {
        self.offset = offset
        self.length = length
    }

    /// Whether the string has no bytes.
    public var isEmpty: Bool { length == 0 }
}
