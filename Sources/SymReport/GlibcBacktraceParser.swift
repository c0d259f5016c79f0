/// Reads glibc `backtrace_symbols` output: `/path/prog(+0x1234) [0x55…]`,
/// `/path/lib.so(func+0x1c) [0x7f…]`, one frame per line.
///
/// Address convention: every address is a return address (frame 0 is the return from the
/// `backtrace()` call itself), so each is looked up at `pc - 1`. `(+0x…)` is relative to the
/// load bias (`l_addr`), a file virtual address; `(func+0x…)` is relative to the dynamic symbol.
enum GlibcBacktraceParser {
    struct Line {
        var path: String
        var symbol: String?
        var offset: UInt64?
        var address: UInt64
    }

    /// The frame on `line`, when it has the `module(…) [0x…]` shape.
    static func frame(in line: Substring) -> Line? {
        let cursor = LineCursor(line)
        guard let bracket = cursor.findLast("[0x") else { return nil }
        var addressCursor = LineCursor(line, at: bracket + 1)
        guard let address = addressCursor.hexNumber(), addressCursor.skip("]") else { return nil }
        addressCursor.skipSpaces()
        guard addressCursor.atEnd else { return nil }
        var close = bracket
        while close > 0 && (cursor.bytes[close - 1] == 0x20) { close -= 1 }
        guard close > 0, cursor.bytes[close - 1] == UInt8(ascii: ")"),
              let open = cursor.bytes[..<(close - 1)].lastIndex(of: UInt8(ascii: "(")) else {
            // `[0x…]` alone: glibc found no module for the address.
            let path = cursor.text(0..<close).trimmed
            return path.isEmpty ? Line(path: "", address: address) : nil
        }
        let path = cursor.text(0..<open).trimmed
        let inner = cursor.text((open + 1)..<(close - 1))
        guard !path.isEmpty, !path.contains(" ") || path.hasPrefix("/") else { return nil }
        if inner.isEmpty { return Line(path: path, address: address) }
        guard let plus = inner.lastIndex(of: "+") else { return nil }
        var offsetCursor = LineCursor(inner[inner.index(after: plus)...])
        guard let offset = offsetCursor.hexNumber(), offsetCursor.atEnd else { return nil }
        let symbol = String(inner[..<plus])
        return Line(path: path, symbol: symbol.isEmpty ? nil : symbol, offset: offset, address: address)
    }

    static func parse(_ lines: [Substring]) -> CrashReport {
        var report = CrashReport(format: .glibc, lines: lines)
        var stack = ReportStack(name: "backtrace", crashed: true)
        for (number, line) in lines.enumerated() {
            guard let parsed = frame(in: line) else {
                // A blank or other line ends a backtrace; the next one starts a new stack.
                if !stack.frames.isEmpty {
                    report.stacks.append(stack)
                    stack = ReportStack(name: "backtrace", crashed: false)
                }
                continue
            }
            var frame = ReportFrame(index: stack.frames.count, address: parsed.address,
                                    convention: .returnAddress, line: number)
            if !parsed.path.isEmpty {
                frame.module = report.moduleIndex(path: parsed.path)
                frame.moduleOffset = parsed.offset
                frame.symbol = parsed.symbol
                frame.function = parsed.symbol
            } else {
                frame.problem = "glibc found no module for this address"
            }
            stack.frames.append(frame)
        }
        if !stack.frames.isEmpty { report.stacks.append(stack) }
        return report
    }
}
