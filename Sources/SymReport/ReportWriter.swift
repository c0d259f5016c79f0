import SymBytes

/// Prints symbolicated reports: a text report in place, line for line, or the JSON model of
/// docs/crash-report.md. Output is built as UTF-8 bytes (the `String` forms wrap them).
public enum ReportWriter {
    /// The report as text (see `writeText`).
    public static func text(_ result: SymbolicatedReport, explain: Bool = false) -> String {
        var bytes: [UInt8] = []
        writeText(result, explain: explain, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A JSON document of `writeJSON` (which starts with `{`) with `source` as its first member,
    /// for a writer that learns the file after rendering (reports rendered on worker threads).
    public static func addingSource(_ source: String, toJSON document: [UInt8]) -> [UInt8] {
        guard document.first == UInt8(ascii: "{") else { return document }
        var json = JSONText()
        json.beginObject()
        json.string("source", source)
        var bytes = json.bytes
        bytes.reserveCapacity(bytes.count + document.count + 1)
        if document.count > 1 && document[1] != UInt8(ascii: "}") { bytes.append(UInt8(ascii: ",")) }
        bytes.append(contentsOf: document.dropFirst())
        return bytes
    }

    /// The report as JSON (see `writeJSON`).
    public static func json(_ result: SymbolicatedReport, explain: Bool = false) -> String {
        var bytes: [UInt8] = []
        writeJSON(result, explain: explain, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the report as text. A text input is reprinted line for line, each frame line
    /// completed with ` in function file:line:column` and one `inlined into …` line per enclosing
    /// frame right under it; every other line is untouched. A JSON input is printed as a listing.
    /// With `explain`, each unresolved frame gets one `tried:` line per source tried, and a resolved
    /// frame whose table was fetched from a crashsym server a `tried: fetched from <server>…` line.
    public static func writeText(_ result: SymbolicatedReport, explain: Bool = false, into output: inout [UInt8]) {
        let report = result.report
        if report.format.isText && !report.lines.isEmpty {
            // Frame lines in order: walk them alongside the report's lines.
            var frameLines: [(line: Int, stack: Int, frame: Int)] = []
            for (s, stack) in report.stacks.enumerated() {
                for (f, frame) in stack.frames.enumerated() {
                    if let line = frame.line { frameLines.append((line, s, f)) }
                }
            }
            frameLines.sort { $0.line < $1.line }
            var next = 0
            for (number, line) in report.lines.enumerated() {
                append(line, to: &output)
                while next < frameLines.count && frameLines[next].line < number { next += 1 }
                if next < frameLines.count && frameLines[next].line == number {
                    let entry = frameLines[next]
                    appendResolution(result.frames[entry.stack][entry.frame], indent: indentation(of: line),
                                     explain: explain, to: &output)
                    appendFoundBy(report.stacks[entry.stack].frames[entry.frame].foundBy, indent: indentation(of: line), to: &output)
                } else {
                    output.append(0x0a)
                }
            }
            return
        }
        for (s, stack) in report.stacks.enumerated() {
            if s > 0 { output.append(0x0a) }
            output.append(contentsOf: (stack.name ?? stack.thread.map { "Thread \($0)" } ?? "Stack \(s)").utf8)
            output.append(contentsOf: (stack.crashed ? " (crashed):\n" : ":\n").utf8)
            for (f, frame) in stack.frames.enumerated() {
                var line = "    #\(frame.index)"
                if let address = frame.address { line += " " + hex(address) }
                if let module = frame.module, module < report.modules.count {
                    line += " (" + report.modules[module].name
                    if let offset = frame.moduleOffset { line += "+" + hex(offset) }
                    line += ")"
                }
                output.append(contentsOf: line.utf8)
                appendResolution(result.frames[s][f], indent: "    ", explain: explain, to: &output)
                appendFoundBy(frame.foundBy, indent: "    ", to: &output)
            }
        }
    }

    private static func appendResolution(_ resolution: FrameResolution, indent: Substring, explain: Bool,
                                         to output: inout [UInt8]) {
        if resolution.status == .ok, let chain = resolution.chain, !chain.locations.isEmpty {
            append(Literal.in, to: &output)
            if let text = chain.text {
                // The chain's lines, rendered once per chain: the frame line's indentation and
                // `inlined into ` before each but the first.
                text.withUnsafeBufferPointer { text in
                    var start = 0
                    for (position, end) in chain.textEnds.enumerated() {
                        if position > 0 {
                            append(indent, to: &output)
                            append(Literal.inlinedInto, to: &output)
                        }
                        output.append(contentsOf: UnsafeBufferPointer(rebasing: text[start..<end]))
                        start = end
                    }
                }
            } else {
                for (position, location) in chain.locations.enumerated() {
                    if position > 0 {
                        append(indent, to: &output)
                        append(Literal.inlinedInto, to: &output)
                    }
                    describe(location, to: &output)
                }
            }
        } else {
            append(Literal.flagOpen, to: &output)
            output.append(contentsOf: resolution.status.rawValue.utf8)
            if let reason = resolution.reason {
                append(Literal.colon, to: &output)
                output.append(contentsOf: reason.utf8)
            }
            append(Literal.flagClose, to: &output)
        }
        if explain {
            // An unresolved frame says everything tried; a resolved one only where its table was
            // fetched from (a server's, "fetched from <server>").
            for step in resolution.explanationSteps where resolution.status != .ok || step.kind == .fetched {
                append(indent, to: &output)
                append(Literal.tried, to: &output)
                output.append(contentsOf: step.text.utf8)
                output.append(0x0a)
            }
        }
    }

    /// A walked frame's `Found by: …` line (Breakpad's processor prints one under each frame):
    /// nothing for frames another tool printed, so their output is unchanged.
    private static func appendFoundBy(_ foundBy: ReportFrame.FoundBy?, indent: Substring, to output: inout [UInt8]) {
        guard let foundBy else { return }
        append(indent, to: &output)
        append(Literal.foundBy, to: &output)
        output.append(contentsOf: foundBy.rawValue.utf8)
        output.append(0x0a)
    }

    /// `function file:line:column` and a newline.
    static func describe(_ location: SourceLocation, to output: inout [UInt8]) {
        output.append(contentsOf: location.function.utf8)
        if !location.file.isEmpty || location.line != 0 {
            output.append(0x20)
            if location.file.isEmpty { append(Literal.unknown, to: &output) } else { output.append(contentsOf: location.file.utf8) }
            output.append(UInt8(ascii: ":"))
            appendDecimal(UInt64(location.line), to: &output)
            if location.column != 0 {
                output.append(UInt8(ascii: ":"))
                appendDecimal(UInt64(location.column), to: &output)
            }
        }
        output.append(0x0a)
    }

    /// Appends static text.
    private static func append(_ text: StaticString, to output: inout [UInt8]) {
        text.withUTF8Buffer { output.append(contentsOf: $0) }
    }

    /// Appends a substring's bytes with one copy (`append(contentsOf: utf8)` goes byte by byte).
    private static func append(_ text: Substring, to output: inout [UInt8]) {
        if text.utf8.withContiguousStorageIfAvailable({ output.append(contentsOf: $0) }) == nil {
            output.append(contentsOf: text.utf8)
        }
    }

    /// The leading spaces and tabs of `line` (found over its bytes: walking `Character`s costs
    /// grapheme-break checks on every frame line).
    private static func indentation(of line: Substring) -> Substring {
        Substring(line.utf8.prefix(while: { $0 == 0x20 || $0 == 0x09 }))
    }

    private enum Literal {
        // Static text, not arrays: a shared array's reference count would bounce between the
        // workers on every frame.
        static let `in`: StaticString = " in "
        static let inlinedInto: StaticString = "    inlined into "
        static let flagOpen: StaticString = "  [crashsym: "
        static let colon: StaticString = ": "
        static let flagClose: StaticString = "]\n"
        static let tried: StaticString = "    tried: "
        static let foundBy: StaticString = "    Found by: "
        static let unknown: StaticString = "??"
    }

    /// The `"module"`, `"module_index"` and `"build_id"` members of a frame in `module` (at its
    /// index), or of a frame without a module, as they follow the frame's `"index"`.
    private static func moduleFragment(_ module: (index: Int, module: ReportModule)?) -> [UInt8] {
        var json = JSONText()
        json.beginObject()
        json.number("index", 0)
        let start = json.bytes.count
        json.string("module", module?.module.name)
        if let module { json.number("module_index", module.index) } else { json.null("module_index") }
        json.string("build_id", module?.module.buildID)
        return Array(json.bytes[start...])
    }

    /// Appends one frame object of a stack's `"frames"` array.
    private static func writeJSON(_ frame: borrowing ReportFrame, _ resolution: borrowing FrameResolution,
                                  moduleMembers: [[UInt8]], moduleCount: Int, explain: Bool, to json: inout JSONText) {
        json.beginObject()
        json.number("index", frame.index)
        let moduleIndex = frame.module.flatMap { $0 >= 0 && $0 < moduleCount ? $0 : nil }
        json.continueObject(with: moduleMembers[moduleIndex ?? moduleCount])
        json.hex("address", frame.address)
        json.hex("module_offset", resolution.moduleAddress)
        // Members of a few known values, as `string(_:_:)` writes them, from static text (no
        // shared array whose reference count both workers would bounce on every frame).
        json.continueObject(with: frame.convention == .exact ? #","address_kind":"exact""# : #","address_kind":"return-address""#)
        json.continueObject(with: statusMember(resolution.status))
        json.string("reason", resolution.reason)
        // Only walked frames have the member: other reports' documents are unchanged.
        if let foundBy = frame.foundBy { json.string("found_by", foundBy.rawValue) }
        if resolution.bySender { json.continueObject(with: #","symbolized_by":"sender""#) }
        if explain {
            json.beginArray("tried")
            for step in resolution.explanation { json.string(nil, step) }
            json.endArray()
        }
        json.beginArray("symbolized")
        if let chain = resolution.chain {
            if let bytes = chain.json {
                json.bytes.append(contentsOf: bytes)
            } else {
                for location in chain.locations { appendJSON(location, to: &json) }
            }
        }
        json.endArray()
        json.endObject()
    }

    /// The `"status"` member of a frame after its first member.
    static func statusMember(_ status: FrameStatus) -> StaticString {
        switch status {
        case .ok: #","status":"ok""#
        case .noSymbols: #","status":"no-symbols""#
        case .buildIDMismatch: #","status":"build-id-mismatch""#
        case .notInFunction: #","status":"not-in-function""#
        case .noModule: #","status":"no-module""#
        case .malformed: #","status":"malformed""#
        case .corruptSymbols: #","status":"corrupt-symbols""#
        }
    }

    /// Appends one element of a frame's `"symbolized"` array.
    static func appendJSON(_ location: SourceLocation, to json: inout JSONText) {
        json.beginObject()
        json.string("function", location.function)
        json.string("mangled", location.mangled)
        json.string("file", location.file)
        json.number("line", location.line)
        json.number("column", location.column)
        json.endObject()
    }

    /// Appends the document of a report that could not be read or parsed (docs/crash-report.md):
    /// its `source` and its `error` (`code`, `message`, and `offset` when known), and a newline.
    public static func writeJSONFailure(source: String, error: FormatError, into output: inout [UInt8]) {
        var json = JSONText()
        swap(&json.bytes, &output)
        json.beginObject()
        json.string("source", source)
        json.beginObject("error")
        json.string("code", error.code.rawValue)
        json.string("message", error.message)
        if let offset = error.offset { json.number("offset", offset) }
        json.endObject()
        json.endObject()
        json.bytes.append(0x0a)
        swap(&json.bytes, &output)
    }

    /// Appends the report as one JSON document (docs/crash-report.md) and a newline.
    public static func writeJSON(_ result: SymbolicatedReport, explain: Bool = false, into output: inout [UInt8]) {
        let report = result.report
        var json = JSONText()
        swap(&json.bytes, &output)
        json.beginObject()
        json.string("format", report.format.rawValue)
        json.string("signal", report.signal)
        json.string("reason", report.reason)
        json.beginObject("metadata")
        for entry in report.metadata { json.member(entry.key, entry.value) }
        json.endObject()
        json.beginArray("modules")
        for module in report.modules {
            json.beginObject()
            json.string("name", module.name)
            json.string("path", module.path)
            json.string("build_id", module.buildID)
            json.hex("load_address", module.loadAddress)
            json.hex("size", module.size)
            if let offset = module.fileOffset { json.hex("file_offset", offset) }
            if let refusal = module.refusal {
                json.beginObject("refusal")
                json.string("code", refusal.code.rawValue)
                json.string("message", refusal.message)
                json.string("path", refusal.path)
                json.endObject()
            }
            json.endObject()
        }
        json.endArray()
        // A frame's module members are the same for every frame of the module: made once.
        let moduleMembers = (0...report.modules.count).map { index in
            moduleFragment(index < report.modules.count ? (index, report.modules[index]) : nil)
        }
        json.beginArray("stacks")
        for (s, stack) in report.stacks.enumerated() {
            json.beginObject()
            json.string("name", stack.name)
            json.string("thread", stack.thread)
            json.bool("crashed", stack.crashed)
            json.beginArray("frames")
            // Read in place (a copy of each frame and resolution would retain all their members).
            stack.frames.withUnsafeBufferPointer { frames in
                result.frames[s].withUnsafeBufferPointer { resolutions in
                    for f in frames.indices {
                        writeJSON(frames[f], resolutions[f], moduleMembers: moduleMembers, moduleCount: report.modules.count,
                                  explain: explain, to: &json)
                    }
                }
            }
            json.endArray()
            json.endObject()
        }
        json.endArray()
        json.endObject()
        json.bytes.append(0x0a)
        swap(&json.bytes, &output)
    }
}
