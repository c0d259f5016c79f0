import SymBytes

/// Reads crashsym's own JSON crash report.
enum CrashsymJSONParser {
    static func parse(_ text: String) throws(FormatError) -> CrashReport {
        CrashReport(format: .crashsymJSON)
    }
}
