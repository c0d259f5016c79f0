/// Reads Android tombstones and logcat crash dumps (debuggerd):
/// `#00 pc 000000000004e0c4  /data/app/…/lib/arm64/libfoo.so (func+20) (BuildId: …)`, including
/// `base.apk!libfoo.so (offset 0x…)` paths, one `backtrace:` per thread. Logcat prefixes
/// (`… F DEBUG   : `) are skipped: a frame is found wherever `#NN pc ` starts on the line.
///
/// Address convention: the printed pc is libunwindstack's `rel_pc` (a file virtual address) with
/// the caller adjustment already applied (`GetPcAdjustment`), so frames are `.exact`.
enum TombstoneParser {
    /// Where a frame (`#NN pc HEX`) starts on `line`, when it has one.
    static func frameStart(in line: Substring) -> Int? {
        let cursor = LineCursor(line)
        var from = 0
        while let hash = cursor.find("#", from: from) {
            var probe = LineCursor(line, at: hash + 1)
            // `#00 pc 0004e0c4` (and the two-space `#00  pc` of old debuggerd versions).
            if let _ = probe.decimal(), probe.index - hash >= 3, probe.skipSpaces() > 0, probe.skip("pc "), probe.hexDigits() != nil {
                return hash
            }
            from = hash + 1
        }
        return nil
    }

    static func parse(_ lines: [Substring]) -> CrashReport {
        var report = CrashReport(format: .tombstone, lines: lines)
        var thread: (tid: String?, name: String?) = (nil, nil)
        var expectingStack = false
        var havePID = false  // a flag, not a search of the metadata on every `pid:` line
        for (number, line) in lines.enumerated() {
            let text = String(line).trimmed
            if let start = frameStart(in: line) {
                if expectingStack || report.stacks.isEmpty {
                    report.stacks.append(ReportStack(name: thread.name, thread: thread.tid, crashed: report.stacks.isEmpty))
                    expectingStack = false
                }
                var frame = parseFrame(line, from: start, report: &report)
                frame.line = number
                report.stacks[report.stacks.count - 1].frames.append(frame)
                continue
            }
            // Header lines, possibly behind a logcat prefix: read from the known keyword on.
            let body = logcatBody(text)
            if body == "backtrace:" {
                expectingStack = true
            } else if body.hasPrefix("pid: "), let tid = field("tid", in: body) {
                thread = (tid, field("name", in: body))
                if !havePID, let pid = field("pid", in: body) {
                    havePID = true
                    report.metadata.append(ReportMetadata("pid", pid))
                    if let process = body.byteRange(of: ">>> "), let end = body.byteRange(of: " <<<") , process.upperBound <= end.lowerBound {
                        report.metadata.append(ReportMetadata("process", String(body[process.upperBound..<end.lowerBound])))
                    }
                }
                expectingStack = true
            } else if body.hasPrefix("signal "), report.signal == nil {
                if let open = body.firstIndex(of: "("), let close = body.firstIndex(of: ")"), open < close {
                    report.signal = String(body[body.index(after: open)..<close])
                }
                report.reason = report.reason ?? body
            } else if body.hasPrefix("Cause: ") {
                report.reason = String(body.dropFirst(7))
                report.metadata.append(ReportMetadata("cause", String(body.dropFirst(7))))
            } else if body.hasPrefix("Abort message: ") {
                report.metadata.append(ReportMetadata("abort_message", String(body.dropFirst(15))))
            } else {
                for key in ["Build fingerprint", "ABI", "Timestamp", "Cmdline", "Revision"] where body.hasPrefix(key + ": ") {
                    var value = String(body.dropFirst(key.count + 2))
                    if value.hasPrefix("'") && value.hasSuffix("'") && value.count >= 2 { value = String(value.dropFirst().dropLast()) }
                    report.metadata.append(ReportMetadata(key.lowercased().replacing(" ", with: "_"), value))
                }
            }
        }
        return report
    }

    /// The text after a logcat prefix (`01-02 03:04:05.678  123  123 F DEBUG   : `), if any.
    private static func logcatBody(_ text: String) -> String {
        guard text.first?.isNumber == true, let range = text.byteRange(of: " DEBUG") ?? text.byteRange(of: " libc"),
              let colon = text[range.upperBound...].firstIndex(of: ":") else { return text }
        return String(text[text.index(after: colon)...]).trimmed
    }

    /// `value` of `key: value,` in `pid: 1, tid: 2, name: x  >>> y <<<`.
    private static func field(_ key: String, in text: String) -> String? {
        guard let range = text.byteRange(of: key + ": ") else { return nil }
        let rest = text[range.upperBound...]
        let value = rest.prefix(while: { $0 != "," }).split(separator: " ").first.map(String.init)
        return key == "name" ? rest.prefix(while: { $0 != "," }).components(before: "  >>>") : value
    }

    private static func parseFrame(_ line: Substring, from start: Int, report: inout CrashReport) -> ReportFrame {
        var cursor = LineCursor(line, at: start + 1)
        let index = cursor.decimal() ?? 0
        cursor.skipSpaces()
        _ = cursor.skip("pc ")
        var frame = ReportFrame(index: index, offsetBase: .virtualAddress, convention: .exact)
        guard let pc = cursor.hexDigits() else {
            frame.problem = "cannot read the pc"
            return frame
        }
        frame.moduleOffset = pc
        guard cursor.skipSpaces() > 0, !cursor.atEnd else {
            frame.problem = "the frame names no module"
            return frame
        }
        // `path[ (offset 0x…)][ (function+N)][ (BuildId: …)]`
        var end = cursor.bytes.count
        var buildID: String?
        if let group = cursor.findLast(" (BuildId: ") {
            let id = cursor.text((group + 11)..<end).trimmed
            if id.hasSuffix(")"), LineCursor.isBuildID(String(id.dropLast())) { buildID = String(id.dropLast()).lowercased() }
            end = group
        }
        let rest = cursor.text(cursor.index..<end)
        var pathEnd = rest.endIndex
        if let group = rest.byteRange(of: " (") { pathEnd = group.lowerBound }
        let path = String(rest[..<pathEnd])
        var groups = rest[pathEnd...]
        var fileOffset: UInt64?
        if groups.hasPrefix(" (offset 0x"), let close = groups.firstIndex(of: ")") {
            fileOffset = UInt64(groups[groups.index(groups.startIndex, offsetBy: 11)..<close], radix: 16)
            groups = groups[groups.index(after: close)...]
        }
        let function = String(groups).trimmed
        if function.hasPrefix("(") && function.hasSuffix(")") && function.count > 2 {
            var name = String(function.dropFirst().dropLast())
            if let plus = name.lastIndex(of: "+"), name[name.index(after: plus)...].allSatisfy(\.isNumber),
               plus < name.index(before: name.endIndex) {
                name = String(name[..<plus])
            }
            frame.function = name
        }
        frame.module = report.moduleIndex(path: path, buildID: buildID)
        if let fileOffset, report.modules[frame.module!].fileOffset == nil { report.modules[frame.module!].fileOffset = fileOffset }
        return frame
    }
}

extension Substring {
    /// The text before `marker` (all of it when absent), trimmed.
    func components(before marker: String) -> String {
        guard let range = byteRange(of: marker) else { return String(self).trimmed }
        return String(self[..<range.lowerBound]).trimmed
    }
}
