import CrashsymCommandLine
import SymTable
import Symbolication
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One thread's share of `crashsym lookup`: answers input lines into its own output buffer with its
/// own renderer (so its caches are never shared), and keeps what it has to say on standard error
/// next to the output offset where it belongs, so that `emit()` writes both streams in input order
/// whichever thread did the work.
///
/// The state sits behind a mutex so a worker can be handed to another thread; each worker is used
/// by one thread at a time, so the lock is never contended. In a parallel round, workers take
/// blocks of lines as they become free (a thread the scheduler preempts holds up no other) and
/// remember where each block's answers are, for the caller to write them in block order.
final class LookupWorker: Sendable {
    private let state: Mutex<State>

    /// Addresses answered at once: enough for the batch search to overlap its memory reads,
    /// few enough that a partner on a pipe is not kept waiting.
    static let batchSize = 4096

    /// A worker for `table` rendering with `strings` (shared by all workers of one run, so that a
    /// name is rendered and demangled once whichever thread meets it first); one that `streams`
    /// writes its output itself whenever it grows large (right for the first part of a round,
    /// whose output comes first anyway).
    init(table: SymbolTable, strings: FrameRenderer.RenderedStrings, path: String, streams: Bool) {
        state = Mutex(State(renderer: FrameRenderer(table: table, strings: strings), path: path, streams: streams))
    }

    /// Whether some line was not an address or some address could not be answered.
    var failed: Bool { state.withLock { $0.failed } }

    /// Answers every line of `text` (see `State.answer(lines:)`). The text is an array, not a
    /// pointer, so that nothing of the caller's can cross into another thread with the worker.
    func answer(lines text: [UInt8]) {
        state.withLock { state in text.withUnsafeBytes { state.answer(lines: $0) } }
    }

    /// Answers block `block` of a parallel round (complete lines), keeping its output until
    /// `emit(span:)` writes it.
    func answer(block: Int, lines text: [UInt8]) {
        state.withLock { state in
            let outputStart = state.output.count, noteStart = state.notes.count
            // The block's answers must wait for the blocks before it.
            let streams = state.streams
            state.streams = false
            text.withUnsafeBytes { state.answer(lines: $0) }
            state.streams = streams
            state.spans.append(Span(block: block, output: outputStart..<state.output.count, notes: noteStart..<state.notes.count))
        }
    }

    /// The blocks answered since the last `reset()`, in the order this worker answered them.
    var spans: [Span] { state.withLock { $0.spans } }

    /// Writes the output and notes of one answered block, in order.
    func emit(span: Span) {
        state.withLock { $0.emit(span.output, notes: span.notes) }
    }

    /// Forgets the blocks answered (after they were emitted).
    func reset() {
        state.withLock { state in
            state.output.removeAll()
            state.notes.removeAll(keepingCapacity: true)
            state.spans.removeAll(keepingCapacity: true)
        }
    }

    /// Where a block's answers are in a worker's output and notes.
    struct Span: Sendable {
        var block: Int
        var output: Range<Int>
        var notes: Range<Int>
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
        /// The blocks of a parallel round answered so far.
        var spans: [Span] = []
        /// Addresses queued for the renderer's batch search.
        var batch: [UInt64] = []
        /// The table's path, for messages.
        let path: String
        var streams: Bool
        var failed = false

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
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0d }) { return }
            finishBatch()
            notes.append((output.count, "crashsym: not a hex address: '\(String(decoding: line, as: UTF8.self))'\n"))
            failed = true
        }

        /// Answers the queued addresses and empties the queue; an address the table cannot answer
        /// (a corrupt table) is noted.
        mutating func finishBatch() {
            guard !batch.isEmpty else { return }
            let errors = batch.withUnsafeBufferPointer { renderer.render($0, into: &output) }
            batch.removeAll(keepingCapacity: true)
            for error in errors { notes.append((output.count, "crashsym: \(path): \(error)\n")) }
            if !errors.isEmpty { failed = true }
            if streams && output.count >= 1 << 16 { emit() }
        }

        /// Writes the output and the notes, in order, and forgets them.
        mutating func emit() {
            emit(0..<output.count, notes: notes.indices)
            output.removeAll()
            notes.removeAll(keepingCapacity: true)
        }

        /// Writes the output bytes `range` and the notes `noteRange` (which fall inside it), in order.
        func emit(_ range: Range<Int>, notes noteRange: Range<Int>) {
            var written = range.lowerBound
            for note in notes[noteRange] {
                output.write(written..<note.offset, to: STDOUT_FILENO)
                written = note.offset
                FileOutput.standardError(note.message)
            }
            output.write(written..<range.upperBound, to: STDOUT_FILENO)
        }
    }
}
