/// Rust's legacy mangling: an Itanium-style nested name (`_ZN` length-prefixed elements `E`) whose
/// elements carry Rust punctuation as `$`-escapes and whose last element is the crate hash.
///
/// Output follows `rustc-demangle`'s alternate form (`{:#}`): elements joined by `::`, escapes
/// decoded, the hash dropped, and a trailing `.suffix` kept.
enum RustLegacyDemangler {
    /// Whether `bytes` is a legacy Rust symbol: a well-formed `_ZN…E` whose last element is
    /// `17h` and 16 hex digits, followed by nothing or a `.suffix`. Without the hash the name is
    /// left to the Itanium demangler, which reads hashless paths the same way.
    static func recognizes(_ bytes: [UInt8]) -> Bool {
        // `parse` wants one of these prefixes, which dropping a suffix leaves as it is: checking
        // first spares every Swift and C name the suffix scan.
        guard bytes.starts(with: "_ZN".utf8) || bytes.starts(with: "__ZN".utf8) else { return false }
        return parse(RustSymbolSuffix.droppingLLVMSuffix(bytes)) != nil
    }

    /// Demangles a legacy Rust symbol; `nil` when `bytes` is not one.
    static func demangle(_ bytes: [UInt8]) -> String? {
        let symbol = RustSymbolSuffix.droppingLLVMSuffix(bytes)
        guard let parsed = parse(symbol) else { return nil }
        var output: [UInt8] = []
        // The hash is the last element and is not printed.
        for (index, element) in parsed.elements.dropLast().enumerated() {
            if index > 0 { output.append(contentsOf: "::".utf8) }
            appendUnescaped(element, to: &output)
        }
        output.append(contentsOf: parsed.suffix)
        return String(decoding: output, as: UTF8.self)
    }

    /// The elements (as ranges of the input) and the suffix after the closing `E`.
    private static func parse(_ symbol: ArraySlice<UInt8>) -> (elements: [ArraySlice<UInt8>], suffix: ArraySlice<UInt8>)? {
        var rest = symbol
        if rest.starts(with: "_ZN".utf8) {
            rest = rest.dropFirst(3)
        } else if rest.starts(with: "__ZN".utf8) {
            rest = rest.dropFirst(4)
        } else {
            return nil
        }
        // rustc emits ASCII only; anything else is some other producer's name.
        guard rest.allSatisfy({ $0 < 0x80 }) else { return nil }
        var elements: [ArraySlice<UInt8>] = []
        while let first = rest.first, first != UInt8(ascii: "E") {
            var length = 0
            while let digit = rest.first, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) {
                let (scaled, overflow) = length.multipliedReportingOverflow(by: 10)
                guard !overflow, scaled <= rest.count else { return nil }
                length = scaled + Int(digit - UInt8(ascii: "0"))
                rest = rest.dropFirst()
            }
            guard length > 0, length <= rest.count else { return nil }
            elements.append(rest.prefix(length))
            rest = rest.dropFirst(length)
        }
        guard rest.first == UInt8(ascii: "E"), elements.count >= 2, let hash = elements.last,
              isHash(hash) else { return nil }
        let suffix = rest.dropFirst()
        guard RustSymbolSuffix.isAcceptable(suffix) else { return nil }
        return (elements, suffix)
    }

    /// `h` and 16 lowercase hex digits: the 64-bit hash rustc appends to every legacy symbol.
    private static func isHash(_ element: ArraySlice<UInt8>) -> Bool {
        element.count == 17 && element.first == UInt8(ascii: "h")
            && element.dropFirst().allSatisfy { hexValue(of: $0) != nil }
    }

    /// The value of a lowercase hex digit.
    private static func hexValue(of byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(byte - UInt8(ascii: "a") + 10)
        default: return nil
        }
    }

    /// Appends one element with its escapes decoded (rustc `symbol_names/legacy.rs`, `sanitize`):
    /// `..` is `::`, `$XX$` stands for punctuation, `$u<hex>$` for any other character. An element
    /// may start with `_` to keep it from starting with `$`. Decoding stops at the first escape it
    /// does not understand and copies the rest verbatim, as `rustc-demangle` does.
    private static func appendUnescaped(_ element: ArraySlice<UInt8>, to output: inout [UInt8]) {
        var rest = element
        if rest.starts(with: "_$".utf8) { rest = rest.dropFirst() }
        while let first = rest.first {
            if first == UInt8(ascii: ".") {
                if rest.dropFirst().first == UInt8(ascii: ".") {
                    output.append(contentsOf: "::".utf8)
                    rest = rest.dropFirst(2)
                } else {
                    output.append(first)
                    rest = rest.dropFirst()
                }
            } else if first == UInt8(ascii: "$") {
                guard let end = rest.dropFirst().firstIndex(of: UInt8(ascii: "$")),
                      let decoded = unescape(rest[(rest.startIndex + 1)..<end]) else { break }
                output.append(contentsOf: decoded)
                rest = rest[(end + 1)...]
            } else {
                let end = rest.firstIndex { $0 == UInt8(ascii: "$") || $0 == UInt8(ascii: ".") } ?? rest.endIndex
                output.append(contentsOf: rest[..<end])
                rest = rest[end...]
            }
        }
        output.append(contentsOf: rest)
    }

    /// The UTF-8 text an escape (between its `$`s) stands for, or `nil` if it is not one.
    private static func unescape(_ escape: ArraySlice<UInt8>) -> [UInt8]? {
        switch String(decoding: escape, as: UTF8.self) {
        case "SP": return Array("@".utf8)
        case "BP": return Array("*".utf8)
        case "RF": return Array("&".utf8)
        case "LT": return Array("<".utf8)
        case "GT": return Array(">".utf8)
        case "LP": return Array("(".utf8)
        case "RP": return Array(")".utf8)
        case "C": return Array(",".utf8)
        default:
            guard escape.first == UInt8(ascii: "u"), escape.count > 1 else { return nil }
            var value: UInt32 = 0
            for byte in escape.dropFirst() {
                // Leading zeros are allowed; a value past the last code point is not.
                guard let digit = hexValue(of: byte), value <= 0x10FFFF else { return nil }
                value = value << 4 | digit
            }
            // Control characters stay escaped so a name cannot carry terminal control codes.
            guard let scalar = Unicode.Scalar(value), scalar.properties.generalCategory != .control else {
                return nil
            }
            return Array(String(Character(scalar)).utf8)
        }
    }
}
