/// Reads Android tombstones and logcat crash dumps.
enum TombstoneParser {
    static func frameStart(in line: Substring) -> Int? { nil }
    static func parse(_ lines: [Substring]) -> CrashReport {
        CrashReport(format: .tombstone, lines: lines)
    }
}
