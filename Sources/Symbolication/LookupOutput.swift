/// Renders `lookup` answers as text or JSON lines.
public enum LookupOutput {
    /// One JSON object for one address: `{"address":"0x…","frames":[…]}`.
    public static func json(address: UInt64, frames: [SymbolicatedFrame]) -> String {
        var writer = JSONWriter()
        writer.beginObject()
        writer.field("address", "0x" + String(address, radix: 16))
        writer.beginArray("frames")
        for frame in frames {
            writer.beginObject()
            writer.field("function", frame.function)
            writer.field("mangled", frame.mangled)
            writer.field("file", frame.file)
            writer.field("line", frame.line)
            writer.field("column", frame.column)
            writer.field("inlined", frame.inlined)
            if frame.symbolOnly { writer.field("symbol_only", true) }
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
        return writer.text
    }

    /// Text: the address, then one indented line per frame, innermost first.
    public static func text(address: UInt64, frames: [SymbolicatedFrame]) -> String {
        var out = "0x" + String(address, radix: 16) + "\n"
        if frames.isEmpty {
            out += "    ??\n"
            return out
        }
        for frame in frames {
            out += "    " + frame.function
            if !frame.file.isEmpty || frame.line != 0 {
                out += "  " + (frame.file.isEmpty ? "??" : frame.file) + ":\(frame.line)"
                if frame.column != 0 { out += ":\(frame.column)" }
            }
            if frame.inlined { out += "  (inlined)" }
            if frame.symbolOnly { out += "  (symbol table only)" }
            out += "\n"
        }
        return out
    }

    /// Parses an address as printed by tools: `0x1a2b`, `1a2b` (hex) — decimal is not accepted,
    /// as every crash format prints hex.
    public static func parseAddress(_ text: some StringProtocol) -> UInt64? {
        var digits = Substring(text.trimmingSpaces)
        if digits.hasPrefix("0x") || digits.hasPrefix("0X") { digits = digits.dropFirst(2) }
        guard !digits.isEmpty, digits.count <= 16 else { return nil }
        return UInt64(digits, radix: 16)
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces, tabs and line ends.
    var trimmingSpaces: SubSequence {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }) else { return self[endIndex...] }
        let last = lastIndex(where: { !isSpace($0) })!
        return self[first...last]
    }
}
