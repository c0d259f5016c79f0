import SymBytes

/// A minimal streaming JSON writer that keeps keys in the order written (documented output
/// formats fix the key order, which `JSONEncoder` does not). Strings and integers are written by
/// SymBytes' `appendJSONString` and `appendDecimal`, as by the report writer (SymReport's
/// `JSONText`), so both spell them alike.
///
/// Why two writers: `JSONText` is the crash report's (docs/crash-report.md), on the hot path of
/// the CLI and the server: `StaticString` keys, `nil` as `null`, `"0x…"` members, nesting kept
/// in the bits of one integer, and members made once per module and spliced into every frame.
/// This one serves the other documents (command output, the server's API answers, the agent's
/// records): keys known at run time, public. Their output rules are the same; what differs is the
/// interface each caller needs.
public struct JSONWriter: Sendable {
    /// The UTF-8 bytes written so far.
    public private(set) var bytes: [UInt8] = []
    private var needsComma: [Bool] = [false]

    /// The text written so far.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// Creates an empty writer.
    public init() {}

    /// Creates an empty writer with room for `capacity` bytes (no regrowing below that).
    public init(capacity: Int) {
        bytes.reserveCapacity(capacity)
    }

    private mutating func separator() {
        if needsComma[needsComma.count - 1] { bytes.append(UInt8(ascii: ",")) }
        needsComma[needsComma.count - 1] = true
    }

    /// Opens an object (as a value, or under `key` inside an object).
    public mutating func beginObject(_ key: String? = nil) {
        separator()
        if let key { appendKey(key) }
        bytes.append(UInt8(ascii: "{"))
        needsComma.append(false)
    }

    /// Closes the current object.
    public mutating func endObject() {
        needsComma.removeLast()
        bytes.append(UInt8(ascii: "}"))
    }

    /// Opens an array.
    public mutating func beginArray(_ key: String? = nil) {
        separator()
        if let key { appendKey(key) }
        bytes.append(UInt8(ascii: "["))
        needsComma.append(false)
    }

    /// Closes the current array.
    public mutating func endArray() {
        needsComma.removeLast()
        bytes.append(UInt8(ascii: "]"))
    }

    /// Writes a string member.
    public mutating func field(_ key: String, _ value: String) {
        separator()
        appendKey(key)
        appendString(value)
    }

    /// Writes an integer member.
    public mutating func field(_ key: String, _ value: some BinaryInteger) {
        separator()
        appendKey(key)
        if let magnitude = UInt64(exactly: value) {
            appendDecimal(magnitude, to: &bytes)
        } else {
            bytes.append(contentsOf: "\(value)".utf8)
        }
    }

    /// Writes a boolean member.
    public mutating func field(_ key: String, _ value: Bool) {
        separator()
        appendKey(key)
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// Writes a null member.
    public mutating func fieldNull(_ key: String) {
        separator()
        appendKey(key)
        bytes.append(contentsOf: "null".utf8)
    }

    /// Writes a string element of an array.
    public mutating func value(_ value: String) {
        separator()
        appendString(value)
    }

    /// Writes an integer element of an array.
    public mutating func value(_ value: Int) {
        separator()
        if let magnitude = UInt64(exactly: value) {
            appendDecimal(magnitude, to: &bytes)
        } else {
            bytes.append(contentsOf: "\(value)".utf8)
        }
    }

    /// Writes a boolean element of an array.
    public mutating func value(_ value: Bool) {
        separator()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// Writes a null element of an array.
    public mutating func null() {
        separator()
        bytes.append(contentsOf: "null".utf8)
    }

    private mutating func appendKey(_ key: String) {
        appendString(key)
        bytes.append(UInt8(ascii: ":"))
    }

    private mutating func appendString(_ value: String) {
        var value = value
        value.withUTF8 { appendJSONString($0, to: &bytes) }
    }
}
