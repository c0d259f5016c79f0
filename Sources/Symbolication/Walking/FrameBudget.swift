import SymBytes

/// The frames a core's or a minidump's walks may still give, their threads together
/// (`--max-report-frames`): the one account of both readers. A walk is asked for at most one
/// frame past what is left (enough to know the budget is exceeded), so a report that would walk
/// to millions of frames stops as soon as it passes the budget, before the rest is walked.
struct FrameBudget {
    /// The most frames the report may have.
    let maximum: Int
    /// What is walked, for the error (`"core"`, `"minidump"`).
    let source: String
    /// How many threads the report has, for the error.
    let threadCount: Int
    /// The frames walked so far.
    private(set) var spent = 0

    /// The most frames one thread's walk is asked for: the walker's own cap, or one past what
    /// is left.
    var nextWalkLimit: Int {
        let room = maximum - spent
        return room < Self.perThread ? room + 1 : Self.perThread
    }

    /// The walker's cap on one thread's frames.
    static let perThread = 1024

    /// Counts a thread's `frames`; a `limitExceeded` error once the report passes `maximum`.
    mutating func spend(_ frames: Int) throws(FormatError) {
        spent += frames
        guard spent <= maximum else {
            throw FormatError(.limitExceeded, "the \(source)'s \(threadCount) threads walk to more than \(maximum) frames (--max-report-frames)")
        }
    }
}
