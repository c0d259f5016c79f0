/// The few facts read from S3's XML answers: the text of named elements, entities decoded. A
/// linear scan: S3 answers are flat and machine-written, so no general XML parser is needed,
/// and a hostile answer costs at most its length.
enum S3XML {
    /// The text of every `<tag>…</tag>` in `text`, in order.
    static func values(_ tag: String, in text: Substring) -> [Substring] {
        let open = "<\(tag)>", close = "</\(tag)>"
        var found: [Substring] = []
        var rest = text[...]
        while let start = rest.firstRange(of: open) {
            guard let end = rest[start.upperBound...].firstRange(of: close) else { break }
            found.append(rest[start.upperBound..<end.lowerBound])
            rest = rest[end.upperBound...]
        }
        return found
    }

    /// The first `<tag>` text, entities decoded.
    static func value(_ tag: String, in text: Substring) -> String? {
        values(tag, in: text).first.map(decode)
    }

    /// Decodes the five named entities and numeric character references.
    static func decode(_ text: Substring) -> String {
        guard text.contains("&") else { return String(text) }
        var output = ""
        var rest = text[...]
        while let amp = rest.firstIndex(of: "&") {
            output += rest[..<amp]
            guard let semicolon = rest[amp...].prefix(12).firstIndex(of: ";") else {
                output += "&"
                rest = rest[rest.index(after: amp)...]
                continue
            }
            let entity = rest[rest.index(after: amp)..<semicolon]
            var replacement: String?
            switch entity {
            case "amp": replacement = "&"
            case "lt": replacement = "<"
            case "gt": replacement = ">"
            case "quot": replacement = "\""
            case "apos": replacement = "'"
            default:
                if entity.hasPrefix("#x"), let code = UInt32(entity.dropFirst(2), radix: 16), let scalar = Unicode.Scalar(code) {
                    replacement = String(Character(scalar))
                } else if entity.hasPrefix("#"), let code = UInt32(entity.dropFirst()), let scalar = Unicode.Scalar(code) {
                    replacement = String(Character(scalar))
                }
            }
            if let replacement {
                output += replacement
                rest = rest[rest.index(after: semicolon)...]
            } else {
                output += "&"
                rest = rest[rest.index(after: amp)...]
            }
        }
        return output + rest
    }

    /// Escapes text for an element's content.
    static func escape(_ text: String) -> String {
        var output = ""
        for character in text {
            switch character {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "\"": output += "&quot;"
            default: output.append(character)
            }
        }
        return output
    }

    /// Seconds since 1970 of an ISO 8601 UTC time (`2026-11-26T18:23:34Z`, `….000Z`), or nil.
    static func epochSeconds(_ text: String) -> Int64? {
        let digits = Array(text.utf8)
        guard digits.count >= 20, digits[4] == UInt8(ascii: "-"), digits[7] == UInt8(ascii: "-"), digits[10] == UInt8(ascii: "T"),
              digits[13] == UInt8(ascii: ":"), digits[16] == UInt8(ascii: ":"), digits.last == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for byte in digits[range] {
                guard byte >= 0x30 && byte <= 0x39 else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
              let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        // Days from civil (Howard Hinnant's algorithm).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return days * 86_400 + hour * 3600 + minute * 60 + second
    }
}
