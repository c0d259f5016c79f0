/// Prints symbolicated reports: a text report in place, line for line, or the JSON model of
/// docs/crash-report.md.
public enum ReportWriter {
    /// The report as text. A text input is reprinted line for line, each frame line completed
    /// with ` in function file:line:column` and one extra line per enclosing (inlining) frame
    /// right under it; every other line is untouched. A JSON input is printed as a listing.
    /// With `explain`, each unresolved frame gets lines saying what was tried.
    public static func text(_ result: SymbolicatedReport, explain: Bool = false) -> String {
        let report = result.report
        var output = ""
        if report.format.isText && !report.lines.isEmpty {
            var byLine: [Int: (stack: Int, frame: Int)] = [:]
            for (s, stack) in report.stacks.enumerated() {
                for (f, frame) in stack.frames.enumerated() {
                    if let line = frame.line, byLine[line] == nil { byLine[line] = (s, f) }
                }
            }
            for (number, line) in report.lines.enumerated() {
                output += line
                if let (s, f) = byLine[number] {
                    appendResolution(result.frames[s][f], indent: indentation(of: line), explain: explain, to: &output)
                } else {
                    output += "\n"
                }
            }
            return output
        }
        for (s, stack) in report.stacks.enumerated() {
            if s > 0 { output += "\n" }
            output += stack.name ?? stack.thread.map { "Thread \($0)" } ?? "Stack \(s)"
            output += stack.crashed ? " (crashed):\n" : ":\n"
            for (f, frame) in stack.frames.enumerated() {
                var line = "    #\(frame.index)"
                if let address = frame.address { line += " " + hex(address) }
                if let module = frame.module, module < report.modules.count {
                    line += " (" + report.modules[module].name
                    if let offset = frame.moduleOffset { line += "+" + hex(offset) }
                    line += ")"
                }
                output += line
                appendResolution(result.frames[s][f], indent: "    ", explain: explain, to: &output)
            }
        }
        return output
    }

    private static func appendResolution(_ resolution: FrameResolution, indent: String, explain: Bool,
                                         to output: inout String) {
        if resolution.status == .ok, let first = resolution.locations.first {
            output += " in " + describe(first) + "\n"
            for location in resolution.locations.dropFirst() {
                output += indent + "    inlined into " + describe(location) + "\n"
            }
        } else {
            output += "  [crashsym: \(resolution.status.rawValue)"
            if let reason = resolution.reason { output += ": " + reason }
            output += "]\n"
        }
        if explain && resolution.status != .ok {
            for step in resolution.explanation { output += indent + "    tried: " + step + "\n" }
        }
    }

    private static func describe(_ location: SourceLocation) -> String {
        var text = location.function
        if !location.file.isEmpty || location.line != 0 {
            text += " " + (location.file.isEmpty ? "??" : location.file) + ":\(location.line)"
            if location.column != 0 { text += ":\(location.column)" }
        }
        return text
    }

    private static func indentation(of line: Substring) -> String {
        String(line.prefix(while: { $0 == " " || $0 == "\t" }))
    }

    /// The report as JSON (docs/crash-report.md), one document ending in a newline.
    public static func json(_ result: SymbolicatedReport, explain: Bool = false) -> String {
        let report = result.report
        var json = JSONText()
        json.beginObject()
        json.string("format", report.format.rawValue)
        json.string("signal", report.signal)
        json.string("reason", report.reason)
        json.beginObject("metadata")
        for entry in report.metadata { json.string(entry.key, entry.value) }
        json.endObject()
        json.beginArray("modules")
        for module in report.modules {
            json.beginObject()
            json.string("name", module.name)
            json.string("path", module.path)
            json.string("build_id", module.buildID)
            json.string("load_address", module.loadAddress.map(hex))
            json.string("size", module.size.map(hex))
            if let offset = module.fileOffset { json.string("file_offset", hex(offset)) }
            json.endObject()
        }
        json.endArray()
        json.beginArray("stacks")
        for (s, stack) in report.stacks.enumerated() {
            json.beginObject()
            json.string("name", stack.name)
            json.string("thread", stack.thread)
            json.bool("crashed", stack.crashed)
            json.beginArray("frames")
            for (f, frame) in stack.frames.enumerated() {
                let resolution = result.frames[s][f]
                json.beginObject()
                json.number("index", frame.index)
                let module = frame.module.flatMap { $0 < report.modules.count ? report.modules[$0] : nil }
                json.string("module", module?.name)
                if let index = frame.module, module != nil { json.number("module_index", index) } else { json.null("module_index") }
                json.string("build_id", module?.buildID)
                json.string("address", frame.address.map(hex))
                json.string("module_offset", resolution.moduleAddress.map(hex))
                json.string("address_kind", frame.convention.rawValue)
                json.string("status", resolution.status.rawValue)
                json.string("reason", resolution.reason)
                if explain { 
                    json.beginArray("tried")
                    for step in resolution.explanation { json.string(nil, step) }
                    json.endArray()
                }
                json.beginArray("symbolized")
                for location in resolution.locations {
                    json.beginObject()
                    json.string("function", location.function)
                    json.string("mangled", location.mangled)
                    json.string("file", location.file)
                    json.number("line", location.line)
                    json.number("column", location.column)
                    json.endObject()
                }
                json.endArray()
                json.endObject()
            }
            json.endArray()
            json.endObject()
        }
        json.endArray()
        json.endObject()
        return json.text + "\n"
    }
}
