/// Reads `eu-stack -b -l` output (elfutils).
enum EuStackParser {
    static func parse(_ lines: [Substring]) -> CrashReport {
        CrashReport(format: .euStack, lines: lines)
    }
}
