import ArgumentParser
import Symbolication
#if canImport(Glibc)
import Glibc
#endif

extension Crashsym {
    /// `crashsym lookup`: addresses to functions, file:line and inlined frames.
    struct Lookup: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Resolve addresses in a .csym table or an ELF file to functions, file:line and inlined frames.",
            discussion: """
                Addresses are module file virtual addresses in hex (0x optional), given as arguments or one per
                line on standard input. Frames are printed innermost first; the physical function comes last.
                An ELF file is converted on the fly (its separate debug file is looked up like `dump` does).

                Examples:
                  crashsym lookup symbols/5f0e….csym 0x4be844 0x4be900
                  crashsym lookup ./app --format json < addresses.txt
                """
        )

        @Argument(help: ArgumentHelp("A .csym table or an ELF file.", valueName: "table-or-elf"))
        var path: String

        @Argument(help: ArgumentHelp("Addresses (hex). Read from standard input when none are given.", valueName: "addr"))
        var addresses: [String] = []

        @Option(help: "Output format: text, or json (one object per address, one per line, in input order).")
        var format: OutputFormat = .text

        @OptionGroup var debug: DebugOptions

        func validate() throws {
            for address in addresses where Self.parse(address) == nil {
                throw ValidationError("not a hex address: '\(address)'")
            }
        }

        static func parse(_ text: String) -> UInt64? {
            var copy = text
            return copy.withUTF8 { FrameRenderer.parseAddress(UnsafeRawBufferPointer($0)) }
        }

        func run() throws {
            let symbols: ModuleSymbols
            do {
                symbols = try ModuleSymbols(path: path, locator: debug.locator, decoder: debug.decoder)
            } catch {
                FileOutput.standardError("crashsym: \(error)\n")
                throw ExitCode.failure
            }
            var renderer = FrameRenderer(table: symbols.table, style: format == .json ? .json : .text)
            var output = OutputBytes(capacity: 1 << 17)
            var failed = false
            if addresses.isEmpty {
                // Read standard input in chunks and answer every complete line of each chunk before
                // the next read, so a partner on a pipe gets its answer without waiting for more input.
                // The buffer is raw memory so the loop captures nothing in closures (no boxed state).
                var capacity = 1 << 16
                var buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
                defer { buffer.deallocate() }
                var pending = 0  // bytes of an incomplete line at the start of the buffer
                while true {
                    if pending == capacity {
                        // One line longer than the buffer: grow it.
                        let larger = UnsafeMutableRawPointer.allocate(byteCount: capacity * 2, alignment: 16)
                        larger.copyMemory(from: buffer, byteCount: pending)
                        buffer.deallocate()
                        buffer = larger
                        capacity *= 2
                    }
                    let count = read(STDIN_FILENO, buffer + pending, capacity - pending)
                    if count < 0 && errno == EINTR { continue }
                    if count <= 0 { break }
                    let end = pending + count
                    var lineStart = 0
                    var index = pending
                    while index < end {
                        if buffer.load(fromByteOffset: index, as: UInt8.self) == 0x0a {
                            let line = UnsafeRawBufferPointer(start: buffer + lineStart, count: index - lineStart)
                            if !answer(line, &renderer, &output) { failed = true }
                            lineStart = index + 1
                        }
                        index += 1
                    }
                    pending = end - lineStart
                    if lineStart > 0 && pending > 0 { buffer.copyMemory(from: buffer + lineStart, byteCount: pending) }
                    output.flush(to: STDOUT_FILENO)
                }
                if pending > 0 && !answer(UnsafeRawBufferPointer(start: buffer, count: pending), &renderer, &output) {
                    failed = true
                }
            } else {
                for address in addresses {
                    var copy = address
                    if !copy.withUTF8({ answer(UnsafeRawBufferPointer($0), &renderer, &output) }) { failed = true }
                }
            }
            output.flush(to: STDOUT_FILENO)
            if failed { throw ExitCode.failure }
        }

        /// Answers one line into `output`; false (after saying why on standard error) when it
        /// could not. Output so far is written first, so the two streams stay in order.
        private func answer(_ line: UnsafeRawBufferPointer, _ renderer: inout FrameRenderer,
                            _ output: inout OutputBytes) -> Bool {
            do {
                switch try renderer.answer(line: line, into: &output) {
                case .answered, .blank:
                    if output.count >= 1 << 16 { output.flush(to: STDOUT_FILENO) }
                    return true
                case .notAnAddress:
                    output.flush(to: STDOUT_FILENO)
                    FileOutput.standardError("crashsym: not a hex address: '\(String(decoding: line, as: UTF8.self))'\n")
                    return false
                }
            } catch {
                FileOutput.standardError("crashsym: \(path): \(error)\n")
                return false
            }
        }
    }
}
