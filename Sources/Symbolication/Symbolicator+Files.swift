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
        let batch = max(1, jobs) * 32
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
                        let file = try MappedFile(path: paths[index])
                        let report = try CrashReport.parse(String(decoding: file.bytes, as: UTF8.self), format: inputFormat)
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
}
