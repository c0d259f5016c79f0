/// Value checks shared by the bundle validator and the server (URLs, queries).
extension BundleManifest {
    /// Whether `text` is a build-id in the canonical form: lowercase hex, an even number of digits,
    /// 2 to 128 of them (GNU build-ids are 8 to 64 bytes in practice: 20 for SHA-1, 16 for MD5).
    public static func isBuildID(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard utf8.count >= 2, utf8.count <= 128, utf8.count % 2 == 0 else { return false }
        return utf8.allSatisfy { ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "f")) }
    }

    /// Whether `text` is 1 to 128 characters of `[A-Za-z0-9._-]`, not starting with a dot.
    public static func isIdentifier(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.count <= 128, utf8.first != UInt8(ascii: ".") else { return false }
        return utf8.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }

    /// Whether `text` is a version: 1 to 128 characters of `[A-Za-z0-9._+-]`, not starting with a dot.
    public static func isVersion(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.count <= 128, utf8.first != UInt8(ascii: ".") else { return false }
        return utf8.allSatisfy {
            isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "+")
        }
    }

    /// Whether `text` is a package identifier: at most 255 bytes (may be empty), no control
    /// characters (line breaks, NUL, escapes), so it prints on one line and stores as it is.
    public static func isPackage(_ text: String) -> Bool {
        let utf8 = text.utf8
        return utf8.count <= 255 && !utf8.contains { $0 < 0x20 || $0 == 0x7f } && !text.unicodeScalars.contains {
            $0.properties.generalCategory == .control || $0 == "\u{2028}" || $0 == "\u{2029}" || $0 == "\u{85}"
        }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
    }

    static func isSHA256(_ text: String) -> Bool {
        text.utf8.count == 64 && isBuildID(text)
    }
}
