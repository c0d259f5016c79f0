import ArgumentParser
import CrashsymCommandLine
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
            // Addresses are answered in batches: the renderer finds their ranges all at once.
            var batch: [UInt64] = []
            batch.reserveCapacity(Self.batchSize)
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
                            if !queue(line, &batch, &renderer, &output) { failed = true }
                            lineStart = index + 1
                        }
                        index += 1
                    }
                    pending = end - lineStart
                    if lineStart > 0 && pending > 0 { buffer.copyMemory(from: buffer + lineStart, byteCount: pending) }
                    if !answer(&batch, &renderer, &output) { failed = true }
                    output.flush(to: STDOUT_FILENO)
                }
                if pending > 0 && !queue(UnsafeRawBufferPointer(start: buffer, count: pending), &batch, &renderer, &output) {
                    failed = true
                }
            } else {
                for address in addresses {
                    var copy = address
                    if !copy.withUTF8({ queue(UnsafeRawBufferPointer($0), &batch, &renderer, &output) }) { failed = true }
                }
            }
            if !answer(&batch, &renderer, &output) { failed = true }
            output.flush(to: STDOUT_FILENO)
            if failed { throw ExitCode.failure }
        }

        /// Addresses answered at once: enough for the batch search to overlap its memory reads,
        /// few enough that a partner on a pipe is not kept waiting.
        static let batchSize = 4096

        /// Queues the address on `line` for answering; false (after answering the queue and saying
        /// why on standard error, so the two streams stay in order) when the line is not an address.
        private func queue(_ line: UnsafeRawBufferPointer, _ batch: inout [UInt64], _ renderer: inout FrameRenderer,
                           _ output: inout OutputBytes) -> Bool {
            if let address = FrameRenderer.parseAddress(line) {
                batch.append(address)
                return batch.count < Self.batchSize || answer(&batch, &renderer, &output)
            }
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0d }) { return true }
            _ = answer(&batch, &renderer, &output)
            output.flush(to: STDOUT_FILENO)
            FileOutput.standardError("crashsym: not a hex address: '\(String(decoding: line, as: UTF8.self))'\n")
            return false
        }

        /// Answers the queued addresses into `output` and empties the queue; false (after saying
        /// why on standard error) when the table could not answer some of them.
        private func answer(_ batch: inout [UInt64], _ renderer: inout FrameRenderer, _ output: inout OutputBytes) -> Bool {
            guard !batch.isEmpty else { return true }
            let errors = batch.withUnsafeBufferPointer { renderer.render($0, into: &output) }
            batch.removeAll(keepingCapacity: true)
            if output.count >= 1 << 16 { output.flush(to: STDOUT_FILENO) }
            for error in errors { FileOutput.standardError("crashsym: \(path): \(error)\n") }
            return errors.isEmpty
        }
    }
}
