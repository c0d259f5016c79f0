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

    /// The contents of a report file, read (not mapped: reports are small and many).
    static func readText(_ path: String) throws(FormatError) -> String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw FormatError(.io, "cannot open: \(String(cString: strerror(errno)))", path: path) }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else {
            throw FormatError(.io, "not a regular file", path: path)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(status.st_size) + 1)
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw FormatError(.io, "cannot read: \(String(cString: strerror(errno)))", path: path) }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
