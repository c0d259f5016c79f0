import Foundation
import GRDB

/// What each agent (`crashsym agent`) could not send: reports it dropped because its queue was
/// full, and reports its crash-storm limit deleted, as totals since its state directory was made.
/// They arrive with its crash submissions (the `Crashsym-Agent-Counts` header, docs/http-api.md);
/// a total only ever grows, so a retried or reordered submission never lowers one.
extension CrashStore {
    /// Registers the agent counters' migration (after the crash tables').
    static func registerAgentMigrations(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("agent-counts") { db in
            try db.execute(sql: """
                CREATE TABLE agent_counts (
                    app_id TEXT NOT NULL, agent_id TEXT NOT NULL, host TEXT, dropped INTEGER NOT NULL,
                    suppressed INTEGER NOT NULL, reported_ms INTEGER NOT NULL,
                    PRIMARY KEY (app_id, agent_id)) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("agent-counts-queue") { db in
            // The agent's queue length as of its last report (nil: an agent that did not say).
            try db.execute(sql: "ALTER TABLE agent_counts ADD COLUMN queue INTEGER")
            // `buildVersions`: the versions of one build-id without reading every version's modules.
            try db.execute(sql: "CREATE INDEX version_module_by_build_id ON version_module(app_id, build_id)")
        }
    }

    /// One agent's totals, as the API shows them.
    public struct AgentCounts: Codable, Sendable, Equatable {
        /// The agent's id (random, made with its state directory).
        public var agentID: String
        /// The host it last reported from.
        public var host: String?
        /// Reports dropped because its queue was over `--max-queue-mb`.
        public var dropped: Int64
        /// Reports deleted by its crash-storm limit (`--max-reports-per-minute`).
        public var suppressed: Int64
        /// Reports waiting in its queue when it last reported (nil: it did not say).
        public var queue: Int64?
        /// When it last reported (RFC 3339): its last submission that carried the header.
        public var reported: String

        enum CodingKeys: String, CodingKey {
            case agentID = "agent_id", host, dropped, suppressed, queue, reported
        }
    }

    /// Raises the stored totals of `agentID` in `appID` to these (never lowers them), and notes
    /// its queue length when given.
    public func recordAgentCounts(appID: String, agentID: String, host: String?, dropped: Int64, suppressed: Int64,
                                  queue: Int64?) async throws {
        let now = currentMilliseconds()
        try await write { db in
            try db.execute(sql: """
                INSERT INTO agent_counts (app_id, agent_id, host, dropped, suppressed, queue, reported_ms) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (app_id, agent_id) DO UPDATE SET host = excluded.host,
                    dropped = MAX(dropped, excluded.dropped), suppressed = MAX(suppressed, excluded.suppressed),
                    queue = COALESCE(excluded.queue, queue), reported_ms = excluded.reported_ms
                """, arguments: [appID, agentID, host, dropped, suppressed, queue, now])
        }
    }

    /// The app's agents that reported totals, most recently reported first.
    public func agentCounts(appID: String) async throws -> [AgentCounts] {
        try await read { db in
            try Row.fetchAll(db, sql: """
                SELECT agent_id, host, dropped, suppressed, queue, reported_ms FROM agent_counts WHERE app_id = ?
                ORDER BY reported_ms DESC, agent_id LIMIT 1000
                """, arguments: [appID]).map { row in
                AgentCounts(agentID: row["agent_id"], host: row["host"], dropped: row["dropped"], suppressed: row["suppressed"],
                            queue: row["queue"], reported: formatMilliseconds(row["reported_ms"]))
            }
        }
    }
}
