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
    /// `emit` on the calling thread in input order with each report's rendered output or the
    /// error that stopped it (reading or parsing). Modules are resolved once for all reports.
    public func symbolicateFiles(_ paths: [String], inputFormat: ReportFormat? = nil, jobs: Int = FileSystem.processorCount,
                                 render: @Sendable (SymbolicatedReport) -> [UInt8],
                                 emit: (Int, Result<[UInt8], FormatError>) -> Void) {
        let batch = max(1, jobs) * 256  // reports in flight between two ordered emissions
        var start = 0
        while start < paths.count {
            let end = min(paths.count, start + batch)
            let results = Mutex<[Int: Result<[UInt8], FormatError>]>([:])
            let next = Atomic<Int>(start)
            DispatchQueue.concurrentPerform(iterations: min(max(1, jobs), end - start)) { _ in
                while true {
                    let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard index < end else { return }
                    let outcome: Result<[UInt8], FormatError>
                    do throws(FormatError) {
                        let report = try CrashReport.parse(try Self.readText(paths[index]), format: inputFormat)
                        outcome = .success(render(symbolicate(report)))
                    } catch {
                        outcome = .failure(error.at(path: paths[index]))
                    }
                    results.withLock { $0[index] = outcome }
                }
            }
            let collected = results.withLock { $0 }
            for index in start..<end { emit(index, collected[index]!) }
            start = end
        }
    }

    /// The largest report file read (a bigger file is refused, not loaded).
    public static let maximumReportSize = 256 << 20

    /// The contents of a report file, read (not mapped: reports are small and many).
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
