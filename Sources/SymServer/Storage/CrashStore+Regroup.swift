import Foundation
import GRDB
import Symbolication

/// Re-signing after a change of an app's grouping rules, and the signature frames each crash
/// keeps for the console.
///
/// A rules change is a row (`regroup_run`: the app and how far its crashes are queued) written
/// in the transaction that stores the rules, so the `PUT` answers at once and the work survives
/// a restart. `RegroupService` turns it into crash jobs a batch at a time (never far ahead of
/// the workers, so new crashes and late symbols keep their precedence); each job processes its
/// crash again under the new rules, moving it between groups as late symbols do.
extension CrashStore {
    static func registerRegroupMigrations(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v5-crash-grouping-regroup") { db in
            try db.execute(sql: """
                ALTER TABLE crash ADD COLUMN grouping BLOB;
                CREATE TABLE regroup_run (
                    app_id TEXT PRIMARY KEY NOT NULL, next_seq INTEGER NOT NULL, started_ms INTEGER NOT NULL);
                """)
        }
    }

    /// Stores the app's grouping rules (a canonical JSON document, validated by the caller) and,
    /// when they differ from the stored ones, starts re-signing the app's crashes (from the first
    /// again if a run was under way), in one transaction. Returns whether a run started.
    @discardableResult
    public func replaceGroupingRules(appID: String, rules: String, now: Int64) async throws -> Bool {
        try await write { db in
            let stored = try String.fetchOne(db, sql: "SELECT rules FROM grouping_rules WHERE app_id = ?", arguments: [appID])
            guard stored != rules else { return false }
            try db.execute(sql: """
                INSERT INTO grouping_rules (app_id, rules, updated_ms) VALUES (?, ?, ?)
                ON CONFLICT (app_id) DO UPDATE SET rules = excluded.rules, updated_ms = excluded.updated_ms
                """, arguments: [appID, rules, now])
            try db.execute(sql: """
                INSERT INTO regroup_run (app_id, next_seq, started_ms) VALUES (?, 0, ?)
                ON CONFLICT (app_id) DO UPDATE SET next_seq = 0, started_ms = excluded.started_ms
                """, arguments: [appID, now])
            return true
        }
    }

    /// What one step of re-signing did.
    public struct RegroupStep: Sendable, Equatable {
        /// Crash jobs queued by this step.
        public var queued: Int
        /// Whether a run still has crashes to queue.
        public var remaining: Bool
    }

    /// Queues the next `limit` crashes of the oldest run (every crash not failed: a pending one
    /// is re-armed, since its processing may have read the old rules), unless `limit` or more
    /// re-signing jobs already wait; a run whose crashes are all queued ends.
    public func queueRegroupBatch(limit: Int, now: Int64) async throws -> RegroupStep {
        try await write { db in
            guard let run = try Row.fetchOne(db, sql: "SELECT app_id, next_seq FROM regroup_run ORDER BY started_ms, app_id LIMIT 1") else {
                return RegroupStep(queued: 0, remaining: false)
            }
            let waiting = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM crash_job WHERE kind = ?",
                                           arguments: [Job.Kind.regroup.rawValue]) ?? 0
            guard waiting < limit else { return RegroupStep(queued: 0, remaining: true) }
            let appID: String = run["app_id"]
            let seqs = try Int64.fetchAll(db, sql: """
                SELECT seq FROM crash WHERE app_id = ? AND seq > ? AND state != 'failed' ORDER BY seq LIMIT ?
                """, arguments: [appID, run["next_seq"] as Int64, limit])
            for seq in seqs { try Self.enqueue(db, seq: seq, kind: .regroup, now: now) }
            if seqs.count < limit {
                try db.execute(sql: "DELETE FROM regroup_run WHERE app_id = ?", arguments: [appID])
            } else {
                try db.execute(sql: "UPDATE regroup_run SET next_seq = ? WHERE app_id = ?", arguments: [seqs.last!, appID])
            }
            let more = try Bool.fetchOne(db, sql: "SELECT 1 FROM regroup_run LIMIT 1") ?? false
            return RegroupStep(queued: seqs.count, remaining: more)
        }
    }

    /// Crashes still to be re-signed under the app's current rules: queued jobs plus those a
    /// run has not reached yet (0 when none is under way).
    public func regroupBacklog(appID: String) async throws -> Int {
        try await read { db in
            let queued = try Int.fetchOne(db, sql: """
                SELECT COUNT(*) FROM crash_job j JOIN crash c ON c.seq = j.crash_seq WHERE c.app_id = ? AND j.kind = ?
                """, arguments: [appID, Job.Kind.regroup.rawValue]) ?? 0
            guard let next = try Int64.fetchOne(db, sql: "SELECT next_seq FROM regroup_run WHERE app_id = ?", arguments: [appID]) else {
                return queued
            }
            let unreached = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM crash WHERE app_id = ? AND seq > ? AND state != 'failed'",
                                             arguments: [appID, next]) ?? 0
            return queued + unreached
        }
    }

    /// The signature of crash `id` with every examined frame's role, as computed when it was last
    /// processed; nil when it has none (not processed yet, or processed before it was kept).
    public func grouping(appID: String, crashID id: String) async throws -> CrashSignature? {
        let data = try await read { db in
            try Data.fetchOne(db, sql: "SELECT grouping FROM crash WHERE app_id = ? AND id = ?", arguments: [appID, id])
        }
        guard let data else { return nil }
        return try CrashSignature.stored(Array(data), crashID: id)
    }
}

extension CrashSignature {
    /// A signature as a crash row keeps it (`grouping`): the kept form (`keptBytes`), or the
    /// whole `Codable` form that crashes processed before the kept form were stored with.
    static func stored(_ bytes: [UInt8], crashID id: String) throws -> CrashSignature {
        do {
            if bytes.starts(with: #"{"kept":"#.utf8) { return try CrashSignature(keptBytes: bytes) }
            return try JSONDecoder().decode(CrashSignature.self, from: Data(bytes))
        } catch {
            throw StoreError.corrupt("the grouping frames of crash \(id) do not read: \(error)")
        }
    }
}
