/// Constants: const generic arguments and array lengths.
extension RustV0Demangler {
    /// `<const>`; `inValue` means nested in another constant, where no braces are needed.
    mutating func printConstant(inValue: Bool) throws(Failure) {
        let tag = try next()
        try enter()
        // Only literals may stand bare as generic arguments; other expressions need `{…}`.
        var openedBrace = false
        func openBrace(_ decoder: inout RustV0Demangler) throws(Failure) {
            guard !inValue else { return }
            openedBrace = true
            try decoder.emit("{")
        }
        switch tag {
        case UInt8(ascii: "p"):  // placeholder
            try emit("_")
        case UInt8(ascii: "h"), UInt8(ascii: "t"), UInt8(ascii: "m"), UInt8(ascii: "y"), UInt8(ascii: "o"),
             UInt8(ascii: "j"):
            try printUnsignedLiteral()
        case UInt8(ascii: "a"), UInt8(ascii: "s"), UInt8(ascii: "l"), UInt8(ascii: "x"), UInt8(ascii: "n"),
             UInt8(ascii: "i"):
            if eat(UInt8(ascii: "n")) { try emit("-") }
            try printUnsignedLiteral()
        case UInt8(ascii: "b"):
            switch Self.integerValue(of: try hexDigits()) {
            case 0: try emit("false")
            case 1: try emit("true")
            default: throw .invalid
            }
        case UInt8(ascii: "c"):
            guard let value = Self.integerValue(of: try hexDigits()), let code = UInt32(exactly: value),
                  let scalar = Unicode.Scalar(code) else { throw .invalid }
            try printQuoted([scalar], quote: "'")
        case UInt8(ascii: "e"):
            // A `str` value: `*"…"`, since `"…"` alone would be a `&str`.
            try openBrace(&self)
            try emit("*")
            try printStringLiteral()
        case UInt8(ascii: "R"), UInt8(ascii: "Q"):
            if tag == UInt8(ascii: "R"), eat(UInt8(ascii: "e")) {
                // `&str` prints as the literal itself.
                try printStringLiteral()
            } else {
                try openBrace(&self)
                try emit(tag == UInt8(ascii: "R") ? "&" : "&mut ")
                try printConstant(inValue: true)
            }
        case UInt8(ascii: "A"):
            try openBrace(&self)
            try emit("[")
            try printList(separator: ", ") { (decoder: inout RustV0Demangler) throws(Failure) in
                try decoder.printConstant(inValue: true)
            }
            try emit("]")
        case UInt8(ascii: "T"):
            try openBrace(&self)
            try emit("(")
            let count = try printList(separator: ", ") { (decoder: inout RustV0Demangler) throws(Failure) in
                try decoder.printConstant(inValue: true)
            }
            if count == 1 { try emit(",") }
            try emit(")")
        case UInt8(ascii: "V"):  // an ADT value: unit, tuple-like or struct-like variant
            try openBrace(&self)
            try printPath(inValue: true)
            switch try next() {
            case UInt8(ascii: "U"):
                break
            case UInt8(ascii: "T"):
                try emit("(")
                try printList(separator: ", ") { (decoder: inout RustV0Demangler) throws(Failure) in
                    try decoder.printConstant(inValue: true)
                }
                try emit(")")
            case UInt8(ascii: "S"):
                try emit(" { ")
                try printList(separator: ", ") { (decoder: inout RustV0Demangler) throws(Failure) in
                    _ = try decoder.disambiguator()
                    let name = try decoder.identifier()
                    try decoder.emit(name)
                    try decoder.emit(": ")
                    try decoder.printConstant(inValue: true)
                }
                try emit(" }")
            default:
                throw .invalid
            }
        case UInt8(ascii: "B"):
            if let resume = try followBackReference() {
                try printConstant(inValue: inValue)
                returnFromBackReference(to: resume)
            }
        default:
            throw .invalid
        }
        if openedBrace { try emit("}") }
        leave()
    }

    /// An integer literal's hex digits, in decimal when they fit 64 bits, else as `0x…` verbatim.
    private mutating func printUnsignedLiteral() throws(Failure) {
        let digits = try hexDigits()
        if let value = Self.integerValue(of: digits) {
            try emit(decimal: value)
        } else {
            try emit("0x")
            try emit(bytes: digits)
        }
    }

    /// A `str` constant: hex digits, two per UTF-8 byte, printed as a quoted, escaped literal.
    private mutating func printStringLiteral() throws(Failure) {
        let digits = try hexDigits()
        guard digits.count % 2 == 0 else { throw .invalid }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = digits.startIndex
        while index < digits.endIndex {
            bytes.append(Self.nibble(digits[index]) << 4 | Self.nibble(digits[index + 1]))
            index += 2
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .invalid }
        try printQuoted(Array(text.unicodeScalars), quote: "\"")
    }

    /// Prints characters between quotes, escaped as Rust's `char::escape_debug` does, except that
    /// the other kind of quote is left alone.
    private mutating func printQuoted(_ scalars: [Unicode.Scalar], quote: Unicode.Scalar) throws(Failure) {
        try emit(scalar: quote)
        for scalar in scalars {
            switch scalar {
            case "\0": try emit("\\0")
            case "\t": try emit("\\t")
            case "\r": try emit("\\r")
            case "\n": try emit("\\n")
            case "\\": try emit("\\\\")
            case "\"", "'":
                if scalar == quote { try emit("\\") }
                try emit(scalar: scalar)
            default:
                if Self.needsUnicodeEscape(scalar) {
                    try emit("\\u{")
                    try emit(bytes: Array(String(scalar.value, radix: 16).utf8))
                    try emit("}")
                } else {
                    try emit(scalar: scalar)
                }
            }
        }
        try emit(scalar: quote)
    }

    /// Whether `escape_debug` writes `scalar` as `\u{…}`: grapheme extenders (which would attach to
    /// the quote) and what Rust deems unprintable, i.e. general categories Cc, Cf, Cs, Co, Cn, Zl,
    /// Zp and Zs other than the space (`core/src/unicode/printable.py`).
    static func needsUnicodeEscape(_ scalar: Unicode.Scalar) -> Bool {
        if scalar == " " { return false }
        let properties = scalar.properties
        if properties.isGraphemeExtend { return true }
        switch properties.generalCategory {
        case .control, .format, .surrogate, .privateUse, .unassigned, .lineSeparator, .paragraphSeparator,
             .spaceSeparator:
            return true
        default:
            return false
        }
    }

    /// The value of hex digits with leading zeros ignored, when it fits 64 bits.
    static func integerValue(of digits: ArraySlice<UInt8>) -> UInt64? {
        let significant = digits.drop { $0 == UInt8(ascii: "0") }
        guard significant.count <= 16 else { return nil }
        return significant.reduce(0) { $0 << 4 | UInt64(nibble($1)) }
    }

    /// The value of a lowercase hex digit already checked by `hexDigits()`.
    static func nibble(_ digit: UInt8) -> UInt8 {
        isDigit(digit) ? digit - UInt8(ascii: "0") : digit - UInt8(ascii: "a") + 10
    }
}
