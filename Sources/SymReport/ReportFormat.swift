import SymBytes

/// The crash-report formats crashsym reads.
public enum ReportFormat: String, Sendable, CaseIterable {
    /// ASan, UBSan, TSan, MSan and LSan reports printed with `symbolize=0`.
    case sanitizer
    /// The Swift runtime backtracer's JSON crash log (`SWIFT_BACKTRACE=…,format=json`).
    case swiftJSON = "swift-json"
    /// The Swift runtime backtracer's text report, with its "Images" section.
    case swiftText = "swift-text"
    /// Android tombstones and logcat crash dumps (debuggerd).
    case tombstone
    /// glibc `backtrace_symbols` / `backtrace_symbols_fd` output.
    case glibc
    /// `eu-stack` output (elfutils) of a process or a core file, with or without `-b`, `-l`, `-q`.
    case euStack = "eu-stack"
    /// crashsym's own JSON crash report (docs/crash-report.md).
    case crashsymJSON = "crashsym-json"
    /// An ELF core file (`ET_CORE`), walked by crashsym: binary, never detected in text.
    case core
    /// A Breakpad/Crashpad minidump, walked by crashsym: binary, never detected in text.
    case minidump

    /// Whether the format is text reprinted in place (the JSON formats are not). A walked core
    /// or minidump is printed from the lines crashsym made for it, in `eu-stack -i`'s layout.
    public var isText: Bool { self != .swiftJSON && self != .crashsymJSON }

    /// Whether reports of the format are binary files (read through a mapping and walked).
    public var isBinary: Bool { self == .core || self == .minidump }

    /// The longest line accepted: longer lines are refused with an error naming them.
    public static let maximumLineLength = 1 << 20

    /// Recognises the format of `text`, or nil when none fits.
    public static func detect(_ text: String) -> ReportFormat? {
        var lines = 0
        var glibcLines = 0
        var found: ReportFormat?
        forEachLine(of: text) { line in
            if line.isEmpty { return true }
            lines += 1
            if lines > 4000 { return false }
            if lines == 1 && line.utf8.first(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0d }) == UInt8(ascii: "{") {
                if let value = try? JSONValue.parse(text) {
                    if value["threads"] != nil && value["images"] != nil { found = .swiftJSON }
                    if value["stacks"] != nil { found = .crashsymJSON }
                }
                return false
            }
            if line.utf8.count > 4096 { return true }
            let cursor = LineCursor(line)
            let trimmed = String(line).trimmed
            if trimmed.hasPrefix("*** *** *** *** ***") || TombstoneParser.frameStart(in: line) != nil {
                found = .tombstone
            } else if trimmed.hasPrefix("*** Program crashed:") || (trimmed.hasPrefix("Thread ") && trimmed.hasSuffix("crashed:")) {
                found = .swiftText
            } else if EuStackParser.isHeader(trimmed) {
                found = .euStack
            } else if cursor.find("Sanitizer:") != nil || cursor.find("runtime error:") != nil || SanitizerParser.isFrameLine(trimmed) {
                found = .sanitizer
            } else if GlibcBacktraceParser.frame(in: line) != nil {
                glibcLines += 1
            }
            return found == nil
        }
        return found ?? (glibcLines > 0 ? .glibc : nil)
    }

    /// Calls `body` with each line of `text` (without its `\n`) until it returns false.
    static func forEachLine(of text: String, _ body: (Substring) -> Bool) {
        let utf8 = text.utf8
        // Newline offsets found over contiguous bytes (native strings), then sliced by offset.
        let found: Void? = utf8.withContiguousStorageIfAvailable { buffer in
            var start = 0
            while start < buffer.count {
                var end = start
                while end < buffer.count && buffer[end] != 0x0a { end += 1 }
                let lower = utf8.index(utf8.startIndex, offsetBy: start), upper = utf8.index(lower, offsetBy: end - start)
                guard body(Substring(utf8[lower..<upper])) else { return }
                start = end + 1
            }
        }
        if found != nil { return }
        var start = utf8.startIndex
        while start < utf8.endIndex {
            let end = utf8[start...].firstIndex(of: 0x0a) ?? utf8.endIndex
            guard body(Substring(utf8[start..<end])) else { return }
            guard end < utf8.endIndex else { return }
            start = utf8.index(after: end)
        }
    }
}

extension CrashReport {
    /// Parses `text` in `format`, or in the detected format when nil. Unknown or malformed input
    /// gives an error naming the line; a frame line that cannot be read fully becomes a frame
    /// with a `problem`.
    public static func parse(_ text: String, format: ReportFormat? = nil) throws(FormatError) -> CrashReport {
        // A JSON document is parsed once: its members say which JSON format it is.
        if format == nil || format == .swiftJSON || format == .crashsymJSON,
           text.utf8.first(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0a && $0 != 0x0d }) == UInt8(ascii: "{") {
            let value = try JSONValue.parse(text)
            let report: CrashReport
            if format == .swiftJSON || (format == nil && value["threads"] != nil && value["images"] != nil) {
                report = try SwiftBacktraceParser.parseJSON(value: value)
            } else if format == .crashsymJSON || (format == nil && value["stacks"] != nil) {
                report = try CrashsymJSONParser.parse(value: value)
            } else {
                throw FormatError(.invalidValue, "a JSON document, but neither a Swift crash log (\"threads\" and \"images\") nor a crashsym report (\"stacks\")")
            }
            // A crashsym report may have no frames when it says why (`reason`): the agent's
            // record of a crash whose core it did not read (docs/agent.md, "Core dumps").
            guard report.frameCount > 0 || (report.format == .crashsymJSON && report.reason?.isEmpty == false) else {
                throw FormatError(.invalidValue, "no stack frames found in the \(report.format.rawValue) report")
            }
            return report
        }
        guard let format = format ?? ReportFormat.detect(text) else {
            let first = text.utf8.split(separator: 0x0a, maxSplits: 1, omittingEmptySubsequences: true).first.map { String(Substring($0)) } ?? ""
            if first.isEmpty { throw FormatError(.invalidValue, "empty report") }
            throw FormatError(.badMagic, "line 1: not a crash report crashsym knows (\(preview(first)))")
        }
        let report: CrashReport
        switch format {
        case .core, .minidump:
            throw FormatError(.invalidValue, "a \(format.rawValue) is a binary file, not text: pass its path (crashsym symbolicate FILE)")
        case .swiftJSON: report = try SwiftBacktraceParser.parseJSON(text)
        case .crashsymJSON: report = try CrashsymJSONParser.parse(text)
        default:
            let lines = try splitLines(text)
            switch format {
            case .sanitizer: report = SanitizerParser.parse(lines)
            case .glibc: report = GlibcBacktraceParser.parse(lines)
            case .euStack: report = EuStackParser.parse(lines)
            case .swiftText: report = SwiftBacktraceParser.parseText(lines)
            case .tombstone: report = TombstoneParser.parse(lines)
            case .swiftJSON, .crashsymJSON, .core, .minidump: fatalError("unreachable")
            }
        }
        guard report.frameCount > 0 else {
            throw FormatError(.invalidValue, "no stack frames found in the \(format.rawValue) report")
        }
        return report
    }

    /// The lines of `text` (without `\n` or a trailing `\r`); refuses lines over the limit.
    static func splitLines(_ text: String) throws(FormatError) -> [Substring] {
        var lines: [Substring] = []
        var failure: FormatError?
        ReportFormat.forEachLine(of: text) { line in
            guard line.utf8.count <= ReportFormat.maximumLineLength else {
                failure = FormatError(.limitExceeded, "line \(lines.count + 1) is longer than \(ReportFormat.maximumLineLength) bytes")
                return false
            }
            lines.append(line.utf8.last == 0x0d ? Substring(line.utf8.dropLast()) : line)
            return true
        }
        if let failure { throw failure }
        return lines
    }

    static func preview(_ line: String) -> String {
        let printable = String(line.unicodeScalars.prefix(60).map { $0.value < 0x20 || $0.value == 0x7f ? "?" : Character($0) })
        return "'" + printable + (line.unicodeScalars.count > 60 ? "…'" : "'")
    }
}
