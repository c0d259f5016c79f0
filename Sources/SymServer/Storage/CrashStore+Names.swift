import GRDB

/// Modules reported without a build-id (glibc `backtrace()` output, gcc's libasan) are matched
/// by file name among the tables uploaded for the crash's app and version (DESIGN.md "The crash
/// service"). A crash whose such module found no table, or several, records the name, so that
/// an upload of a table of that name for that version queues it again, as a new build-id does
/// for the crashes that lacked it (late symbols).
extension CrashStore {
    static func registerNameMigrations(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v5-crash-missing-names") { db in
            try db.execute(sql: """
                CREATE TABLE crash_missing_name (
                    app_id TEXT NOT NULL, version TEXT NOT NULL, name TEXT NOT NULL, crash_seq INTEGER NOT NULL,
                    PRIMARY KEY (app_id, version, name, crash_seq));
                CREATE INDEX crash_missing_name_by_crash ON crash_missing_name(crash_seq);
                """)
        }
    }

    /// Replaces the names crash `seq` lacked (in `finish`'s transaction). A name that became
    /// matchable while the crash was processed (one table of that name in the version now)
    /// queues it again at once, as `finish` does for build-ids.
    static func recordMissingNames(_ db: Database, seq: Int64, appID: String, version: String, names: [String]) throws {
        try db.run("DELETE FROM crash_missing_name WHERE crash_seq = ?", [seq])
        guard !names.isEmpty else { return }
        let insert = try db.cachedStatement(sql: """
            INSERT OR IGNORE INTO crash_missing_name (app_id, version, name, crash_seq) VALUES (?, ?, ?, ?)
            """)
        for name in names { try insert.execute(arguments: [appID, version, name, seq]) }
        let counts = try namedTableCounts(db, appID: appID, version: version, names: names)
        if names.contains(where: { counts[$0] == 1 }) {
            try enqueue(db, seq: seq, kind: .resymbolicate, now: currentMilliseconds())
        }
    }

    /// Queues re-symbolication of every crash of the app's version `version` that lacked a
    /// table named one of `names` (a bundle of that version just stored tables of those names);
    /// returns how many crashes were queued.
    @discardableResult
    public func requeue(appID: String, version: String, names: [String], now: Int64) async throws -> Int {
        guard !names.isEmpty else { return 0 }
        return try await write { db in
            var seqs = Set<Int64>()
            let select = try db.cachedStatement(sql: """
                SELECT crash_seq FROM crash_missing_name WHERE app_id = ? AND version = ? AND name = ?
                """)
            for name in Set(names) { seqs.formUnion(try Int64.fetchAll(select, arguments: [appID, version, name])) }
            for seq in seqs.sorted() { try Self.enqueue(db, seq: seq, kind: .resymbolicate, now: now) }
            return seqs.count
        }
    }

    /// Queues every crash that lacked a name its version now has exactly one table of (run at
    /// startup, as `requeueResolvable` is for build-ids). Names still shared by several tables
    /// stay ambiguous and are not queued again.
    @discardableResult
    public func requeueResolvableNames(now: Int64) async throws -> Int {
        try await write { db in
            let seqs = try Int64.fetchAll(db, sql: """
                SELECT DISTINCT n.crash_seq FROM crash_missing_name n
                WHERE (SELECT COUNT(*) FROM version_module l JOIN module m ON m.app_id = l.app_id AND m.build_id = l.build_id
                       WHERE l.app_id = n.app_id AND l.version = n.version AND m.name = n.name) = 1
                """)
            for seq in seqs { try Self.enqueue(db, seq: seq, kind: .resymbolicate, now: now) }
            return seqs.count
        }
    }

    /// How many tables of the app's version `version` each of `names` has (0: none, 1: the
    /// module is matched by name, more: ambiguous), for the console's module list.
    public func namedTableCounts(appID: String, version: String, names: [String]) async throws -> [String: Int] {
        try await read { db in try Self.namedTableCounts(db, appID: appID, version: version, names: names) }
    }

    static func namedTableCounts(_ db: Database, appID: String, version: String, names: [String]) throws -> [String: Int] {
        let count = try db.cachedStatement(sql: """
            SELECT COUNT(*) FROM version_module l JOIN module m ON m.app_id = l.app_id AND m.build_id = l.build_id
            WHERE l.app_id = ? AND l.version = ? AND m.name = ?
            """)
        var counts: [String: Int] = [:]
        for name in Set(names) { counts[name] = try Int.fetchOne(count, arguments: [appID, version, name]) ?? 0 }
        return counts
    }
}
