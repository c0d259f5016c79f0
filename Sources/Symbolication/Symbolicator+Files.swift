#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Dispatch
import SymBytes
import SymReport
import Synchronization

extension Symbolicator {
    /// Reads, parses and symbolicates the report files at `paths` on `jobs` threads, and calls
    /// `emit` with each report's rendered output or the error that stopped it (reading or
    /// parsing): once per path, in input order, one call at a time, from whichever worker thread
    /// completed the reports up to it. No thread waits for a batch to be printed: workers stay at
    /// most `jobs × 256` reports ahead of the printing. Modules are resolved once for all reports.
    /// A minidump whose walks pass `maximumFrames` frames in all is a `limitExceeded` error
    /// (`report(minidump:path:maximumFrames:)`).
    public func symbolicateFiles(_ paths: [String], inputFormat: ReportFormat? = nil, jobs: Int = FileSystem.processorCount,
                                 maximumFrames: Int = .max, render: @Sendable (SymbolicatedReport) -> [UInt8],
                                 emit: @Sendable (Int, Result<[UInt8], FormatError>) -> Void) {
        guard !paths.isEmpty else { return }
        let window = max(1, jobs) * 256
        let next = Atomic<Int>(0)
        let emitted = Atomic<Int>(0)
        let queue = Mutex(EmissionQueue())
        DispatchQueue.concurrentPerform(iterations: min(max(1, jobs), paths.count)) { _ in
            let worker = Worker()
            while true {
                let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard index < paths.count else { return }
                // Bounded run-ahead (memory), in the rare case one report takes long (a module
                // converted on first use) while the others race on: the reports before this one
                // are all taken and finish without waiting, so the printing catches up.
                while index >= emitted.load(ordering: .acquiring) + window { usleep(200) }
                let outcome: Result<[UInt8], FormatError>
                do throws(FormatError) {
                    let report = try readReport(paths[index], format: inputFormat, maximumFrames: maximumFrames)
                    outcome = .success(render(symbolicate(report, worker: worker, reportDirectory: Self.directory(of: paths[index]))))
                } catch {
                    outcome = .failure(error.at(path: paths[index]))
                }
                var batch = queue.withLock { $0.deposit(index, outcome) }
                while !batch.isEmpty {
                    for (position, result) in batch { emit(position, result) }
                    emitted.store(batch[batch.count - 1].index + 1, ordering: .releasing)
                    batch = queue.withLock { $0.takeReady() }
                }
            }
        }
    }

    /// Outcomes waiting to be emitted in order, and which thread emits them.
    struct EmissionQueue {
        private var ready: [Int: Result<[UInt8], FormatError>] = [:]
        private var next = 0
        /// Whether a thread is emitting (it takes what becomes ready before it stops).
        private var emitting = false

        /// Stores the outcome of report `index`; returns the outcomes the caller must now emit,
        /// in order (empty when the next one is not ready or another thread emits).
        mutating func deposit(_ index: Int, _ outcome: Result<[UInt8], FormatError>) -> [(index: Int, outcome: Result<[UInt8], FormatError>)] {
            ready[index] = outcome
            return emitting ? [] : takeReady()
        }

        /// The outcomes ready from the next one on, taken for the caller to emit; empty (and the
        /// caller no longer the emitter) when the next one is not ready.
        mutating func takeReady() -> [(index: Int, outcome: Result<[UInt8], FormatError>)] {
            var batch: [(index: Int, outcome: Result<[UInt8], FormatError>)] = []
            while let outcome = ready.removeValue(forKey: next) {
                batch.append((next, outcome))
                next += 1
            }
            emitting = !batch.isEmpty
            return batch
        }
    }

    /// The largest report file read (a bigger file is refused, not loaded).
    public static let maximumReportSize = 256 << 20

    /// The contents of a report file, read (not mapped: reports are small and many).
    /// The absolute directory of the file at `path` (relative to the working directory).
    static func directory(of path: String) -> String? {
        let parent = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        if parent.hasPrefix("/") { return parent }
        guard let current = FileSystem.currentDirectory else { return nil }
        return parent == "." ? current : ModulePathProvider.join(current, parent)
    }

    static func readText(_ path: String) throws(FormatError) -> String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw FormatError(.io, "cannot open: \(String(cString: strerror(errno)))", path: path) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            throw FormatError(.io, "not a regular file", path: path)
        }
        guard status.st_size <= Self.maximumReportSize else {
            throw FormatError(.limitExceeded, "larger than \(Self.maximumReportSize >> 20) MiB: not a crash report", path: path)
        }
        // Read straight into a buffer of the file's size (one more byte shows a file that grew):
        // one read call; a file that grows further is read in further rounds.
        var bytes: [UInt8] = []
        var capacity = max(Int(status.st_size) + 1, 4096)
        while true {
            var failure: Int32 = 0
            let before = bytes.count
            bytes.append(contentsOf: repeatElement(0, count: capacity))
            let count = bytes.withUnsafeMutableBytes { buffer -> Int in
                while true {
                    let count = read(descriptor, buffer.baseAddress! + before, capacity)
                    if count < 0 && errno == EINTR { continue }
                    if count < 0 { failure = errno }
                    return count
                }
            }
            guard count >= 0 else { throw FormatError(.io, "cannot read: \(String(cString: strerror(failure)))", path: path) }
            bytes.removeLast(capacity - count)
            guard bytes.count <= Self.maximumReportSize else {
                throw FormatError(.limitExceeded, "larger than \(Self.maximumReportSize >> 20) MiB: not a crash report", path: path)
            }
            // A regular file reads short only at its end: one read for a file that did not grow.
            if count < capacity { break }
            capacity = max(capacity, 1 << 16)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
