import SymBytes
import SymTable
import Symbolication

/// llvm-symbolizer's `--print-source-context-lines=N`: the source lines around each frame's line,
/// read from the file the frame names when it exists here, printed after the frame's location
/// line (`3  : text`, `4 >: the line`, numbers right-aligned) or, in JSON, as each frame's
/// `"Source"` member. Follows LLVM 21's `DIPrinter.cpp` `SourceCode`: lines from
/// `max(1, line - N/2)` to that plus `N - 1`, cut at the file's end; nothing when the file cannot
/// be read.
///
/// It completes the answers `SymbolizerRenderer` writes (their layout is llvm's: one location per
/// frame, in order), so the renderer itself stays as it is.
public struct SymbolizerSourceContext {
    /// How many lines (none when zero or negative).
    public let lines: Int64
    /// Files read so far (nil: unreadable), by path.
    private var files: [String: [UInt8]?] = [:]
    private var frames: [Frame] = []

    /// Largest source file read.
    static let maximumFileSize = 64 << 20

    /// Creates the context printer for `lines` lines.
    public init(lines: Int64) {
        self.lines = lines
    }

    /// Adds the context of each frame of the CODE answer that `SymbolizerRenderer` (with `options`)
    /// wrote at `output[start...]` for `address` (the looked-up address) in `module`.
    public mutating func complete(answerAt start: Int, of output: inout [UInt8], address: UInt64,
                                  module: CachedModule, options: SymbolizerOptions) throws(FormatError) {
        guard lines > 0 else { return }
        let table = module.symbols.table
        frames.removeAll(keepingCapacity: true)
        _ = try table.forEachFrame(at: address) { frame in frames.append(frame) }
        let symbol = options.functions == .linkage ? module.elfSymbols?.symbol(containing: address) : nil
        // (path, line) of each printed frame, in the renderer's order.
        var locations: [(path: [UInt8], line: UInt32)] = []
        if frames.isEmpty {
            locations.append((symbol?.file.map { Array($0.utf8) } ?? [], 0))
        } else {
            let shown = options.inlines ? frames.count : 1
            for index in 0..<shown {
                let location = frames[index]
                var path = FrameRenderer.joinedPath(table, location.directory, location.file)
                if index == shown - 1, path.isEmpty, let file = symbol?.file { path = Array(file.utf8) }
                locations.append((path, location.line))
            }
        }
        let contexts = locations.map { context(path: $0.path, line: $0.line) }
        guard contexts.contains(where: { $0 != nil }) else { return }
        if options.outputStyle == .json {
            insertJSON(contexts, answerAt: start, of: &output)
        } else {
            insertText(contexts, answerAt: start, of: &output, options: options)
        }
    }

    /// The LLVM style: after each frame's location line (the second line of a frame, or its only
    /// line with `--functions=none` or `--pretty-print`; after the address line of `-a`).
    private func insertText(_ contexts: [[UInt8]?], answerAt start: Int, of output: inout [UInt8], options: SymbolizerOptions) {
        var lineEnds: [Int] = []
        for index in start..<output.count where output[index] == 0x0a { lineEnds.append(index) }
        let perFrame = options.pretty || options.functions == .none ? 1 : 2
        let header = options.printAddress && !options.pretty ? 1 : 0
        var rebuilt = Array(output[..<start])
        var lineStart = start
        for (number, end) in lineEnds.enumerated() {
            rebuilt.append(contentsOf: output[lineStart...end])
            lineStart = end + 1
            let position = number - header
            if position >= 0, (position + 1) % perFrame == 0 {
                let frame = position / perFrame
                if frame < contexts.count, let context = contexts[frame] { rebuilt.append(contentsOf: context) }
            }
        }
        rebuilt.append(contentsOf: output[lineStart...])
        output = rebuilt
    }

    /// JSON: a `"Source"` member before each frame's `"StartAddress"` (llvm's keys are sorted).
    private func insertJSON(_ contexts: [[UInt8]?], answerAt start: Int, of output: inout [UInt8]) {
        let marker = Array(#","StartAddress":"#.utf8)
        var rebuilt = Array(output[..<start])
        var index = start, frame = 0
        while index < output.count {
            if frame < contexts.count, output[index] == marker[0], index + marker.count <= output.count,
               output[index..<(index + marker.count)].elementsEqual(marker) {
                if let context = contexts[frame] {
                    rebuilt.append(contentsOf: #","Source":""#.utf8)
                    rebuilt.append(contentsOf: SymbolizerRenderer.jsonEscaped(context))
                    rebuilt.append(UInt8(ascii: "\""))
                }
                frame += 1
            }
            rebuilt.append(output[index])
            index += 1
        }
        output = rebuilt
    }

    /// The lines around `line` of the file at `path`, as llvm formats them; nil when unreadable.
    mutating func context(path: [UInt8], line: UInt32) -> [UInt8]? {
        guard !path.isEmpty else { return nil }
        let name = String(decoding: path, as: UTF8.self)
        let source: [UInt8]?
        if let known = files[name] {
            source = known
        } else {
            if FileSystem.kind(of: name) == .file, let file = try? MappedFile(path: name) {
                source = Array(file.bytes.prefix(Self.maximumFileSize))
            } else {
                source = nil
            }
            files[name] = source
        }
        guard let source else { return nil }
        return Self.format(source, line: Int64(line), lines: lines)
    }

    /// `SourceCode::format`: lines `first...last` of `source` with their numbers, `>` on `line`.
    static func format(_ source: [UInt8], line: Int64, lines: Int64) -> [UInt8]? {
        let first = max(1, line - lines / 2)
        let (last, overflow) = first.addingReportingOverflow(lines - 1)
        guard !overflow, last >= first else { return nil }
        // The start of line `first` (llvm's pruneSource: nil when the file has fewer lines).
        var position = 0, current: Int64 = 1
        while current < first {
            guard let newline = source[position...].firstIndex(of: 0x0a) else { return nil }
            position = newline + 1
            current += 1
        }
        // std::ceil(std::log10(last)) digits at least.
        var width = 0, power: Int64 = 1
        while power < last { power = power.multipliedReportingOverflow(by: 10).overflow ? .max : power * 10; width += 1 }
        var output: [UInt8] = []
        var number = first
        // pruneSource keeps up to the newline ending line `last`; format prints each piece.
        while number <= last {
            let newline = source[position...].firstIndex(of: 0x0a)
            var text = source[position..<(newline ?? source.count)]
            if text.last == 0x0d { text = text.dropLast() }
            let digits = String(number)
            output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: max(0, width - digits.utf8.count)))
            output.append(contentsOf: digits.utf8)
            output.append(contentsOf: (number == line ? " >: " : "  : ").utf8)
            output.append(contentsOf: text)
            output.append(0x0a)
            guard let newline else { break }
            position = newline + 1
            number += 1
            if position >= source.count { break }
        }
        return output
    }
}
