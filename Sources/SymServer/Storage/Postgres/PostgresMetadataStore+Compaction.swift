import PostgresNIO

/// Compaction of crash packs on PostgreSQL (CrashStore+Compaction.swift has the SQLite twin and
/// the documentation of each verb).
extension PostgresMetadataStore {
    /// Several nodes compact at once: `FOR UPDATE SKIP LOCKED` and the lease keep a pack with one
    /// compactor until its lease expires.
    public func leasePackCompactions(deadFraction: Double, limit: Int, now: Int64, lease: Int64) async throws
        -> [CrashStore.PackCompaction] {
        let until = now + lease
        return try await transaction { db in
            // Packs to erase first, in order by the index; then the others whose dead share is due
            // (CrashStore+Compaction.swift says why in two steps).
            var leased = try await db.rows("""
                WITH picked AS (
                    SELECT d.pack FROM crash_pack_dead d WHERE d.erase AND d.lease_until_ms <= \(now)
                    ORDER BY d.pack LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                UPDATE crash_pack_dead d SET lease_until_ms = \(until) FROM picked WHERE d.pack = picked.pack
                RETURNING d.pack, d.erase
                """).map { try $0.decode((String, Bool).self) }
            if leased.count < limit {
                leased += try await db.rows("""
                    WITH picked AS (
                        SELECT d.pack FROM crash_pack_dead d
                        WHERE NOT d.erase AND d.lease_until_ms <= \(now) AND d.dead_bytes::DOUBLE PRECISION >= \(deadFraction)
                              * (d.dead_bytes + COALESCE((SELECT SUM(raw_size) FROM crash WHERE raw_pack = d.pack), 0))
                        ORDER BY d.pack LIMIT \(limit - leased.count) FOR UPDATE SKIP LOCKED)
                    UPDATE crash_pack_dead d SET lease_until_ms = \(until) FROM picked WHERE d.pack = picked.pack
                    RETURNING d.pack, d.erase
                    """).map { try $0.decode((String, Bool).self) }
            }
            guard !leased.isEmpty else { return [] }
            var members: [String: [CrashStore.PackMember]] = [:]
            for row in try await db.rows("""
                SELECT raw_pack, seq, raw_sha256, raw_size, raw_offset FROM crash
                WHERE raw_pack = ANY(\(leased.map(\.0))) ORDER BY raw_pack, raw_offset
                """) {
                let (pack, seq, sha256, size, offset) = try row.decode((String, Int64, String, Int64, Int64?).self)
                members[pack, default: []].append(CrashStore.PackMember(seq: seq, sha256: sha256, size: Int(size), offset: offset ?? 0))
            }
            return leased.sorted { ($0.1 ? 0 : 1, $0.0) < ($1.1 ? 0 : 1, $1.0) }
                .map { CrashStore.PackCompaction(pack: $0.0, erase: $0.1, members: members[$0.0] ?? []) }
        }
    }

    /// One statement moves the members; a row another compactor moved first no longer names
    /// `pack` and is left alone (its update waits for that compactor's commit, then skips it).
    public func repointPack(_ pack: String, to newPack: String, members: [CrashStore.PackMember]) async throws -> Int {
        try await transaction { db in
            let seqs = members.map(\.seq), offsets = members.map(\.offset)
            let moved = Set(try await db.rows("""
                UPDATE crash c SET raw_pack = \(newPack), raw_offset = m.place
                FROM unnest(\(seqs)::BIGINT[], \(offsets)::BIGINT[]) AS m(seq, place)
                WHERE c.seq = m.seq AND c.raw_pack = \(pack)
                RETURNING c.seq
                """).map { try $0.decode(Int64.self) })
            try await db.rows("DELETE FROM crash_pack_dead WHERE pack = \(pack)")
            let gone = members.filter { !moved.contains($0.seq) }.reduce(Int64(0)) { $0 + Int64($1.size) }
            if !moved.isEmpty, gone > 0 { try await Self.noteDeadBytes(db, [(newPack, gone)], erase: true) }
            return moved.count
        }
    }

    /// Adds `dead` (bytes by pack) to the packs' dead bytes; `erase`: deleted by request.
    static func noteDeadBytes(_ db: Transaction, _ dead: [(String, Int64)], erase: Bool) async throws {
        for (pack, bytes) in dead.sorted(by: { $0.0 < $1.0 }) {
            try await db.rows("""
                INSERT INTO crash_pack_dead (pack, dead_bytes, erase, lease_until_ms) VALUES (\(pack), \(bytes), \(erase), 0)
                ON CONFLICT (pack) DO UPDATE SET dead_bytes = crash_pack_dead.dead_bytes + EXCLUDED.dead_bytes,
                    erase = crash_pack_dead.erase OR EXCLUDED.erase
                """)
        }
    }
}
