import SymBytes

/// A parsed JSON document (RFC 8259), for the JSON report formats. Objects keep member order.
public indirect enum JSONValue: Sendable, Equatable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number, kept as its text (addresses may not fit a `Double`).
    case number(String)
    /// A string, unescaped.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object, members in document order.
    case object([(String, JSONValue)])

    /// Structural equality (objects compare member by member, in order).
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.bool(a), .bool(b)): a == b
        case let (.number(a), .number(b)): a == b
        case let (.string(a), .string(b)): a == b
        case let (.array(a), .array(b)): a == b
        case let (.object(a), .object(b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// The member `key` of an object (nil for other values or a missing key).
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first(where: { $0.0 == key })?.1
    }

    /// The string, when this is one.
    public var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The elements, when this is an array.
    public var array: [JSONValue]? {
        if case .array(let values) = self { return values }
        return nil
    }

    /// The value when this is a boolean.
    public var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// A non-negative integer from a number, a decimal string or a `0x` hex string.
    public var unsigned: UInt64? {
        switch self {
        case .number(let text): return UInt64(text)
        case .string(let text):
            if text.hasPrefix("0x") || text.hasPrefix("0X") { return UInt64(text.dropFirst(2), radix: 16) }
            return UInt64(text)
        default: return nil
        }
    }

    /// The deepest nesting accepted: deeper input is refused, not recursed into.
    public static let maximumDepth = 128

    /// Parses `text` as one JSON document. Errors name the line and column.
    public static func parse(_ text: String) throws(FormatError) -> JSONValue {
        var parser = JSONParser(bytes: Array(text.utf8))
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == parser.bytes.count else { throw parser.error("trailing characters after the JSON value") }
        return value
    }
}

private struct JSONParser {
    let bytes: [UInt8]
    var index = 0

    func error(_ message: String) -> FormatError {
        var line = 1, column = 1
        for byte in bytes[0..<min(index, bytes.count)] {
            if byte == 0x0a { line += 1; column = 1 } else { column += 1 }
        }
        return FormatError(.invalidValue, "line \(line), column \(column): \(message)", offset: UInt64(index))
    }

    mutating func skipWhitespace() {
        while index < bytes.count, [0x20, 0x09, 0x0a, 0x0d].contains(bytes[index]) { index += 1 }
    }

    mutating func value(depth: Int) throws(FormatError) -> JSONValue {
        guard depth < JSONValue.maximumDepth else { throw error("nesting deeper than \(JSONValue.maximumDepth)") }
        guard index < bytes.count else { throw error("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            index += 1
            var members: [(String, JSONValue)] = []
            skipWhitespace()
            if index < bytes.count && bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a member name") }
                let key = try string()
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
                index += 1
                skipWhitespace()
                members.append((key, try value(depth: depth + 1)))
                skipWhitespace()
                guard index < bytes.count else { throw error("unexpected end of input in an object") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
                throw error("expected ',' or '}'")
            }
        case UInt8(ascii: "["):
            index += 1
            var elements: [JSONValue] = []
            skipWhitespace()
            if index < bytes.count && bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
            while true {
                skipWhitespace()
                elements.append(try value(depth: depth + 1))
                skipWhitespace()
                guard index < bytes.count else { throw error("unexpected end of input in an array") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(elements) }
                throw error("expected ',' or ']'")
            }
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true"); return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false"); return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let start = index
            index += 1
            while index < bytes.count, let byte = Optional(bytes[index]),
                  (byte >= 0x30 && byte <= 0x39) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e")
                    || byte == UInt8(ascii: "E") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") {
                index += 1
            }
            return .number(String(decoding: bytes[start..<index], as: UTF8.self))
        default:
            throw error("unexpected character")
        }
    }

    mutating func literal(_ word: String) throws(FormatError) {
        for byte in word.utf8 {
            guard index < bytes.count, bytes[index] == byte else { throw error("expected '\(word)'") }
            index += 1
        }
    }

    mutating func string() throws(FormatError) -> String {
        index += 1  // the opening quote
        var out: [UInt8] = []
        while true {
            guard index < bytes.count else { throw error("unterminated string") }
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { throw error("unterminated escape") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0c)
                case UInt8(ascii: "n"): out.append(0x0a)
                case UInt8(ascii: "r"): out.append(0x0d)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if scalar >= 0xD800 && scalar < 0xDC00, index + 1 < bytes.count,
                       bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") {
                        index += 2
                        let low = try hex4()
                        if low >= 0xDC00 && low < 0xE000 { scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00) }
                    }
                    out.append(contentsOf: String(Unicode.Scalar(scalar).map(Character.init) ?? "\u{FFFD}").utf8)
                default:
                    throw error("invalid escape")
                }
            case 0..<0x20:
                throw error("control character in a string")
            default:
                out.append(byte)
            }
        }
    }

    mutating func hex4() throws(FormatError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard index < bytes.count, let digit = LineCursor.hexValue(bytes[index]) else { throw error("invalid \\u escape") }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }
}

/// Appends JSON text as UTF-8 bytes: keys in the order written (documented formats fix the
/// order); strings without characters to escape are copied whole.
struct JSONText {
    var bytes: [UInt8] = []
    /// One bit per open container (up to 64 deep): whether it has a member yet.
    private var hasMembers: UInt64 = 0

    init(reserving capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    private mutating func separator(_ key: StaticString?) {
        if hasMembers & 1 != 0 { bytes.append(UInt8(ascii: ",")) }
        hasMembers |= 1
        if let key {
            bytes.append(UInt8(ascii: "\""))
            key.withUTF8Buffer { bytes.append(contentsOf: $0) }
            bytes.append(UInt8(ascii: "\""))
            bytes.append(UInt8(ascii: ":"))
        }
    }

    private mutating func open(_ byte: UInt8) { bytes.append(byte); hasMembers <<= 1 }
    private mutating func close(_ byte: UInt8) { bytes.append(byte); hasMembers >>= 1; hasMembers |= 1 }

    mutating func beginObject(_ key: StaticString? = nil) { separator(key); open(UInt8(ascii: "{")) }
    mutating func endObject() { close(UInt8(ascii: "}")) }
    mutating func beginArray(_ key: StaticString? = nil) { separator(key); open(UInt8(ascii: "[")) }
    mutating func endArray() { close(UInt8(ascii: "]")) }

    mutating func string(_ key: StaticString?, _ value: String?) {
        separator(key)
        guard var value else { append(Self.null); return }
        value.withUTF8 { appendJSONString($0, to: &bytes) }
    }

    /// A member whose key is only known at run time (metadata).
    mutating func member(_ key: String, _ value: String) {
        separator(nil)
        var key = key, value = value
        key.withUTF8 { appendJSONString($0, to: &bytes) }
        bytes.append(UInt8(ascii: ":"))
        value.withUTF8 { appendJSONString($0, to: &bytes) }
    }

    mutating func number(_ key: StaticString?, _ value: some BinaryInteger) {
        separator(key)
        guard let magnitude = UInt64(exactly: value) else {
            bytes.append(contentsOf: String(value).utf8)
            return
        }
        appendDecimal(magnitude, to: &bytes)
    }

    /// A `"0x…"` string member (or null), written without an intermediate `String`.
    mutating func hex(_ key: StaticString?, _ value: UInt64?) {
        separator(key)
        guard let value else { append(Self.null); return }
        append("\"0x")
        appendHex(value, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends members made by another `JSONText` (each led by its comma) to the current object,
    /// which already has a member.
    mutating func continueObject(with members: [UInt8]) {
        bytes.append(contentsOf: members)
    }

    /// Appends members written out in static text (each led by its comma) to the current object,
    /// which already has a member.
    mutating func continueObject(with members: StaticString) {
        members.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func bool(_ key: StaticString?, _ value: Bool) { separator(key); append(value ? Self.true : Self.false) }
    mutating func null(_ key: StaticString?) { separator(key); append(Self.null) }

    private mutating func append(_ text: StaticString) { text.withUTF8Buffer { bytes.append(contentsOf: $0) } }

    // Static text, not arrays: a shared array's reference count would bounce between threads.
    private static let null: StaticString = "null", `true`: StaticString = "true", `false`: StaticString = "false"
}
