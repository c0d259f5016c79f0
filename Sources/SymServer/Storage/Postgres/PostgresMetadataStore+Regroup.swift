import Foundation
import NIOCore
import PostgresNIO
import Symbolication

/// Late symbols by module name, and re-signing after a rules change, on PostgreSQL (the SQLite
/// twins: CrashStore+Names.swift, CrashStore+Regroup.swift).
extension PostgresMetadataStore {
    // MARK: Names

    /// Replaces the names crash `seq` lacked (in `finish`'s transaction); a name that became
    /// matchable meanwhile (one table of that name in the version) queues the crash again.
    /// `replacing: false`: the caller removed the crash's old names already.
    static func recordMissingNames(_ db: Transaction, seq: Int64, appID: String, version: String, names: [String],
                                   now: Int64, replacing: Bool = true) async throws {
        if replacing { try await db.rows("DELETE FROM crash_missing_name WHERE crash_seq = \(seq)") }
        guard !names.isEmpty else { return }
        try await db.rows("""
            INSERT INTO crash_missing_name (app_id, version, name, crash_seq)
            SELECT \(appID), \(version), name, \(seq) FROM unnest(\(names)::text[]) AS n(name)
            ON CONFLICT DO NOTHING
            """)
        let counts = try await namedTableCounts(db, appID: appID, version: version, names: names)
        if names.contains(where: { counts[$0] == 1 }) { try await enqueue(db, seq: seq, kind: .resymbolicate, now: now) }
    }

    @discardableResult
    public func requeue(appID: String, version: String, names: [String], now: Int64) async throws -> Int {
        guard !names.isEmpty else { return 0 }
        let unique = Array(Set(names))
        return try await transaction { db in
            let seqs = Set(try await db.rows("""
                SELECT crash_seq FROM crash_missing_name WHERE app_id = \(appID) AND version = \(version) AND name = ANY(\(unique))
                """).map { try $0.decode(Int64.self) })
            for seq in seqs.sorted() { try await Self.enqueue(db, seq: seq, kind: .resymbolicate, now: now) }
            return seqs.count
        }
    }

    @discardableResult
    public func requeueResolvableNames(now: Int64) async throws -> Int {
        try await transaction { db in
            let seqs = try await db.rows("""
                SELECT DISTINCT n.crash_seq FROM crash_missing_name n
                WHERE (SELECT COUNT(*) FROM version_module l JOIN module m ON m.app_id = l.app_id AND m.build_id = l.build_id
                       WHERE l.app_id = n.app_id AND l.version = n.version AND m.name = n.name) = 1
                """).map { try $0.decode(Int64.self) }
            for seq in seqs { try await Self.enqueue(db, seq: seq, kind: .resymbolicate, now: now) }
            return seqs.count
        }
    }

    public func namedTableCounts(appID: String, version: String, names: [String]) async throws -> [String: Int] {
        try await transaction { db in try await Self.namedTableCounts(db, appID: appID, version: version, names: names) }
    }

    static func namedTableCounts(_ db: Transaction, appID: String, version: String, names: [String]) async throws -> [String: Int] {
        let unique = Array(Set(names))
        var counts = Dictionary(uniqueKeysWithValues: unique.map { ($0, 0) })
        for row in try await db.rows("""
            SELECT m.name, COUNT(*) FROM version_module l JOIN module m ON m.app_id = l.app_id AND m.build_id = l.build_id
            WHERE l.app_id = \(appID) AND l.version = \(version) AND m.name = ANY(\(unique)) GROUP BY m.name
            """) {
            let (name, count) = try row.decode((String, Int).self)
            counts[name] = count
        }
        return counts
    }

    // MARK: Regrouping

    @discardableResult
    public func replaceGroupingRules(appID: String, rules: String, now: Int64) async throws -> Bool {
        try await transaction { db in
            try await db.rows("SELECT pg_advisory_xact_lock(hashtext('grouping_rules'), hashtext(\(appID)))")
            let stored = try await db.rows("SELECT rules FROM grouping_rules WHERE app_id = \(appID)").first?.decode(String.self)
            guard stored != rules else { return false }
            try await db.rows("""
                INSERT INTO grouping_rules (app_id, rules, updated_ms) VALUES (\(appID), \(rules), \(now))
                ON CONFLICT (app_id) DO UPDATE SET rules = excluded.rules, updated_ms = excluded.updated_ms
                """)
            try await db.rows("""
                INSERT INTO regroup_run (app_id, next_seq, started_ms) VALUES (\(appID), 0, \(now))
                ON CONFLICT (app_id) DO UPDATE SET next_seq = 0, started_ms = excluded.started_ms
                """)
            return true
        }
    }

    public func queueRegroupBatch(limit: Int, now: Int64) async throws -> CrashStore.RegroupStep {
        try await transaction { db in
            // FOR UPDATE SKIP LOCKED: two nodes stepping at once take different runs, or one waits.
            guard let run = try await db.rows("""
                SELECT app_id, next_seq FROM regroup_run ORDER BY started_ms, app_id LIMIT 1 FOR UPDATE SKIP LOCKED
                """).first else {
                let more = try await db.exists("SELECT 1 FROM regroup_run LIMIT 1")
                return CrashStore.RegroupStep(queued: 0, remaining: more)
            }
            let (appID, next) = try run.decode((String, Int64).self)
            let regroup = CrashStore.Job.Kind.regroup.rawValue
            let waiting = try await db.rows("SELECT COUNT(*) FROM crash_job WHERE kind = \(regroup)")[0].decode(Int.self)
            guard waiting < limit else { return CrashStore.RegroupStep(queued: 0, remaining: true) }
            let seqs = try await db.rows("""
                SELECT seq FROM crash WHERE app_id = \(appID) AND seq > \(next) AND state != 'failed' ORDER BY seq LIMIT \(limit)
                """).map { try $0.decode(Int64.self) }
            for seq in seqs { try await Self.enqueue(db, seq: seq, kind: .regroup, now: now) }
            if seqs.count < limit {
                try await db.rows("DELETE FROM regroup_run WHERE app_id = \(appID)")
            } else if let last = seqs.last {
                try await db.rows("UPDATE regroup_run SET next_seq = \(last) WHERE app_id = \(appID)")
            }
            let more = try await db.exists("SELECT 1 FROM regroup_run LIMIT 1")
            return CrashStore.RegroupStep(queued: seqs.count, remaining: more)
        }
    }

    public func regroupBacklog(appID: String) async throws -> Int {
        let regroup = CrashStore.Job.Kind.regroup.rawValue
        let queued = try await rows("""
            SELECT COUNT(*) FROM crash_job j JOIN crash c ON c.seq = j.crash_seq WHERE c.app_id = \(appID) AND j.kind = \(regroup)
            """)[0].decode(Int.self)
        guard let next = try await rows("SELECT next_seq FROM regroup_run WHERE app_id = \(appID)").first?.decode(Int64.self) else {
            return queued
        }
        let unreached = try await rows("""
            SELECT COUNT(*) FROM crash WHERE app_id = \(appID) AND seq > \(next) AND state != 'failed'
            """)[0].decode(Int.self)
        return queued + unreached
    }

    public func grouping(appID: String, crashID id: String) async throws -> CrashSignature? {
        guard let row = try await rows("SELECT grouping FROM crash WHERE app_id = \(appID) AND id = \(id)").first,
              let buffer = try row.decode(ByteBuffer?.self) else { return nil }
        return try CrashSignature.stored(Array(buffer.readableBytesView), crashID: id)
    }
}
