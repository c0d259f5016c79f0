/// Reads sanitizer reports (ASan, UBSan, TSan, MSan, LSan) printed with `symbolize=0`:
/// `#3 0x55d0c2a1b2c4  (/path/prog+0x1b2c4) (BuildId: 5f0e…)`, several stacks per report.
///
/// Address convention: the sanitizer runtime already moves every caller address back into the
/// call instruction before printing it (`StackTrace::GetPreviousInstructionPc`), and the offset
/// is `pc - dlpi_addr`, a file virtual address; frames are therefore `.exact` offsets, never
/// adjusted again.
enum SanitizerParser {
    /// Whether a trimmed line starts like a sanitizer frame (`#N 0x…` or `#N <null>`).
    static func isFrameLine(_ trimmed: String) -> Bool {
        var cursor = LineCursor(Substring(trimmed))
        guard cursor.skip("#"), cursor.decimal() != nil, cursor.skipSpaces() > 0 else { return false }
        return cursor.looking(at: "0x") || cursor.looking(at: "<null>")
    }

    static func parse(_ lines: [Substring]) -> CrashReport {
        var report = CrashReport(format: .sanitizer, lines: lines)
        var header: String?
        var inStack = false
        var modules = ModuleMemo()
        // One buffer for every line's cursor.
        var storage: [UInt8] = []
        for (number, line) in lines.enumerated() {
            var cursor = LineCursor(line, reusing: &storage)
            defer { cursor.returnStorage(to: &storage) }
            cursor.skipSpaces()
            if cursor.skip("#"), let index = cursor.decimal(), cursor.skipSpaces() > 0 {
                if !inStack || index == 0 {
                    let name = header
                    report.stacks.append(ReportStack(name: name, thread: name.flatMap(thread(in:)),
                                                     crashed: report.stacks.isEmpty))
                    inStack = true
                }
                var frame = parseFrame(&cursor, index: index, line: number, report: &report, modules: &modules)
                frame.line = number
                report.stacks[report.stacks.count - 1].frames.append(frame)
                continue
            }
            inStack = false
            let text = String(line).trimmed
            guard !text.isEmpty else { continue }
            header = text.hasSuffix(":") ? String(text.dropLast()) : text
            readHeadline(text, into: &report)
        }
        return report
    }

    /// `==123==ERROR: AddressSanitizer: heap-use-after-free on address …`, `WARNING:
    /// ThreadSanitizer: data race (pid=1)`, `file.c:3:5: runtime error: …`.
    private static func readHeadline(_ text: String, into report: inout CrashReport) {
        // Byte searches (StringProcessing's `firstRange` costs microseconds per call).
        let cursor = LineCursor(Substring(text))
        if report.signal == nil, let marker = cursor.find("Sanitizer: ") {
            // The kind runs to " on " (ASan), " (" (TSan) or the end (LSan).
            let kindStart = marker + 11
            var kindEnd = cursor.bytes.count
            for stop in [" on ", " ("] {
                if let cut = cursor.find(stop, from: kindStart), cut < kindEnd { kindEnd = cut }
            }
            report.signal = cursor.text(kindStart..<kindEnd)
            // From the tool's name on: "AddressSanitizer: heap-use-after-free on address …".
            let toolStart = (cursor.bytes[..<marker].lastIndex(of: 0x20)).map { $0 + 1 } ?? 0
            report.reason = cursor.text(toolStart..<cursor.bytes.count)
            report.metadata.append(ReportMetadata("sanitizer", cursor.text(toolStart..<marker) + "Sanitizer"))
            if text.hasPrefix("=="), let end = cursor.find("==", from: 2) {
                report.metadata.append(ReportMetadata("pid", cursor.text(2..<end)))
            }
        } else if report.signal == nil, let marker = cursor.find("runtime error: ") {
            report.signal = "runtime-error"
            report.reason = cursor.text((marker + 15)..<cursor.bytes.count)
            report.metadata.append(ReportMetadata("location", cursor.text(0..<marker).trimmed.trimmingColon))
        } else if text.hasPrefix("SUMMARY: ") {
            report.metadata.append(ReportMetadata("summary", String(text.dropFirst(9))))
        }
    }

    /// The thread named by a stack header (`… thread T0 …`, `Thread T1 (tid=…) created by…`).
    private static func thread(in header: String) -> String? {
        let cursor = LineCursor(Substring(header))
        if cursor.find("by main thread") != nil { return "main" }
        // Words are separated by spaces: the word after a `thread`/`Thread` word, when it starts
        // with `T`, up to a comma or colon.
        let bytes = cursor.bytes, space = UInt8(ascii: " ")
        var position = 0
        while position < bytes.count {
            while position < bytes.count && bytes[position] == space { position += 1 }
            var end = position
            while end < bytes.count && bytes[end] != space { end += 1 }
            if end - position == 6, bytes[position] | 0x20 == UInt8(ascii: "t"), bytes[(position + 1)..<end].elementsEqual("hread".utf8) {
                var next = end
                while next < bytes.count && bytes[next] == space { next += 1 }
                if next < bytes.count && bytes[next] == UInt8(ascii: "T") {
                    var stop = next
                    while stop < bytes.count && bytes[stop] != space && bytes[stop] != UInt8(ascii: ",") && bytes[stop] != UInt8(ascii: ":") {
                        stop += 1
                    }
                    return cursor.text(next..<stop)
                }
            }
            position = end
        }
        return nil
    }

    /// The part of a frame line after `#N `: address, optional `in function`, then
    /// `(module+0xoffset)` and `(BuildId: …)`.
    private static func parseFrame(_ cursor: inout LineCursor, index: Int, line: Int,
                                   report: inout CrashReport, modules: inout ModuleMemo) -> ReportFrame {
        var frame = ReportFrame(index: index, convention: .exact, line: line)
        frame.address = cursor.hexNumber()
        if frame.address == nil { _ = cursor.skip("<null>") }
        let bytes = cursor.bytes
        let afterAddress = cursor.index
        // The build-id group is last; the module group is the last `(…+0x…)` before it.
        var end = bytes.count
        var buildIDRange: Range<Int>?
        if let start = cursor.findLast("(BuildId: ") {
            if let close = bytes[(start + 10)...].firstIndex(of: UInt8(ascii: ")")),
               LineCursor.isBuildID(bytes[(start + 10)..<close]) {
                buildIDRange = (start + 10)..<close
            }
            end = start
        }
        if let close = bytes[afterAddress..<end].lastIndex(of: UInt8(ascii: ")")),
           let plus = bytes[afterAddress..<close].lastIndex(of: UInt8(ascii: "+")),
           let open = bytes[afterAddress..<plus].lastIndex(of: UInt8(ascii: "(")) {
            var offsetCursor = cursor
            offsetCursor.index = plus + 1
            if let offset = offsetCursor.hexNumber(), offsetCursor.index == close, open + 1 < plus {
                frame.module = modules.index(path: (open + 1)..<plus, buildID: buildIDRange, of: cursor, in: &report)
                frame.moduleOffset = offset
                frame.offsetBase = .virtualAddress
                var name = cursor
                name.index = afterAddress
                name.skipSpaces()
                if name.skip("in ") { frame.function = name.text(name.index..<open).trimmed }
            }
        }
        if frame.module == nil {
            var rest = cursor
            rest.index = afterAddress
            rest.skipSpaces()
            if rest.skip("in ") {
                // Already symbolized (`in main /src/a.c:3:5`): nothing to look up.
                frame.function = rest.text(rest.index..<end).trimmed
                frame.problem = "the frame names no module"
            } else if rest.looking(at: "(<unknown module>)") {
                frame.problem = "the sanitizer found no module for this address"
            } else {
                frame.problem = "cannot read '(module+0xoffset)' on this frame line"
            }
        }
        if frame.address == nil && frame.moduleOffset == nil {
            frame.problem = "no address on this frame line"
        }
        return frame
    }
}

/// The modules a report's frame lines named so far, by their exact bytes: a report names few
/// modules on many lines, so a repeated one costs a byte comparison instead of building its path
/// and build-id strings and hashing them.
struct ModuleMemo {
    private var entries: [(path: [UInt8], buildID: [UInt8], index: Int)] = []

    /// The index in `report.modules` of the module at `path` with the build-id at `buildID` (byte
    /// ranges of `cursor`'s line), added to the report when new.
    mutating func index(path: Range<Int>, buildID: Range<Int>?, of cursor: LineCursor, in report: inout CrashReport) -> Int {
        let emptyRange = 0..<0
        for entry in entries where cursor.bytes(path, equal: entry.path)
            && cursor.bytes(buildID ?? emptyRange, equal: entry.buildID) {
            return entry.index
        }
        let id = buildID.map { LineCursor.lowercaseHex(cursor.text($0)) }
        let index = report.moduleIndex(path: cursor.text(path), buildID: id)
        // Bounded, so a hostile report naming thousands of modules stays linear.
        if entries.count < 32 {
            entries.append((Array(cursor.bytes[path]), buildID.map { Array(cursor.bytes[$0]) } ?? [], index))
        }
        return index
    }
}

extension String {
    var trimmingColon: String { hasSuffix(":") ? String(dropLast()) : self }
}
