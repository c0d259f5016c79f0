import SymBytes
import Synchronization

/// The agent's totals of reports it could not send (dropped over `--max-queue-mb`, deleted by
/// the crash-storm limit), as its submissions report them to the server in the
/// `Crashsym-Agent-Counts` header (docs/http-api.md). The collector raises them; the senders
/// read them. A submission carries them only while the server has not acknowledged these totals
/// (a 2xx to a submission that carried them), so an agent without drops sends no header at all.
public final class DropCounts: Sendable {
    /// The agent's id (kept in its status file, made once per state directory).
    public let agentID: String
    private struct Totals {
        var dropped = 0, suppressed = 0
        var acknowledgedDropped = 0, acknowledgedSuppressed = 0
    }
    private let totals: Mutex<Totals>

    /// Counts of the agent `agentID`, starting from the totals of its status file.
    public init(agentID: String, dropped: Int, suppressed: Int) {
        self.agentID = agentID
        totals = Mutex(Totals(dropped: dropped, suppressed: suppressed))
    }

    /// Sets the totals (the collector's, after a drop).
    func update(dropped: Int, suppressed: Int) {
        totals.withLock {
            $0.dropped = max($0.dropped, dropped)
            $0.suppressed = max($0.suppressed, suppressed)
        }
    }

    /// The header's value and the totals it carries, when the server has not acknowledged them.
    func pending() -> (header: String, dropped: Int, suppressed: Int)? {
        totals.withLock { counts in
            guard counts.dropped != counts.acknowledgedDropped || counts.suppressed != counts.acknowledgedSuppressed else { return nil }
            return ("agent=\(agentID); dropped=\(counts.dropped); suppressed=\(counts.suppressed)", counts.dropped, counts.suppressed)
        }
    }

    /// The server stored a submission that carried these totals.
    func acknowledge(dropped: Int, suppressed: Int) {
        totals.withLock {
            $0.acknowledgedDropped = max($0.acknowledgedDropped, dropped)
            $0.acknowledgedSuppressed = max($0.acknowledgedSuppressed, suppressed)
        }
    }

    /// A new agent id: 16 random hex digits.
    static func newAgentID() -> String {
        var generator = SystemRandomNumberGenerator()
        return hexString((0..<8).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }
}
