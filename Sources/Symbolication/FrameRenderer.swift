import SymBytes
import SymDemangle
import SymTable

/// Renders `lookup` answers straight into bytes: the hot path for answering many addresses.
///
/// Names are demangled and JSON-escaped once per distinct string (cached by table reference); an
/// address costs a table lookup plus copying cached bytes and formatting integers — no `String`
/// per frame.
public struct FrameRenderer {
    /// Output styles.
    public enum Style: Sendable {
        /// `0x…` then one indented line per frame.
        case text
        /// One JSON object per address: `{"address":"0x…","frames":[…]}`.
        case json
    }

    private let table: SymbolTable
    private let style: Style
    private let demangler = Demangler()
    /// Demangled names (escaped for the style) by table reference.
    private var functions = ByteCache()
    /// Mangled names escaped for JSON, by table reference.
    private var mangled = ByteCache()
    /// Joined source paths (escaped for the style) by (directory, file) references.
    private var paths = ByteCache()

    /// A direct-mapped cache of rendered bytes keyed by string-table positions: cheaper than a
    /// `Dictionary` (no SipHash per frame); a collision only costs re-rendering.
    struct ByteCache {
        private var keys = [UInt64](repeating: UInt64.max, count: 1 << 15)
        private var values = [[UInt8]](repeating: [], count: 1 << 15)

        private static func slot(_ key: UInt64) -> Int {
            Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> 49)
        }

        func value(_ key: UInt64) -> [UInt8]? {
            let slot = Self.slot(key)
            return keys[slot] == key ? values[slot] : nil
        }

        mutating func store(_ key: UInt64, _ value: [UInt8]) {
            let slot = Self.slot(key)
            keys[slot] = key
            values[slot] = value
        }
    }

    private static func key(_ reference: StringRef) -> UInt64 {
        UInt64(reference.offset) << 32 | UInt64(reference.length)
    }

    /// Creates a renderer for one table.
    public init(table: SymbolTable, style: Style) {
        self.table = table
        self.style = style
    }

    /// Appends the answer for `address` to `output`.
    public mutating func render(_ address: UInt64, into output: inout [UInt8]) throws(FormatError) {
        switch style {
        case .text:
            output.append(contentsOf: Literal.hexPrefix)
            Self.appendHex(address, to: &output)
            output.append(UInt8(ascii: "\n"))
            let count = try table.forEachFrame(at: address) { (frame) throws(FormatError) in
                output.append(contentsOf: Literal.indent)
                output.append(contentsOf: function(frame.function))
                if !frame.file.isEmpty || frame.line != 0 {
                    output.append(contentsOf: Literal.gap)
                    let path = self.path(frame.directory, frame.file)
                    if path.isEmpty { output.append(contentsOf: Literal.unknown) } else { output.append(contentsOf: path) }
                    output.append(UInt8(ascii: ":"))
                    Self.appendDecimal(UInt64(frame.line), to: &output)
                    if frame.column != 0 {
                        output.append(UInt8(ascii: ":"))
                        Self.appendDecimal(UInt64(frame.column), to: &output)
                    }
                }
                if frame.isInlined { output.append(contentsOf: Literal.inlined) }
                if frame.isSymbolOnly { output.append(contentsOf: Literal.symbolOnly) }
                output.append(UInt8(ascii: "\n"))
            }
            if count == 0 { output.append(contentsOf: Literal.noFrames) }
        case .json:
            output.append(contentsOf: Literal.jsonAddress)
            Self.appendHex(address, to: &output)
            output.append(contentsOf: Literal.jsonFrames)
            var first = true
            _ = try table.forEachFrame(at: address) { (frame) throws(FormatError) in
                if !first { output.append(UInt8(ascii: ",")) }
                first = false
                output.append(contentsOf: Literal.jsonFunction)
                output.append(contentsOf: function(frame.function))
                output.append(contentsOf: Literal.jsonMangled)
                output.append(contentsOf: mangledName(frame.function))
                output.append(contentsOf: Literal.jsonFile)
                output.append(contentsOf: path(frame.directory, frame.file))
                output.append(contentsOf: Literal.jsonLine)
                Self.appendDecimal(UInt64(frame.line), to: &output)
                output.append(contentsOf: Literal.jsonColumn)
                Self.appendDecimal(UInt64(frame.column), to: &output)
                output.append(contentsOf: frame.isInlined ? Literal.jsonInlinedTrue : Literal.jsonInlinedFalse)
                if frame.isSymbolOnly { output.append(contentsOf: Literal.jsonSymbolOnly) }
                output.append(UInt8(ascii: "}"))
            }
            output.append(contentsOf: Literal.jsonEnd)
        }
    }

    private mutating func function(_ reference: StringRef) -> [UInt8] {
        if let cached = functions.value(Self.key(reference)) { return cached }
        var raw: [UInt8] = []
        table.withUTF8(reference) { raw = Array($0) }
        let bytes: [UInt8]
        if raw.isEmpty {
            bytes = Literal.unknown
        } else if Self.mayBeMangled(raw) {
            bytes = escaped(demangler.demangleOrSelf(String(decoding: raw, as: UTF8.self)))
        } else {
            bytes = escaped(raw)
        }
        functions.store(Self.key(reference), bytes)
        return bytes
    }

    private mutating func mangledName(_ reference: StringRef) -> [UInt8] {
        if let cached = mangled.value(Self.key(reference)) { return cached }
        var raw: [UInt8] = []
        table.withUTF8(reference) { raw = Array($0) }
        let bytes = escaped(raw)
        mangled.store(Self.key(reference), bytes)
        return bytes
    }

    private mutating func path(_ directory: StringRef, _ file: StringRef) -> [UInt8] {
        // Files are few: directory offset and file offset fit one key.
        let key = UInt64(directory.offset) << 32 | UInt64(file.offset)
        if let cached = paths.value(key) { return cached }
        var name: [UInt8] = [], folder: [UInt8] = []
        table.withUTF8(file) { name = Array($0) }
        table.withUTF8(directory) { folder = Array($0) }
        var joined: [UInt8] = []
        if !name.isEmpty {
            if !folder.isEmpty && name.first != UInt8(ascii: "/") {
                joined = folder
                if folder.last != UInt8(ascii: "/") { joined.append(UInt8(ascii: "/")) }
            }
            joined.append(contentsOf: name)
        }
        let bytes = escaped(joined)
        paths.store(key, bytes)
        return bytes
    }

    private func escaped(_ text: String) -> [UInt8] {
        escaped(Array(text.utf8))
    }

    /// Whether a name starts like a C++, Swift or Rust mangled name (C names skip the demangler).
    static func mayBeMangled(_ name: [UInt8]) -> Bool {
        guard name.count >= 2 else { return false }
        let first = name[0], second = name[1]
        if first == UInt8(ascii: "_") {
            return second == UInt8(ascii: "Z") || second == UInt8(ascii: "R") || second == UInt8(ascii: "T")
                || second == UInt8(ascii: "$") || (second == UInt8(ascii: "_") && name.count > 2 && name[2] == UInt8(ascii: "Z"))
        }
        return first == UInt8(ascii: "$")
    }

    private func escaped(_ text: [UInt8]) -> [UInt8] {
        guard style == .json, text.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
            return text
        }
        var out: [UInt8] = []
        out.reserveCapacity(text.count + 8)
        for byte in text {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: "\\\"".utf8)
            case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
            case UInt8(ascii: "\n"): out.append(contentsOf: "\\n".utf8)
            case UInt8(ascii: "\r"): out.append(contentsOf: "\\r".utf8)
            case UInt8(ascii: "\t"): out.append(contentsOf: "\\t".utf8)
            case 0..<0x20:
                out.append(contentsOf: "\\u00".utf8)
                out.append(Self.hexDigits[Int(byte >> 4)])
                out.append(Self.hexDigits[Int(byte & 15)])
            default: out.append(byte)
            }
        }
        return out
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Output fragments as bytes, made once.
    private enum Literal {
        static let hexPrefix = Array("0x".utf8)
        static let indent = Array("    ".utf8)
        static let gap = Array("  ".utf8)
        static let unknown = Array("??".utf8)
        static let inlined = Array("  (inlined)".utf8)
        static let symbolOnly = Array("  (symbol table only)".utf8)
        static let noFrames = Array("    ??\n".utf8)
        static let jsonAddress = Array("{\"address\":\"0x".utf8)
        static let jsonFrames = Array("\",\"frames\":[".utf8)
        static let jsonFunction = Array("{\"function\":\"".utf8)
        static let jsonMangled = Array("\",\"mangled\":\"".utf8)
        static let jsonFile = Array("\",\"file\":\"".utf8)
        static let jsonLine = Array("\",\"line\":".utf8)
        static let jsonColumn = Array(",\"column\":".utf8)
        static let jsonInlinedTrue = Array(",\"inlined\":true".utf8)
        static let jsonInlinedFalse = Array(",\"inlined\":false".utf8)
        static let jsonSymbolOnly = Array(",\"symbol_only\":true".utf8)
        static let jsonEnd = Array("]}\n".utf8)
    }

    static func appendHex(_ value: UInt64, to output: inout [UInt8]) {
        if value == 0 { output.append(UInt8(ascii: "0")); return }
        var shift = (63 - value.leadingZeroBitCount) / 4 * 4
        while shift >= 0 {
            output.append(hexDigits[Int((value >> UInt64(shift)) & 15)])
            shift -= 4
        }
    }

    static func appendDecimal(_ value: UInt64, to output: inout [UInt8]) {
        if value < 10 { output.append(UInt8(ascii: "0") + UInt8(value)); return }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { buffer in
            while rest > 0 {
                buffer[count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                count += 1
            }
            for index in stride(from: count - 1, through: 0, by: -1) { output.append(buffer[index]) }
        }
    }

    /// Parses a hex address (`0x` optional) from bytes, ignoring surrounding spaces; nil if invalid.
    public static func parseAddress(_ bytes: UnsafeRawBufferPointer) -> UInt64? {
        var start = 0, end = bytes.count
        while start < end && (bytes[start] == 0x20 || bytes[start] == 0x09) { start += 1 }
        while end > start && (bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 || bytes[end - 1] == 0x0d) { end -= 1 }
        if end - start >= 2 && bytes[start] == UInt8(ascii: "0") && (bytes[start + 1] | 0x20) == UInt8(ascii: "x") {
            start += 2
        }
        guard end > start, end - start <= 16 else { return nil }
        var value: UInt64 = 0
        for index in start..<end {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt64(digit)
        }
        return value
    }
}
