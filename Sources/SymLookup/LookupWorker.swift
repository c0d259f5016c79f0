import SymBytes
import SymTable
import Symbolication
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One thread's share of `crashsym lookup`: answers input lines into its own output buffer with its
/// own renderer (the names and paths rendered are shared by all workers), and keeps what it has
/// to say on standard error next to the output offset where it belongs, so that both streams are
/// written in input order whichever thread did the work.
///
/// The state sits behind a mutex so a worker can be handed to another thread; each worker is used
/// by one thread at a time, so the lock is never contended. In a parallel run, workers take
/// blocks of lines as they become free (a thread the scheduler preempts holds up no other) and
/// answer each into its own `BlockOutput`, which `LookupPipeline` writes in block order.
final class LookupWorker: Sendable {
    private let state: Mutex<State>

    /// Addresses answered at once: enough for the batch search to overlap its memory reads,
    /// few enough that a partner on a pipe is not kept waiting.
    static let batchSize = 4096

    /// A worker for `table` rendering with `strings` (shared by all workers of one run, so that a
    /// name is rendered and demangled once whichever thread meets it first); one that `streams`
    /// writes its output itself whenever it grows large (right for the worker answering on the
    /// calling thread; never while it answers a block of a parallel run).
    init(table: SymbolTable, strings: FrameRenderer.RenderedStrings, path: String, streams: Bool) {
        var state = State(renderer: FrameRenderer(table: table, strings: strings), path: path, streams: streams)
        state.moduleEnd = table.module.layout?.segments.map(\.addresses.upperBound).max()
        self.state = Mutex(state)
    }

    /// The lowest address asked for above every segment of the module (most likely an absolute
    /// runtime address), when the table records the module's layout.
    var addressBeyondModule: UInt64? { state.withLock { $0.beyond } }

    /// Whether some line was not an address or some address could not be answered.
    var failed: Bool { state.withLock { $0.failed } }

    /// Answers every line of block `index` of `blocks` (see `State.answer(lines:)`).
    func answer(block index: Int, of blocks: LineBlocks) {
        state.withLock { state in state.answer(lines: blocks[index]) }
    }

    /// Answers the complete lines of block `index` of a parallel run into `block` (empty), which
    /// keeps the answers and notes until `BlockOutput.write()` writes them in block order.
    func answer(block index: Int, of blocks: LineBlocks, into block: BlockOutput) {
        state.withLock { state in
            swap(&state.output, &block.output)
            swap(&state.notes, &block.notes)
            // The block's answers must wait for the blocks before it.
            let streams = state.streams
            state.streams = false
            state.answer(lines: blocks[index])
            state.streams = streams
            swap(&state.output, &block.output)
            swap(&state.notes, &block.notes)
        }
    }

    /// Queues the address on `line`, or notes why it is not one.
    func answer(line: [UInt8]) {
        state.withLock { state in line.withUnsafeBytes { state.answer(line: $0) } }
    }

    /// Answers the queued addresses.
    func finishBatch() {
        state.withLock { $0.finishBatch() }
    }

    /// Writes the output and the notes, in order, to standard output and standard error.
    func emit() {
        state.withLock { $0.emit() }
    }

    private struct State: ~Copyable {
        var renderer: FrameRenderer
        var output = OutputBytes(capacity: 1 << 17)
        /// Messages for standard error, each written once `output` has been written up to `offset`.
        var notes: [(offset: Int, message: String)] = []
        /// Addresses queued for the renderer's batch search.
        var batch: [UInt64] = []
        /// The table's path, for messages.
        let path: String
        var streams: Bool
        var failed = false
        /// The end of the module's highest segment, when the table records its layout.
        var moduleEnd: UInt64?
        /// The lowest address asked for at or above `moduleEnd`.
        var beyond: UInt64?

        init(renderer: consuming FrameRenderer, path: String, streams: Bool) {
            self.renderer = renderer
            self.path = path
            self.streams = streams
            batch.reserveCapacity(LookupWorker.batchSize)
        }

        /// Answers every line of `text`: lines end at a newline, and the text after the last
        /// newline is one more line (callers hand over complete lines, or the input's unterminated
        /// last line).
        mutating func answer(lines text: UnsafeRawBufferPointer) {
            guard let base = text.baseAddress else { return }
            var lineStart = 0
            while lineStart < text.count, let newline = memchr(base + lineStart, 0x0a, text.count - lineStart) {
                let end = UnsafeRawPointer(newline) - base
                answer(line: UnsafeRawBufferPointer(start: base + lineStart, count: end - lineStart))
                lineStart = end + 1
            }
            if lineStart < text.count {
                answer(line: UnsafeRawBufferPointer(start: base + lineStart, count: text.count - lineStart))
            }
            finishBatch()
        }

        /// Queues the address on `line`, or notes why it is not one (after answering the queue, so
        /// the two streams stay in order); blank lines are skipped.
        mutating func answer(line: UnsafeRawBufferPointer) {
            if let address = FrameRenderer.parseAddress(line) {
                batch.append(address)
                if batch.count >= LookupWorker.batchSize { finishBatch() }
                return
            }
            if FrameRenderer.isBlank(line) { return }
            finishBatch()
            notes.append((output.count, "crashsym: not a hex address: '\(InputPreview.quote(line))'\n"))
            failed = true
        }

        /// Answers the queued addresses and empties the queue; an address the table cannot answer
        /// (a corrupt table) is noted.
        mutating func finishBatch() {
            guard !batch.isEmpty else { return }
            let errors = batch.withUnsafeBufferPointer { renderer.render($0, into: &output) }
            if let moduleEnd {
                for address in batch where address >= moduleEnd && address < (beyond ?? .max) { beyond = address }
            }
            batch.removeAll(keepingCapacity: true)
            for error in errors { notes.append((output.count, "crashsym: \(path): \(error)\n")) }
            if !errors.isEmpty { failed = true }
            if streams && output.count >= 1 << 16 { emit() }
        }

        /// Writes the output and the notes, in order, and forgets them.
        mutating func emit() {
            LookupWorker.write(output, notes: notes)
            output.removeAll()
            notes.removeAll(keepingCapacity: true)
        }
    }

    /// Writes `output` to standard output and `notes` (whose offsets fall inside it) to standard
    /// error, in order.
    static func write(_ output: borrowing OutputBytes, notes: [(offset: Int, message: String)]) {
        var written = 0
        for note in notes {
            output.write(written..<note.offset, to: STDOUT_FILENO)
            written = note.offset
            StandardError.write(note.message)
        }
        output.write(written..<output.count, to: STDOUT_FILENO)
    }
}

/// The answers to one block of lines of a parallel run, kept until the blocks before it are
/// written; reused for later blocks. Used by one thread at a time (the one answering the block,
/// then the one writing it), handed over through `LookupPipeline`'s mutex.
final class BlockOutput: @unchecked Sendable {
    /// Room for a block's answers from the start (about 230 KB for 800 Swift addresses), so that
    /// the buffer is not grown through two smaller copies; pages not written are never touched.
    var output = OutputBytes(capacity: 1 << 18)
    var notes: [(offset: Int, message: String)] = []

    /// Writes the answers and notes, in order, and forgets them.
    func write() {
        LookupWorker.write(output, notes: notes)
        output.removeAll()
        notes.removeAll(keepingCapacity: true)
    }
}
