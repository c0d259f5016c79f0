/// Percent-encoding of text put into one part of a URL (RFC 3986 §2.1): each UTF-8 byte outside
/// the characters the part allows becomes `%XX` (upper-case hex, §2.1 "should use uppercase").
/// The one encoder of the project: the agent, the upload client, the S3 client, webhook links and
/// the console all build URLs with it.
public enum PercentEncoding {
    /// Where the text goes.
    public enum Part: Sendable {
        /// One path segment (RFC 3986 §3.3 `segment = *pchar`): unreserved, sub-delims, `:` and
        /// `@` stay; `/` is encoded so the text stays one segment.
        case pathSegment
        /// One name or value of a query (§3.4 `query = *( pchar / "/" / "?" )`), less `&`, `=`
        /// and `+`, which `application/x-www-form-urlencoded` readers (the console's among them)
        /// take as separators and as a space.
        case queryComponent
        /// RFC 3986's unreserved characters alone (§2.3): what AWS Signature V4's canonical
        /// request requires of each path segment and query value (the S3 client's).
        case unreservedOnly
    }

    /// `text` with every byte `part` does not allow percent-encoded.
    public static func encode(_ text: String, as part: Part) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if allows(byte, in: part) {
                bytes.append(byte)
            } else {
                bytes.append(UInt8(ascii: "%"))
                bytes.append(hexDigits[Int(byte >> 4)])
                bytes.append(hexDigits[Int(byte & 0x0f)])
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// Whether `byte` is one of RFC 3986's unreserved characters (§2.3: letters, digits, `-._~`).
    public static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Whether `byte` may stand for itself in `part`.
    private static func allows(_ byte: UInt8, in part: Part) -> Bool {
        if isUnreserved(byte) { return true }
        if part == .unreservedOnly { return false }
        switch byte {
        // sub-delims (§2.2) and the other pchar (§3.3)
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"),
             UInt8(ascii: "*"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: ":"), UInt8(ascii: "@"):
            return true
        case UInt8(ascii: "&"), UInt8(ascii: "="), UInt8(ascii: "+"):
            return part == .pathSegment
        case UInt8(ascii: "/"), UInt8(ascii: "?"):
            return part == .queryComponent
        default:
            return false
        }
    }
}
