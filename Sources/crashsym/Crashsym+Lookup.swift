import ArgumentParser
import Dispatch
import Synchronization
import CrashsymCommandLine
import SymBytes
import Symbolication
#if canImport(Glibc)
import Glibc
#endif

extension Crashsym {
    /// `crashsym lookup`: addresses to functions, file:line and inlined frames.
    struct Lookup: ParsableCommand {
        static let configuration = CommandConfiguration(
            _superCommandName: "crashsym",  // for `Crashsym.quickParse`, which says why
            abstract: "Resolve addresses in a .csym table or an ELF file to functions, file:line and inlined frames.",
            discussion: """
                Addresses are module file virtual addresses in hex (0x optional), given as arguments or one per \
                line on standard input. Frames are printed innermost first; the physical function comes last. \
                An ELF file is converted on the fly (its separate debug file is looked up like `dump` does), and the \
                conversion kept in the table cache that `symbolicate` and `addr2line` share (`--no-cache`: not).

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

        @Flag(name: .customLong("no-cache"), help: "Neither read nor write the table cache ($CRASHSYM_CACHE_DIR, else $XDG_CACHE_HOME/crashsym, else ~/.cache/crashsym).")
        var noCache = false

        @OptionGroup var debug: DebugOptions

        func validate() throws {
            if let jobs, jobs < 1 { throw ValidationError("--jobs must be at least 1") }
            for address in addresses where Self.parse(address) == nil {
                throw ValidationError("not a hex address: '\(InputPreview.quote(address))'")
            }
        }

        static func parse(_ text: String) -> UInt64? {
            var copy = text
            return copy.withUTF8 { FrameRenderer.parseAddress(UnsafeRawBufferPointer($0)) }
        }

        /// Threads used by default: more would mostly wait on memory for little gain.
        static let defaultMaximumJobs = 4
        /// Complete lines (bytes) from one read that are worth a second thread; fewer are answered
        /// on the calling thread, so one address costs no thread start.
        static let parallelThreshold = 16 << 10
        /// Input bytes per block of a parallel run (about 800 addresses): small enough that the
        /// threads finish together and the first answers are written early, large enough for the
        /// renderer's batch search.
        static let blockBytes = 8 << 10

        func run() throws {
            let symbols: ModuleSymbols
            do {
                symbols = try ModuleSymbols(path: path, locator: debug.locator, decoder: debug.decoder,
                                            cache: noCache ? nil : TableCache.standard)
            } catch {
                FileOutput.standardError("crashsym: \(error)\n")
                throw ExitCode.failure
            }
            let style: FrameRenderer.Style = format == .json ? .json : .text
            let strings = FrameRenderer.RenderedStrings(table: symbols.table, style: style, demangles: !noDemangle)
            let main = LookupWorker(table: symbols.table, strings: strings, path: path, streams: true)
            var failed = false
            var helpers: [LookupWorker] = []
            if addresses.isEmpty {
                let jobs = self.jobs ?? min(FileSystem.processorCount, Self.defaultMaximumJobs)
                // Read standard input in large chunks and answer every complete line of each chunk
                // before the next read, so a partner on a pipe gets its answer without waiting for more
                // input. The buffer is raw memory so the loop captures nothing in closures.
                var capacity = 1 << 20
                var buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
                defer { buffer.deallocate() }
                // Mapped in one call, not 256 faults as `read` first fills it.
                WritablePages.populate(buffer, count: capacity)
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
                                strings.prefault()
                                helpers = (1..<jobs).map { _ in
                                    LookupWorker(table: symbols.table, strings: strings, path: path, streams: false)
                                }
                            }
                            answerInParallel(lines, workers: [main] + helpers)
                        } else {
                            main.answer(block: 0, of: LineBlocks(lines))
                            main.emit()
                        }
                    } else {
                        linesEnd = 0
                    }
                    pending = end - linesEnd
                    if linesEnd > 0 && pending > 0 { buffer.copyMemory(from: buffer + linesEnd, byteCount: pending) }
                }
                // The last line, without a newline.
                main.answer(block: 0, of: LineBlocks(UnsafeRawBufferPointer(start: buffer, count: pending)))
                failed = helpers.contains { $0.failed }
            } else {
                for address in addresses { main.answer(line: Array(address.utf8)) }
                main.finishBatch()
            }
            main.emit()
            // Said once, after the answers (the same place however many threads answered).
            if let beyond = ([main] + helpers).compactMap(\.addressBeyondModule).min() {
                FileOutput.standardError("crashsym: 0x\(String(beyond, radix: 16)) is above every segment of the module: "
                    + "lookup takes module-relative addresses (file virtual addresses: a runtime pc minus the module's "
                    + "load address, plus its first segment's address)\n")
            }
            if failed || main.failed { throw ExitCode.failure }
        }

        /// Answers complete `lines` with one thread per worker: the lines are cut at line boundaries
        /// into blocks, which the threads take in order as they become free, each answering into
        /// the block's own output; a thread that finishes the next block to write writes it (and
        /// any finished ones after it), so writing overlaps answering and the output is one
        /// thread's. A thread stays at most `LookupPipeline.window` blocks ahead of the writing,
        /// which bounds the answers held.
        private func answerInParallel(_ lines: UnsafeRawBufferPointer, workers: [LookupWorker]) {
            let base = lines.baseAddress!
            /// The end of the line that `offset` is in (just past its newline), or the end of `lines`.
            func lineBoundary(atOrAfter offset: Int) -> Int {
                guard offset > 0 else { return 0 }
                guard offset < lines.count else { return lines.count }
                guard let newline = memchr(base + offset - 1, 0x0a, lines.count - offset + 1) else { return lines.count }
                return UnsafeRawPointer(newline) - base + 1
            }
            var cuts = [0]
            while cuts.last! < lines.count { cuts.append(lineBoundary(atOrAfter: cuts.last! + Self.blockBytes)) }
            let blocks = LineBlocks(base: base, cuts: cuts)
            let pipeline = LookupPipeline(blocks: blocks.count)
            DispatchQueue.concurrentPerform(iterations: min(workers.count, blocks.count)) { part in
                while let block = pipeline.nextBlock() {
                    let output = pipeline.output()
                    workers[part].answer(block: block, of: blocks, into: output)
                    pipeline.finish(block, output)
                }
            }
        }
    }
}

/// Lines `lookup` has read, in blocks, answered where they were read (no copy: copying a
/// megabyte of input into a hundred arrays took fresh heap pages and time before any thread
/// started). The workers are handed these, not the caller's pointer: sharing the pointer is safe
/// because every call that reads the blocks returns before the caller reads into the buffer again
/// (for a parallel run, `DispatchQueue.concurrentPerform` returns only when every thread is done).
// Audited: read-only, and read only during the worker calls of `Lookup.run` and `answerInParallel`.
struct LineBlocks: @unchecked Sendable {
    private let base: UnsafeRawPointer?
    /// Block `n` is the bytes `cuts[n]..<cuts[n + 1]`.
    private let cuts: [Int]

    init(base: UnsafeRawPointer, cuts: [Int]) {
        self.base = base
        self.cuts = cuts
    }

    /// `lines` as one block.
    init(_ lines: UnsafeRawBufferPointer) {
        base = lines.baseAddress
        cuts = [0, lines.count]
    }

    var count: Int { cuts.count - 1 }

    subscript(block: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: base.map { $0 + cuts[block] }, count: cuts[block + 1] - cuts[block])
    }
}

/// The ordering of one parallel run of `lookup` (see `Lookup.answerInParallel`): which block is
/// next to answer, the answered blocks waiting for the ones before them, and who writes.
final class LookupPipeline: Sendable {
    /// Blocks a thread may answer ahead of the next one to write (about 800 addresses each):
    /// enough that a thread descheduled for a time slice while answering the next block to write
    /// seldom holds the others up (on a busy machine), few enough to bound the answers held.
    static let window = 32

    private let blockCount: Int
    private let taken = Atomic<Int>(0)
    /// Blocks written; read without the lock by threads checking the window.
    private let written = Atomic<Int>(0)
    private let state = Mutex(State())

    private struct State {
        /// Answered blocks not yet written, by block.
        var finished: [Int: BlockOutput] = [:]
        /// Whether a thread is writing (the others leave their blocks to it).
        var writing = false
        /// Outputs written, for reuse.
        var free: [BlockOutput] = []
    }

    init(blocks: Int) { blockCount = blocks }

    /// The next block to answer, nil when all are taken; waits while it is `window` blocks
    /// ahead of the writing (another thread is answering the block the writing waits for).
    func nextBlock() -> Int? {
        let block = taken.wrappingAdd(1, ordering: .relaxed).oldValue
        guard block < blockCount else { return nil }
        // Sleeping, not spinning: the thread answering the block waited for may need this core.
        while block >= written.load(ordering: .acquiring) + Self.window { usleep(50) }
        return block
    }

    /// An empty output for a block.
    func output() -> BlockOutput {
        state.withLock { $0.free.popLast() } ?? BlockOutput()
    }

    /// Hands over answered block `block`; writes it, and the finished blocks after it, when it is
    /// the next to write and no other thread is writing.
    func finish(_ block: Int, _ output: BlockOutput) {
        var ready = state.withLock { state in
            state.finished[block] = output
            return Self.takeReady(&state, from: written.load(ordering: .relaxed))
        }
        while !ready.isEmpty {
            for output in ready { output.write() }
            ready = state.withLock { state in
                state.free += ready
                // Only the writer moves `written`: the blocks it wrote.
                let next = written.load(ordering: .relaxed) + ready.count
                written.store(next, ordering: .releasing)
                state.writing = false
                return Self.takeReady(&state, from: next)
            }
        }
    }

    /// The finished blocks from `next` on, in order, when no other thread is writing (which
    /// then becomes this thread's job); empty otherwise.
    private static func takeReady(_ state: inout State, from next: Int) -> [BlockOutput] {
        guard !state.writing else { return [] }
        var ready: [BlockOutput] = []
        while let output = state.finished.removeValue(forKey: next + ready.count) { ready.append(output) }
        if !ready.isEmpty { state.writing = true }
        return ready
    }
}
