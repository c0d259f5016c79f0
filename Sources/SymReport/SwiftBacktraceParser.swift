import SymBytes

/// Reads Swift runtime backtraces.
enum SwiftBacktraceParser {
    static func parseJSON(_ text: String) throws(FormatError) -> CrashReport {
        CrashReport(format: .swiftJSON)
    }
    static func parseText(_ lines: [Substring]) -> CrashReport {
        CrashReport(format: .swiftText, lines: lines)
    }
}
