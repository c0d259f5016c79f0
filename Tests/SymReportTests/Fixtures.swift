import Foundation

/// The committed crash reports of Fixtures/reports (see its README).
enum Reports {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func path(_ name: String) -> String { root.appendingPathComponent("Fixtures/reports/" + name).path }

    static func text(_ name: String) throws -> String {
        try String(contentsOfFile: path(name), encoding: .utf8)
    }

    /// Every match of `pattern` in `text`, as capture groups (an independent reading of a report).
    static func matches(_ pattern: String, in text: String) throws -> [[String]] {
        let regex = try NSRegularExpression(pattern: pattern, options: [.anchorsMatchLines])
        let range = NSRange(text.startIndex..., in: text)
        return regex.matches(in: text, range: range).map { match in
            (0..<match.numberOfRanges).map { index in
                Range(match.range(at: index), in: text).map { String(text[$0]) } ?? ""
            }
        }
    }
}
