/// A name pattern of the grouping rules: literal text where `*` stands for any run of characters
/// (also none) and `?` for exactly one byte; `\*`, `\?` and `\\` are the literal characters.
///
/// Matching is linear in the name for a given pattern (literal segments found leftmost, no
/// backtracking), so an operator's pattern cannot make grouping slow: the pattern language has no
/// alternation or repetition of groups, unlike a regular expression.
public struct GlobPattern: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// The pattern as written.
    public let text: String
    /// Literal segments between stars (`nil` bytes in a segment are `?`).
    private let segments: [[UInt8?]]
    /// Whether the pattern starts with `*` (the first segment is not anchored at the start).
    private let leadingStar: Bool
    /// Whether the pattern ends with `*` (the last segment is not anchored at the end).
    private let trailingStar: Bool

    /// The longest pattern accepted (bytes).
    public static let maximumLength = 512

    /// Compiles `text`; nil when it is empty, too long, holds a control character or ends in a
    /// lone `\`.
    public init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= Self.maximumLength, !bytes.contains(where: { $0 < 0x20 || $0 == 0x7f }) else {
            return nil
        }
        var segments: [[UInt8?]] = [[]]
        var index = 0
        var leadingStar = false, trailingStar = false
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "*"):
                if index == 0 { leadingStar = true }
                if index == bytes.count - 1 { trailingStar = true }
                if !segments[segments.count - 1].isEmpty { segments.append([]) }
            case UInt8(ascii: "?"):
                segments[segments.count - 1].append(nil)
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { return nil }
                segments[segments.count - 1].append(bytes[index])
            default:
                segments[segments.count - 1].append(byte)
            }
            index += 1
        }
        if segments.last?.isEmpty == true && segments.count > 1 { segments.removeLast() }
        self.text = text
        self.segments = segments
        self.leadingStar = leadingStar
        self.trailingStar = trailingStar
    }

    /// The pattern as written.
    public var description: String { text }

    /// Whether the pattern has no `*` or `?`: it matches exactly one name, `literal`.
    var isLiteral: Bool { segments.count == 1 && !leadingStar && !trailingStar && !segments[0].contains(nil) }

    /// The one name a literal pattern matches (escapes resolved).
    var literal: String { String(decoding: segments.first?.compactMap { $0 } ?? [], as: UTF8.self) }

    public static func == (lhs: GlobPattern, rhs: GlobPattern) -> Bool { lhs.text == rhs.text }
    public func hash(into hasher: inout Hasher) { hasher.combine(text) }

    /// Whether the whole of `name` matches.
    public func matches(_ name: String) -> Bool {
        var name = name
        return name.withUTF8 { matches(bytes: $0) }
    }

    /// Whether the whole of `bytes` matches.
    func matches(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        // A pattern without stars is one segment anchored at both ends.
        let anchoredStart = !leadingStar, anchoredEnd = !trailingStar
        if segments.count == 1 && anchoredStart && anchoredEnd {
            return bytes.count == segments[0].count && Self.equal(segments[0], bytes, at: 0)
        }
        var position = 0
        var last = segments.count - 1
        var limit = bytes.count
        if anchoredEnd {
            // The last segment sits at the very end.
            let tail = segments[last]
            guard tail.count <= bytes.count, Self.equal(tail, bytes, at: bytes.count - tail.count) else { return false }
            limit = bytes.count - tail.count
            last -= 1
        }
        for (number, segment) in segments.enumerated() where number <= last {
            if number == 0 && anchoredStart {
                guard segment.count <= limit, Self.equal(segment, bytes, at: 0) else { return false }
                position = segment.count
                continue
            }
            // Leftmost occurrence: taking the earliest place never prevents a later segment.
            guard let found = Self.find(segment, in: bytes, from: position, before: limit) else { return false }
            position = found + segment.count
        }
        if segments.count == 1 && anchoredStart && !anchoredEnd { return true }
        return position <= limit
    }

    private static func equal(_ segment: [UInt8?], _ bytes: UnsafeBufferPointer<UInt8>, at start: Int) -> Bool {
        guard start >= 0, start + segment.count <= bytes.count else { return false }
        for (offset, expected) in segment.enumerated() {
            if let expected, bytes[start + offset] != expected { return false }
        }
        return true
    }

    private static func find(_ segment: [UInt8?], in bytes: UnsafeBufferPointer<UInt8>, from start: Int, before limit: Int) -> Int? {
        guard segment.count <= limit - start else { return nil }
        if segment.isEmpty { return start }
        var candidate = start
        while candidate + segment.count <= limit {
            if equal(segment, bytes, at: candidate) { return candidate }
            candidate += 1
        }
        return nil
    }
}
