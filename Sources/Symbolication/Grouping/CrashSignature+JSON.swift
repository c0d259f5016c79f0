extension CrashSignature {
    /// The signature as JSON bytes, written directly (the members and keys of its `Codable`
    /// form, so `JSONDecoder` reads it back): what the crash store keeps for every processed
    /// crash. `JSONEncoder` took longer than symbolicating the crash.
    public var jsonBytes: [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writer.field("signature", signature)
        writer.field("title", title)
        if let stack { writer.field("stack", stack) }
        writer.beginArray("frames")
        for frame in frames { frame.write(to: &writer) }
        writer.endArray()
        writer.field("frames_not_examined", framesNotExamined)
        writer.endObject()
        return writer.bytes
    }
}

extension GroupingFrame {
    /// Appends the frame's `Codable` form.
    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.field("frame_index", frameIndex)
        writer.field("inline_depth", inlineDepth)
        writer.field("inlined", inlined)
        writer.field("text", text)
        if let function { writer.field("function", function) }
        if let module { writer.field("module", module) }
        if let file { writer.field("file", file) }
        writer.field("line", line)
        writer.field("is_app", isApp)
        writer.field("role", role.rawValue)
        if let rule {
            writer.beginObject("rule")
            writer.field("action", rule.action.rawValue)
            if let function = rule.function { writer.field("function", function.text) }
            if let module = rule.module { writer.field("module", module.text) }
            if let file = rule.file { writer.field("file", file.text) }
            writer.field("note", rule.note)
            writer.field("origin", rule.origin.rawValue)
            writer.field("index", rule.index)
            writer.endObject()
        }
        writer.endObject()
    }
}
