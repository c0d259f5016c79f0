import FoundationEssentials
#if canImport(Glibc)
import Glibc
#endif

/// What `crashsym agent status` shows: kept in `STATE/status.json` by the running agent, with the
/// queue counted from the directory itself.
public struct AgentStatus: Codable, Sendable, Equatable {
    /// Reports delivered (2xx) since the state directory was created.
    public var delivered: Int = 0
    /// Reports moved to `rejected/`.
    public var rejected: Int = 0
    /// Reports dropped because the queue was over `max-queue-mb`.
    public var dropped: Int = 0
    /// Reports deleted by the crash-storm limit, in all and per signature (the 100 most frequent).
    public var suppressed: Int = 0
    public var suppressedBySignature: [String: Int] = [:]
    /// When a report was last delivered (RFC 3339).
    public var lastSuccess: String?
    /// The last failure, and when (RFC 3339).
    public var lastError: String?
    public var lastErrorTime: String?
    /// Reports in the queue (filled in when read; the file holds the count at its last write).
    public var queueLength: Int = 0
    /// Bytes of the queued reports.
    public var queueBytes: UInt64 = 0
    /// Whether an agent holds the state directory's lock now (filled in when read).
    public var running: Bool?
    /// The agent's id, which the server shows its drop counts under (made on the first start).
    public var agentID: String?

    /// An empty status.
    public init() {}

    enum CodingKeys: String, CodingKey {
        case delivered, rejected, dropped, suppressed
        case suppressedBySignature = "suppressed_by_signature"
        case lastSuccess = "last_success", lastError = "last_error", lastErrorTime = "last_error_time"
        case queueLength = "queue_length", queueBytes = "queue_bytes", running, agentID = "agent_id"
    }

    /// The status file of a state directory.
    public static func path(in stateDirectory: String) -> String { stateDirectory + "/status.json" }

    /// The stored status (an empty one when there is none yet).
    static func load(from stateDirectory: String) -> AgentStatus {
        guard let data = FileManager.default.contents(atPath: path(in: stateDirectory)),
              let status = try? JSONDecoder().decode(AgentStatus.self, from: data) else { return AgentStatus() }
        return status
    }

    /// Writes the status (atomically; not fsynced: it is a report, the queue is the truth).
    func store(in stateDirectory: String) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(self) else { return }
        try? data.write(to: URL(fileURLWithPath: Self.path(in: stateDirectory)), options: .atomic)
    }

    /// The status of the agent using `stateDirectory`, read without disturbing it: the counters
    /// from its file, the queue counted now, and whether an agent runs (holds the lock).
    public static func read(stateDirectory: String) throws(AgentError) -> AgentStatus {
        var info = stat()
        guard stat(stateDirectory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw AgentError("\(stateDirectory): no agent state here (give the agent's --state-dir)")
        }
        var status = load(from: stateDirectory)
        let queue = stateDirectory + "/queue"
        let reports = ReportQueue.names(in: queue).filter { $0.hasSuffix(".report") }
        status.queueLength = reports.count
        status.queueBytes = reports.reduce(0) { total, name in
            var info = stat()
            return total + (stat(queue + "/" + name, &info) == 0 ? UInt64(info.st_size) : 0)
        }
        let lock = open(stateDirectory + "/lock", O_RDONLY | O_CLOEXEC)
        if lock >= 0 {
            status.running = flock(lock, LOCK_SH | LOCK_NB) != 0
            close(lock)
        } else {
            status.running = false
        }
        return status
    }

    /// Lines for people.
    public func text() -> String {
        """
        running:      \(running == true ? "yes" : "no")
        queue:        \(queueLength) reports, \(queueBytes) bytes
        delivered:    \(delivered)
        rejected:     \(rejected)
        dropped:      \(dropped)
        suppressed:   \(suppressed)\(suppressedBySignature.sorted { $0.value > $1.value }.prefix(5).map { "\n  \($0.value) × \($0.key)" }.joined())
        last success: \(lastSuccess ?? "never")
        last error:   \(lastError.map { "\(lastErrorTime ?? "?") \($0)" } ?? "none")

        """
    }

    /// One JSON object.
    public func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self) + "\n"
    }

    /// Now, as RFC 3339 UTC with milliseconds.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var fields = tm()
        var seconds = now.tv_sec
        gmtime_r(&seconds, &fields)
        func digits(_ value: Int32, _ count: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, count - text.count)) + text
        }
        return "\(digits(fields.tm_year + 1900, 4))-\(digits(fields.tm_mon + 1, 2))-\(digits(fields.tm_mday, 2))T"
            + "\(digits(fields.tm_hour, 2)):\(digits(fields.tm_min, 2)):\(digits(fields.tm_sec, 2)).\(digits(Int32(now.tv_nsec / 1_000_000), 3))Z"
    }
}
