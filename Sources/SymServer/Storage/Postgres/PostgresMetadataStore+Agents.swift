import PostgresNIO

/// Agents' drop and storm totals on PostgreSQL (the SQLite twin: CrashStore+Agents.swift).
extension PostgresMetadataStore {
    public func recordAgentCounts(appID: String, agentID: String, host: String?, dropped: Int64, suppressed: Int64,
                                  queue: Int64?) async throws {
        let now = currentMilliseconds()
        _ = try await rows("""
            INSERT INTO agent_counts (app_id, agent_id, host, dropped, suppressed, queue, reported_ms)
            VALUES (\(appID), \(agentID), \(host), \(dropped), \(suppressed), \(queue), \(now))
            ON CONFLICT (app_id, agent_id) DO UPDATE SET host = excluded.host,
                dropped = GREATEST(agent_counts.dropped, excluded.dropped),
                suppressed = GREATEST(agent_counts.suppressed, excluded.suppressed),
                queue = COALESCE(excluded.queue, agent_counts.queue), reported_ms = excluded.reported_ms
            """)
    }

    public func agentCounts(appID: String) async throws -> [CrashStore.AgentCounts] {
        try await rows("""
            SELECT agent_id, host, dropped, suppressed, queue, reported_ms FROM agent_counts WHERE app_id = \(appID)
            ORDER BY reported_ms DESC, agent_id LIMIT 1000
            """).map { row in
            let (agent, host, dropped, suppressed, queue, reported) = try row.decode((String, String?, Int64, Int64, Int64?, Int64).self)
            return CrashStore.AgentCounts(agentID: agent, host: host, dropped: dropped, suppressed: suppressed, queue: queue,
                                          reported: formatMilliseconds(reported))
        }
    }
}
