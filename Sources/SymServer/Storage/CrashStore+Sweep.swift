import GRDB

extension CrashStore {
    /// Every object a row names (module tables and debug files, raw crash reports and the packs
    /// holding them): what the
    /// object sweeper must keep. Read after the sweeper lists the store, so that a row committed
    /// meanwhile is seen.
    public func referencedObjects() async throws -> Set<String> {
        try await read { db in
            var referenced = Set<String>()
            let names = try String.fetchCursor(db, sql: """
                SELECT symbols_sha256 FROM module
                UNION SELECT debug_sha256 FROM module WHERE debug_sha256 IS NOT NULL
                UNION SELECT raw_sha256 FROM crash
                UNION SELECT raw_pack FROM crash WHERE raw_pack IS NOT NULL
                UNION SELECT sha256 FROM crash_attachment
                """)
            while let name = try names.next() { referenced.insert(name) }
            return referenced
        }
    }

    /// Each check and removal is a write transaction of its own: SQLite's one writer is the lock
    /// that keeps a row naming the object from committing in between (GRDB runs the closure on
    /// its writer queue, where `remove` may block).
    public func removeUnusedObjects(_ candidates: [String], using remove: @escaping @Sendable (String) throws -> Bool) async throws -> [String] {
        var removed: [String] = []
        for sha256 in candidates {
            let gone = try await write { db in try Self.unused(db, [sha256]).isEmpty ? false : remove(sha256) }
            if gone { removed.append(sha256) }
        }
        return removed
    }
}
