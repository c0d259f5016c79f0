import SymBytes
import Synchronization

/// The agent's totals of reports it could not send (dropped over `--max-queue-mb`, deleted by
/// the crash-storm limit) and its queue length, as its submissions report them to the server in
/// the `Crashsym-Agent-Counts` header (docs/http-api.md), for `GET …/agents` and the console's
/// app page. The collector raises the totals and sets the queue length; the senders read them.
/// A submission carries the header when the server has not acknowledged (a 2xx to a submission
/// that carried it) these totals, on the first submission of the process, once the queue has
/// drained, and otherwise at most once every `interval`: one small write on the server per agent
/// and minute, not one per crash.
public final class DropCounts: Sendable {
    /// The agent's id (kept in its status file, made once per state directory).
    public let agentID: String
    /// Least time between two headers that carry nothing new but the queue length.
    let interval: Duration
    private struct Totals {
        var dropped = 0, suppressed = 0, queue = 0
        var acknowledgedDropped = 0, acknowledgedSuppressed = 0
        /// The queue length and time of the last acknowledged header (nil: none yet in this process).
        var acknowledgedQueue: Int?
        var acknowledgedAt: ContinuousClock.Instant?
    }
    private let totals: Mutex<Totals>

    /// Counts of the agent `agentID`, starting from the totals of its status file.
    public init(agentID: String, dropped: Int, suppressed: Int, interval: Duration = .seconds(60)) {
        self.agentID = agentID
        self.interval = interval
        totals = Mutex(Totals(dropped: dropped, suppressed: suppressed))
    }

    /// Sets the totals (the collector's, after a drop).
    func update(dropped: Int, suppressed: Int) {
        totals.withLock {
            $0.dropped = max($0.dropped, dropped)
            $0.suppressed = max($0.suppressed, suppressed)
        }
    }

    /// Sets the queue length: reports queued and not handed to a sender yet.
    func update(queue: Int) {
        totals.withLock { $0.queue = max(0, queue) }
    }

    /// What one header reports.
    struct Report: Sendable, Equatable {
        var header: String
        var dropped: Int, suppressed: Int, queue: Int
    }

    /// The header a submission sent `now` carries, when one is due.
    func pending(now: ContinuousClock.Instant = .now) -> Report? {
        totals.withLock { counts in
            let due = counts.dropped != counts.acknowledgedDropped || counts.suppressed != counts.acknowledgedSuppressed
                || counts.acknowledgedAt.map { $0.duration(to: now) >= interval } ?? true
                || (counts.queue == 0 && counts.acknowledgedQueue != 0)
            guard due else { return nil }
            return Report(header: "agent=\(agentID); dropped=\(counts.dropped); suppressed=\(counts.suppressed); queue=\(counts.queue)",
                          dropped: counts.dropped, suppressed: counts.suppressed, queue: counts.queue)
        }
    }

    /// The server stored a submission that carried `report`, sent at `sent`.
    func acknowledge(_ report: Report, sent: ContinuousClock.Instant) {
        totals.withLock {
            $0.acknowledgedDropped = max($0.acknowledgedDropped, report.dropped)
            $0.acknowledgedSuppressed = max($0.acknowledgedSuppressed, report.suppressed)
            if $0.acknowledgedAt.map({ $0 <= sent }) ?? true {
                $0.acknowledgedAt = sent
                $0.acknowledgedQueue = report.queue
            }
        }
    }

    /// A new agent id: 16 random hex digits.
    static func newAgentID() -> String {
        var generator = SystemRandomNumberGenerator()
        return hexString((0..<8).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }
}
