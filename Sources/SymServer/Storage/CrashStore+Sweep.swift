import GRDB

extension CrashStore {
    /// Every object a row names (module tables and debug files, raw crash reports): what the
    /// object sweeper must keep. Read after the sweeper lists the store, so that a row committed
    /// meanwhile is seen.
    public func referencedObjects() async throws -> Set<String> {
        try await read { db in
            var referenced = Set<String>()
            let names = try String.fetchCursor(db, sql: """
                SELECT symbols_sha256 FROM module
                UNION SELECT debug_sha256 FROM module WHERE debug_sha256 IS NOT NULL
                UNION SELECT raw_sha256 FROM crash
                UNION SELECT sha256 FROM crash_attachment
                """)
            while let name = try names.next() { referenced.insert(name) }
            return referenced
        }
    }
}
