import Dispatch
import SymBytes
import SymTable
import Symbolication
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// `crashsym lookup`'s answering: addresses (arguments, or lines of standard input) to frames
/// from one module's table, written to standard output in input order; what is not an address,
/// or cannot be answered, is said on standard error in its place.
public enum AddressLookup {
    /// Threads used by default: more would mostly wait on memory for little gain.
    public static let defaultMaximumJobs = 4
    /// Complete lines (bytes) from one read that are worth a second thread; fewer are answered
    /// on the calling thread, so one address costs no thread start.
    static let parallelThreshold = 16 << 10
    /// Input bytes per block of a parallel run (about 800 addresses): small enough that the
    /// threads finish together and the first answers are written early, large enough for the
    /// renderer's batch search.
    static let blockBytes = 8 << 10

    /// What to print.
    public struct Options: Sendable {
        /// Text or JSON (one object per address, one per line).
        public var style: FrameRenderer.Style
        /// Whether function names are demangled (`--no-demangle`: as stored).
        public var demangles: Bool
        /// Threads answering large batches from standard input (at least 1).
        public var jobs: Int

        /// Options; `jobs` defaults to the cores, at most `defaultMaximumJobs`.
        public init(style: FrameRenderer.Style = .text, demangles: Bool = true,
                    jobs: Int = min(FileSystem.processorCount, AddressLookup.defaultMaximumJobs)) {
            self.style = style
            self.demangles = demangles
            self.jobs = max(1, jobs)
        }
    }

    /// The address `text` spells (hex, `0x` optional), or nil.
    public static func parse(_ text: String) -> UInt64? {
        var copy = text
        return copy.withUTF8 { FrameRenderer.parseAddress(UnsafeRawBufferPointer($0)) }
    }

    /// Answers `addresses` (from the arguments; each already checked by `parse`), or with none
    /// the lines of standard input, from `table` (opened from `path`, which messages name).
    /// Returns false when some line was not an address or some address could not be answered.
    public static func run(table: SymbolTable, path: String, addresses: [String], options: Options) -> Bool {
        let strings = FrameRenderer.RenderedStrings(table: table, style: options.style, demangles: options.demangles)
        let main = LookupWorker(table: table, strings: strings, path: path, streams: true)
        var failed = false
        var helpers: [LookupWorker] = []
        if addresses.isEmpty {
            let jobs = options.jobs
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
                                LookupWorker(table: table, strings: strings, path: path, streams: false)
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
            StandardError.write("crashsym: 0x\(String(beyond, radix: 16)) is above every segment of the module: "
                + "lookup takes module-relative addresses (file virtual addresses: a runtime pc minus the module's "
                + "load address, plus its first segment's address)\n")
        }
        return !(failed || main.failed)
    }

    /// Answers complete `lines` with one thread per worker: the lines are cut at line boundaries
    /// into blocks, which the threads take in order as they become free, each answering into
    /// the block's own output; a thread that finishes the next block to write writes it (and
    /// any finished ones after it), so writing overlaps answering and the output is one
    /// thread's. A thread stays at most `LookupPipeline.window` blocks ahead of the writing,
    /// which bounds the answers held.
    static func answerInParallel(_ lines: UnsafeRawBufferPointer, workers: [LookupWorker]) {
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

/// Lines `lookup` has read, in blocks, answered where they were read (no copy: copying a
/// megabyte of input into a hundred arrays took fresh heap pages and time before any thread
/// started). The workers are handed these, not the caller's pointer: sharing the pointer is safe
/// because every call that reads the blocks returns before the caller reads into the buffer again
/// (for a parallel run, `DispatchQueue.concurrentPerform` returns only when every thread is done).
// Audited: read-only, and read only during the worker calls of `AddressLookup.run` and `answerInParallel`.
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

/// The ordering of one parallel run of `lookup` (see `AddressLookup.answerInParallel`): which block is
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
