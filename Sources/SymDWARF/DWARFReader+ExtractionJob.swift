import SymBytes

extension DWARFReader {
    /// One run of units to extract and, once run, its result.
    ///
    /// A job is touched by the thread that runs it until that thread is joined, and only then by
    /// the caller, so no memory is shared while it is being written. `Input` is only read by all
    /// threads.
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
    }
}
