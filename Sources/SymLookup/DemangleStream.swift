import SymBytes
import SymDemangle
#if canImport(Glibc)
import Glibc
import Symbolication
#endif

/// `crashsym demangle`: names given as arguments, or text read from a descriptor and written back
/// with every mangled name demangled, line by line as it arrives (so `tail -f log | crashsym
/// demangle` shows each line at once, and a whole file goes through in large reads).
public struct DemangleStream: Sendable {
    /// How results are printed.
    public enum Format: String, Sendable, CaseIterable {
        /// Names (or the text) with demangled names in place.
        case text
        /// One object per name: `{"mangled": …, "demangled": … or null, "language": … or null}`.
        case json
    }

    /// The filter that finds and demangles names.
    public let filter: TextDemangler
    /// The output format.
    public let format: Format

    /// Creates a stream printing in `format` with `demangler`'s spelling.
    public init(demangler: Demangler, format: Format) {
        self.filter = TextDemangler(demangler: demangler)
        self.format = format
    }

    /// The output for names given as arguments: each argument is one name (text: its demangled
    /// form, or itself as `c++filt` prints a name it cannot demangle), one line each.
    public func output(forNames names: [String]) -> [UInt8] {
        var output: [UInt8] = []
        for name in names {
            var bytes = Array(name.utf8)
            bytes.withUnsafeMutableBytes { appendName(UnsafeRawBufferPointer($0), to: &output) }
        }
        return output
    }

    /// Reads `input` to its end and writes each line to `output` as soon as the read that
    /// completed it returns: text lines with their names demangled, or in JSON one object per line
    /// (the line is one name). Returns false when writing fails (a closed pipe).
    public func run(input: Int32, output: Int32) -> Bool {
        let readSize = 1 << 16
        var buffer = [UInt8](repeating: 0, count: readSize)
        var pending: [UInt8] = []  // an incomplete line carried to the next read
        var out: [UInt8] = []
        out.reserveCapacity(readSize * 2)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, readSize) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            buffer.withUnsafeBytes { chunk in
                let bytes = UnsafeRawBufferPointer(rebasing: chunk[0..<count])
                guard let lastNewline = bytes.lastIndex(of: 0x0a) else {
                    pending.append(contentsOf: bytes)
                    return
                }
                var start = 0
                if !pending.isEmpty {
                    // The carried line ends at the first newline of this read.
                    let first = bytes.firstIndex(of: 0x0a)!
                    pending.append(contentsOf: bytes[0...first])
                    pending.withUnsafeBytes { processLines($0, into: &out) }
                    pending.removeAll(keepingCapacity: true)
                    start = first + 1
                }
                if start <= lastNewline {
                    processLines(UnsafeRawBufferPointer(rebasing: bytes[start...lastNewline]), into: &out)
                }
                pending.append(contentsOf: bytes[(lastNewline + 1)...])
            }
            // Everything read so far is printed before the next read may block.
            guard Self.writeAll(out, to: output) else { return false }
            out.removeAll(keepingCapacity: true)
        }
        if !pending.isEmpty {
            pending.withUnsafeBytes { processLines($0, into: &out) }
        }
        return Self.writeAll(out, to: output)
    }

    /// Processes whole lines (each ending in a newline, except perhaps the last at the end of input).
    private func processLines(_ lines: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        switch format {
        case .text:
            // Names never span a newline: the whole block is one text.
            filter.demangleText(lines, into: &out)
        case .json:
            var start = 0
            while start < lines.count {
                var end = start
                while end < lines.count && lines[end] != 0x0a { end += 1 }
                var nameEnd = end
                if nameEnd > start && lines[nameEnd - 1] == 0x0d { nameEnd -= 1 }
                appendName(UnsafeRawBufferPointer(rebasing: lines[start..<nameEnd]), to: &out)
                start = end + 1
            }
        }
    }

    /// Appends one name's line in this stream's format.
    private func appendName(_ name: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        switch format {
        case .text:
            if !filter.demangler.withDemangled(utf8: name, { out.append(contentsOf: $0) }) {
                out.append(contentsOf: name)
            }
        case .json:
            let text = String(decoding: name, as: UTF8.self)
            out.append(contentsOf: #"{"mangled":""#.utf8)
            appendJSONEscaped(Array(text.utf8), to: &out)
            out.append(contentsOf: #"","demangled":"#.utf8)
            if let demangled = filter.demangler.demangle(text) {
                out.append(UInt8(ascii: "\""))
                appendJSONEscaped(Array(demangled.utf8), to: &out)
                out.append(UInt8(ascii: "\""))
            } else {
                out.append(contentsOf: "null".utf8)
            }
            out.append(contentsOf: #","language":"#.utf8)
            if let language = TextDemangler.language(of: text) {
                out.append(contentsOf: "\"\(language)\"".utf8)
            } else {
                out.append(contentsOf: "null".utf8)
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(0x0a)
    }

    /// Writes all of `bytes` to `descriptor`, retrying on EINTR; false on an error.
    public static func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        bytes.withUnsafeBytes { FileIO.writeAll(descriptor, $0) == 0 }
    }
}
