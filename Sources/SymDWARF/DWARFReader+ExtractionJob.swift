#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import SymBytes

extension DWARFReader {
    /// One run of units to extract and, once run, its result.
    ///
    /// Jobs cross threads as raw pointers handed to `pthread_create`: a job is touched by the
    /// thread that runs it until `pthread_join` returns, and only then by the caller, so no
    /// memory is shared while it is being written. `Input` is only read by all threads.
    final class ExtractionJob {
        let input: Input
        let units: Range<Int>
        let workLimit: Int
        /// Set by `run`.
        private(set) var result: Result<PartialModel, FormatError>?

        let codesLines: Bool

        init(input: Input, units: Range<Int>, workLimit: Int, codesLines: Bool) {
            self.input = input
            self.codesLines = codesLines
            self.units = units
            self.workLimit = workLimit
        }

        /// Hands over the result, leaving none here, so the caller holds the only reference to the
        /// part's arrays and can rewrite them in place instead of copying them.
        func takeResult() -> Result<PartialModel, FormatError>? {
            defer { result = nil }
            return result
        }

        /// Extracts the units.
        func run() {
            var walker = UnitWalker(input, workLimit: workLimit, codesLines: codesLines)
            do throws(FormatError) {
                try walker.extract(units: units, workLimit: workLimit)
                result = .success(walker.output)
            } catch {
                result = .failure(error)
            }
        }

        /// Runs the first job on the calling thread and the others on threads of their own, and
        /// returns when all are done. A job whose thread cannot be created runs on the caller.
        static func runConcurrently(_ jobs: [ExtractionJob]) {
            guard jobs.count > 1 else {
                jobs.first?.run()
                return
            }
            var threads: [pthread_t] = []
            var leftOver: [ExtractionJob] = []
            for job in jobs.dropFirst() {
                let context = Unmanaged.passRetained(job).toOpaque()
                var thread = pthread_t()
                let status = pthread_create(&thread, nil, { context in
                    guard let context else { return nil }
                    Unmanaged<ExtractionJob>.fromOpaque(context).takeRetainedValue().run()
                    return nil
                }, context)
                if status == 0 {
                    threads.append(thread)
                } else {
                    Unmanaged<ExtractionJob>.fromOpaque(context).release()
                    leftOver.append(job)
                }
            }
            jobs[0].run()
            for job in leftOver { job.run() }
            for thread in threads { pthread_join(thread, nil) }
        }
    }
}
