/// A minimal streaming JSON writer that keeps keys in the order written (documented output
/// formats fix the key order, which `JSONEncoder` does not).
public struct JSONWriter: Sendable {
    /// The text written so far.
    public private(set) var text = ""
    private var needsComma: [Bool] = [false]

    /// Creates an empty writer.
    public init() {}

    private mutating func separator() {
        if needsComma[needsComma.count - 1] { text += "," }
        needsComma[needsComma.count - 1] = true
    }

    /// Opens an object (as a value, or under `key` inside an object).
    public mutating func beginObject(_ key: String? = nil) {
        separator()
        if let key { appendString(key); text += ":" }
        text += "{"
        needsComma.append(false)
    }

    /// Closes the current object.
    public mutating func endObject() {
        needsComma.removeLast()
        text += "}"
    }

    /// Opens an array.
    public mutating func beginArray(_ key: String? = nil) {
        separator()
        if let key { appendString(key); text += ":" }
        text += "["
        needsComma.append(false)
    }

    /// Closes the current array.
    public mutating func endArray() {
        needsComma.removeLast()
        text += "]"
    }

    /// Writes a string member.
    public mutating func field(_ key: String, _ value: String) {
        separator()
        appendString(key)
        text += ":"
        appendString(value)
    }

    /// Writes an integer member.
    public mutating func field(_ key: String, _ value: some BinaryInteger) {
        separator()
        appendString(key)
        text += ":\(value)"
    }

    /// Writes a boolean member.
    public mutating func field(_ key: String, _ value: Bool) {
        separator()
        appendString(key)
        text += value ? ":true" : ":false"
    }

    /// Writes a null member.
    public mutating func fieldNull(_ key: String) {
        separator()
        appendString(key)
        text += ":null"
    }

    private mutating func appendString(_ value: String) {
        text += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    text.unicodeScalars.append(scalar)
                }
            }
        }
        text += "\""
    }
}
