/// Splits a stream of text lines (a log, `adb logcat`, `tail -f`) into what can be printed at once
/// and the crash reports inside it, each handed over as soon as it ends: its last frame line
/// followed by a line that is not part of it, a pause of the input (`pause()`), or the end.
/// Pure: the caller reads, symbolicates and prints.
///
/// Every line is handed back exactly once, in order, in a `.text` piece (print as is) or a
/// `.report` piece (parse, symbolicate, print; print as is if it does not parse). A report's
/// lines are what its format needs read together: a sanitizer, glibc or tombstone report runs
/// from its headline (or first frame) to its last frame line (each frame line stands alone, so a
/// report cut at a blank line between two stacks reprints exactly as a whole); an eu-stack report
/// keeps its module map, threads and `-b` lines together; a Swift backtrace runs to the end of its
/// "Images" list, which follows the frames. Text output of the pieces equals that of the whole
/// input symbolicated as one report.
public struct ReportStream: Sendable {
    /// What to do with a run of lines.
    public enum Piece: Sendable, Equatable {
        /// Lines that are not part of a report: print them as they are (each ends with `\n`).
        case text(String)
        /// The lines of one report (each ends with `\n`): parse and symbolicate them.
        case report(String)
    }

    /// The kind of report being collected.
    private enum Open: Equatable {
        case none
        /// Sanitizer, glibc or tombstone: ends after its last frame line.
        case lines(ReportFormat?)
        /// eu-stack: module map, `PID`/`TID` lines, frames, `-b` and source lines.
        case euStack
        /// Swift backtrace text: ends after its "Images" list.
        case swiftText(inImages: Bool, sawImage: Bool)
    }

    /// The format every report is read in, when forced (`--input-format`).
    public let format: ReportFormat?
    private var open = Open.none
    private var pending: [Substring] = []
    private var pendingBytes = 0
    private var frames = 0

    /// Creates a splitter; with `format`, only that format's reports are recognised.
    public init(format: ReportFormat? = nil) {
        self.format = format
    }

    /// Whether a report is being collected (its lines held back).
    public var isCollecting: Bool { open != .none }

    /// Takes one line (without its `\n`); returns the pieces it completes, in order.
    public mutating func feed(_ line: Substring) -> [Piece] {
        var pieces: [Piece] = []
        take(line, into: &pieces)
        if pendingBytes > ReportFormat.maximumLineLength * 64 { flush(into: &pieces) }
        return pieces
    }

    /// The input paused: a report with frames is complete (a report that needs a later part, or
    /// holds no frame yet, waits; lines before any frame of a line-by-line report are released).
    public mutating func pause() -> [Piece] {
        var pieces: [Piece] = []
        switch open {
        case .none: break
        case .lines: flush(into: &pieces)
        case .euStack, .swiftText: if frames > 0 { flush(into: &pieces) }
        }
        return pieces
    }

    /// The input ended: whatever is held.
    public mutating func finish() -> [Piece] {
        var pieces: [Piece] = []
        flush(into: &pieces)
        return pieces
    }

    private mutating func flush(into pieces: inout [Piece]) {
        guard !pending.isEmpty else {
            open = .none
            return
        }
        var text = ""
        text.reserveCapacity(pendingBytes)
        for line in pending {
            text += line
            text += "\n"
        }
        pieces.append(frames > 0 ? .report(text) : .text(text))
        pending.removeAll(keepingCapacity: true)
        pendingBytes = 0
        frames = 0
        open = .none
    }

    private mutating func hold(_ line: Substring, frame: Bool = false) {
        pending.append(line)
        pendingBytes += line.utf8.count + 1
        if frame { frames += 1 }
    }

    private mutating func take(_ line: Substring, into pieces: inout [Piece]) {
        let trimmed = line.utf8.count <= 4096 ? String(line).trimmed : ""
        switch open {
        case .euStack:
            var cursor = LineCursor(line)
            let indented = cursor.skipSpaces() > 0
            if EuStackParser.isHeader(trimmed) {
                // A new run's first header ends the report; its own `PID … - core` after the
                // map and each `TID n:` continue it.
                if frames > 0 && trimmed.hasPrefix("PID ") { break }
                hold(line)
                return
            }
            if indented && !trimmed.isEmpty { hold(line); return }
            if !indented, cursor.skip("#"), cursor.decimal() != nil, cursor.skipSpaces() > 0 { hold(line, frame: true); return }
            if !indented, cursor.hexNumber() != nil, cursor.skip("-"), cursor.hexNumber() != nil, frames == 0 { hold(line); return }
        case .swiftText(let inImages, let sawImage):
            if inImages {
                var cursor = LineCursor(Substring(trimmed))
                let isImage = cursor.hexNumber() != nil && (cursor.skip("–") || cursor.skip("-"))
                if isImage || (!sawImage && trimmed.isEmpty) {
                    open = .swiftText(inImages: true, sawImage: sawImage || isImage)
                    hold(line)
                    return
                }
                break  // the list ended: so did the report
            }
            if trimmed.hasPrefix("Images") && trimmed.hasSuffix(":") {
                open = .swiftText(inImages: true, sawImage: false)
                hold(line)
                return
            }
            if trimmed.hasPrefix("*** Program crashed:") && frames > 0 { break }
            var cursor = LineCursor(Substring(trimmed))
            let isFrame = cursor.decimal() != nil && cursor.skipSpaces() > 0
            hold(line, frame: isFrame)
            return
        case .lines(let kind):
            if let start = startFormat(line, trimmed), frames > 0 || start != kind { break }
            if let frameFormat = self.frameFormat(line, trimmed), kind == nil || frameFormat == kind || format != nil {
                if kind == nil { open = .lines(frameFormat) }
                hold(line, frame: true)
                return
            }
            if frames == 0 { hold(line); return }  // the headline's lines before the first frame
        case .none:
            break
        }
        // No report is open (or the line ended the open one): does one start here?
        flush(into: &pieces)
        if let start = startFormat(line, trimmed) {
            switch start {
            case .euStack: open = .euStack
            case .swiftText: open = .swiftText(inImages: false, sawImage: false)
            default: open = .lines(start)
            }
            hold(line)
            return
        }
        if let frameFormat = frameFormat(line, trimmed) {
            open = .lines(frameFormat)
            hold(line, frame: true)
            return
        }
        pieces.append(.text(String(line) + "\n"))
    }

    private func allows(_ candidate: ReportFormat) -> Bool { format == nil || format == candidate }

    /// The format whose report starts with this line: a sanitizer's headline, a tombstone's
    /// `*** ***` line, a Swift backtrace's first line, eu-stack's headers.
    private func startFormat(_ line: Substring, _ trimmed: String) -> ReportFormat? {
        if trimmed.isEmpty { return nil }
        let cursor = LineCursor(Substring(trimmed))
        if allows(.euStack) && EuStackParser.isHeader(trimmed) { return .euStack }
        if allows(.swiftText) && trimmed.hasPrefix("*** Program crashed:") { return .swiftText }
        if allows(.tombstone) && cursor.find("*** *** *** *** ***") != nil { return .tombstone }
        if allows(.sanitizer) && !trimmed.hasPrefix("SUMMARY:")
            && (cursor.find("Sanitizer:") != nil || cursor.find("runtime error:") != nil) {
            return .sanitizer
        }
        return nil
    }

    /// The format of a line that is a frame by itself (sanitizer, tombstone, glibc).
    private func frameFormat(_ line: Substring, _ trimmed: String) -> ReportFormat? {
        if trimmed.isEmpty { return nil }
        if allows(.tombstone) && TombstoneParser.frameStart(in: line) != nil { return .tombstone }
        if allows(.sanitizer) && SanitizerParser.isFrameLine(trimmed) { return .sanitizer }
        if allows(.glibc) && GlibcBacktraceParser.frame(in: line) != nil { return .glibc }
        return nil
    }
}
