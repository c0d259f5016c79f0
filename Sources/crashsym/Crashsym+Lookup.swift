import ArgumentParser
import Dispatch
import Synchronization
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
                  crashsym lookup ./app --no-demangle < addresses.txt
                """
        )

        @Argument(help: ArgumentHelp("A .csym table or an ELF file.", valueName: "table-or-elf"))
        var path: String

        @Argument(help: ArgumentHelp("Addresses (hex). Read from standard input when none are given.", valueName: "addr"))
        var addresses: [String] = []

        @Option(help: "Output format: text, or json (one object per address, one per line, in input order).")
        var format: OutputFormat = .text

        @Flag(name: .customLong("no-demangle"), help: "Print function names as stored (mangled), like llvm-symbolizer --no-demangle.")
        var noDemangle = false

        @Option(name: .shortAndLong, help: ArgumentHelp(
            "Threads answering large batches of addresses from standard input (default: number of cores, at most \(Self.defaultMaximumJobs)).",
            valueName: "n"))
        var jobs: Int?

        @OptionGroup var debug: DebugOptions

        func validate() throws {
            if let jobs, jobs < 1 { throw ValidationError("--jobs must be at least 1") }
            for address in addresses where Self.parse(address) == nil {
                throw ValidationError("not a hex address: '\(address)'")
            }
        }

        static func parse(_ text: String) -> UInt64? {
            var copy = text
            return copy.withUTF8 { FrameRenderer.parseAddress(UnsafeRawBufferPointer($0)) }
        }

        /// Threads used by default: more would each warm their own caches for little gain.
        static let defaultMaximumJobs = 4
        /// Complete lines (bytes) from one read that are worth a second thread; fewer are answered
        /// on the calling thread, so one address costs no thread start.
        static let parallelThreshold = 16 << 10
        /// Input bytes per thread per round: bounds the output held back until a round is written
        /// in order (about 3,300 addresses; under 2 MB of output with deep inline chains). Larger
        /// rounds measured slower: their buffers cost more page faults than the fewer joins save.
        static let roundBytesPerJob = 32 << 10
        /// Input bytes per block of a round (about 800 addresses): small enough that the threads
        /// finish a round together, large enough for the renderer's batch search.
        static let blockBytes = 8 << 10

        func run() throws {
            let symbols: ModuleSymbols
            do {
                symbols = try ModuleSymbols(path: path, locator: debug.locator, decoder: debug.decoder)
            } catch {
                FileOutput.standardError("crashsym: \(error)\n")
                throw ExitCode.failure
            }
            let style: FrameRenderer.Style = format == .json ? .json : .text
            let strings = FrameRenderer.RenderedStrings(table: symbols.table, style: style, demangles: !noDemangle)
            let main = LookupWorker(table: symbols.table, strings: strings, path: path, streams: true)
            var failed = false
            if addresses.isEmpty {
                let jobs = self.jobs ?? min(FileSystem.processorCount, Self.defaultMaximumJobs)
                var helpers: [LookupWorker] = []
                // Read standard input in large chunks and answer every complete line of each chunk
                // before the next read, so a partner on a pipe gets its answer without waiting for more
                // input. The buffer is raw memory so the loop captures nothing in closures.
                var capacity = 1 << 20
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
                    // Complete lines end at the last newline read.
                    var linesEnd = end
                    while linesEnd > pending && buffer.load(fromByteOffset: linesEnd - 1, as: UInt8.self) != 0x0a {
                        linesEnd -= 1
                    }
                    // The pending bytes hold no newline: without one in the new bytes, no line is complete.
                    if linesEnd > pending {
                        let lines = UnsafeRawBufferPointer(start: buffer, count: linesEnd)
                        if jobs > 1 && linesEnd >= Self.parallelThreshold {
                            if helpers.isEmpty {
                                helpers = (1..<jobs).map { _ in
                                    LookupWorker(table: symbols.table, strings: strings, path: path, streams: false)
                                }
                            }
                            answerInParallel(lines, workers: [main] + helpers)
                        } else {
                            main.answer(lines: Array(lines))
                            main.emit()
                        }
                    } else {
                        linesEnd = 0
                    }
                    pending = end - linesEnd
                    if linesEnd > 0 && pending > 0 { buffer.copyMemory(from: buffer + linesEnd, byteCount: pending) }
                }
                // The last line, without a newline.
                main.answer(lines: Array(UnsafeRawBufferPointer(start: buffer, count: pending)))
                failed = helpers.contains { $0.failed }
            } else {
                for address in addresses { main.answer(line: Array(address.utf8)) }
                main.finishBatch()
            }
            main.emit()
            if failed || main.failed { throw ExitCode.failure }
        }

        /// Answers complete `lines` with one thread per worker, in rounds: each round is cut at line
        /// boundaries into blocks, which the threads take as they become free; once all are
        /// answered their outputs are written in input order, so the output is one thread's.
        private func answerInParallel(_ lines: UnsafeRawBufferPointer, workers: [LookupWorker]) {
            let base = lines.baseAddress!
            /// The end of the line that `offset` is in (just past its newline), or the end of `lines`.
            func lineBoundary(atOrAfter offset: Int) -> Int {
                guard offset > 0 else { return 0 }
                guard offset < lines.count else { return lines.count }
                guard let newline = memchr(base + offset - 1, 0x0a, lines.count - offset + 1) else { return lines.count }
                return UnsafeRawPointer(newline) - base + 1
            }
            var start = 0
            while start < lines.count {
                let roundEnd = lineBoundary(atOrAfter: min(lines.count, start + workers.count * Self.roundBytesPerJob))
                // Copies (cheap next to answering them) so that only Sendable values cross threads.
                var cuts = [start]
                while cuts.last! < roundEnd { cuts.append(lineBoundary(atOrAfter: min(roundEnd, cuts.last! + Self.blockBytes))) }
                let blocks = cuts.indices.dropLast().map { Array(UnsafeRawBufferPointer(start: base + cuts[$0], count: cuts[$0 + 1] - cuts[$0])) }
                let next = Atomic<Int>(0)
                DispatchQueue.concurrentPerform(iterations: min(workers.count, blocks.count)) { part in
                    while true {
                        let block = next.wrappingAdd(1, ordering: .relaxed).oldValue
                        guard block < blocks.count else { return }
                        workers[part].answer(block: block, lines: blocks[block])
                    }
                }
                var owners = [(worker: LookupWorker, span: LookupWorker.Span)?](repeating: nil, count: blocks.count)
                for worker in workers {
                    for span in worker.spans { owners[span.block] = (worker, span) }
                }
                for case let (worker, span)? in owners { worker.emit(span: span) }
                for worker in workers { worker.reset() }
                start = roundEnd
            }
        }
    }
}
