/// A bounded, printable excerpt of an input line for an error message, so that a hostile or
/// binary line (100 MB, NUL bytes, escape sequences) is never echoed whole to a terminal or log.
public enum InputPreview {
    /// Bytes of the line shown at most.
    public static let limit = 80

    /// The first `limit` bytes of `line` (line ends dropped), control and non-ASCII bytes as `\xNN`,
    /// followed by `… (N bytes)` when the line is longer.
    public static func quote(_ line: some Collection<UInt8>, limit: Int = Self.limit) -> String {
        var bytes = Array(line.prefix(limit + 2))
        var total = line.count
        while let last = bytes.last, last == 0x0a || last == 0x0d, bytes.count == total {
            bytes.removeLast()
            total -= 1
        }
        var text = ""
        for byte in bytes.prefix(limit) {
            if byte >= 0x20 && byte < 0x7f && byte != UInt8(ascii: "\\") {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else if byte == UInt8(ascii: "\\") {
                text += "\\\\"
            } else {
                let digits = Array("0123456789abcdef")
                text += "\\x" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 15)])
            }
        }
        if total > limit { text += "… (\(total) bytes)" }
        return text
    }

    /// `quote(_:)` of a string's UTF-8 bytes.
    public static func quote(_ text: String, limit: Int = Self.limit) -> String {
        quote(Array(text.utf8), limit: limit)
    }
}
