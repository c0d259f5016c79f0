import GRDB

/// Compaction of crash packs (docs/storage.md "Crash packs"): the bytes of deleted crashes stay
/// inside their pack until it is rewritten without them. Deletion notes, per pack, how many bytes
/// died and whether a crash was deleted by request (`crash_pack_dead`); `PackCompactor` leases
/// the packs to rewrite, writes a pack of the live members, then repoints the rows to it.
extension CrashStore {
    /// A pack to rewrite without its dead members, leased to one compactor.
    public struct PackCompaction: Sendable, Equatable {
        /// The pack's object name.
        public var pack: String
        /// Whether a crash of it was deleted by request (then it is rewritten whatever the share
        /// of dead bytes).
        public var erase: Bool
        /// Its live members, by offset.
        public var members: [PackMember]
    }

    /// A live member of a pack: its crash, its bytes' SHA-256 and size, and their offset (in the
    /// old pack as leased; in the new one when handed to `repointPack`).
    public struct PackMember: Sendable, Hashable {
        public var seq: Int64
        public var sha256: String
        public var size: Int
        public var offset: Int64

        public init(seq: Int64, sha256: String, size: Int, offset: Int64) {
            self.seq = seq
            self.sha256 = sha256
            self.size = size
            self.offset = offset
        }
    }

    /// Leases up to `limit` packs to compact, for `lease` milliseconds: those holding bytes of a
    /// crash deleted by request, and those whose dead bytes are at least `deadFraction` of the
    /// pack's members. A pack leased (and not expired) is not handed to another compactor.
    public func leasePackCompactions(deadFraction: Double, limit: Int, now: Int64, lease: Int64) async throws -> [PackCompaction] {
        try await write { db in
            // Packs to erase first, in order by the index, reading no other row; then the others
            // whose dead share is due (their live bytes summed one pack at a time). A pass of
            // `PackCompactor` after a mass DELETE reads each pack once, not all of them per batch.
            var due = try Row.fetchAll(db, sql: """
                SELECT pack, erase FROM crash_pack_dead WHERE erase = 1 AND lease_until_ms <= ? ORDER BY pack LIMIT ?
                """, arguments: [now, limit])
            if due.count < limit {
                due += try Row.fetchAll(db, sql: """
                    SELECT d.pack, d.erase FROM crash_pack_dead d
                    WHERE d.erase = 0 AND d.lease_until_ms <= ?
                      AND d.dead_bytes >= ? * (d.dead_bytes + COALESCE((SELECT SUM(raw_size) FROM crash WHERE raw_pack = d.pack), 0))
                    ORDER BY d.pack LIMIT ?
                    """, arguments: [now, deadFraction, limit - due.count])
            }
            var leased: [PackCompaction] = []
            let members = try db.cachedStatement(sql: """
                SELECT seq, raw_sha256, raw_size, raw_offset FROM crash WHERE raw_pack = ? ORDER BY raw_offset
                """)
            for row in due {
                let pack: String = row["pack"], erase: Bool = row["erase"]
                try db.execute(sql: "UPDATE crash_pack_dead SET lease_until_ms = ? WHERE pack = ?", arguments: [now + lease, pack])
                leased.append(PackCompaction(pack: pack, erase: erase, members: try Row.fetchAll(members, arguments: [pack]).map {
                    PackMember(seq: $0["seq"], sha256: $0["raw_sha256"], size: $0["raw_size"], offset: $0["raw_offset"] ?? 0)
                }))
            }
            return leased
        }
    }

    /// Repoints the crashes of `members` from `pack` to `newPack` (each at its member's offset
    /// there), in one transaction, and forgets `pack`'s dead bytes; returns how many crashes now
    /// name `newPack`. A member deleted meanwhile is not moved; its bytes, in `newPack` now, are
    /// noted for erasure there. A crash that no longer names `pack` (another compactor moved it
    /// first) is left alone.
    public func repointPack(_ pack: String, to newPack: String, members: [PackMember]) async throws -> Int {
        try await write { db in
            let move = try db.cachedStatement(sql: "UPDATE crash SET raw_pack = ?, raw_offset = ? WHERE seq = ? AND raw_pack = ?")
            var moved = 0
            var gone: Int64 = 0
            for member in members {
                try move.execute(arguments: [newPack, member.offset, member.seq, pack])
                if db.changesCount > 0 { moved += 1 } else { gone += Int64(member.size) }
            }
            try Self.forgetDeadBytes(db, packs: [pack])
            if moved > 0, gone > 0 { try Self.noteDeadBytes(db, [newPack: gone], erase: true) }
            return moved
        }
    }

    /// Adds `dead` (bytes by pack) to the packs' dead bytes; `erase`: deleted by request.
    static func noteDeadBytes(_ db: Database, _ dead: [String: Int64], erase: Bool) throws {
        let note = try db.cachedStatement(sql: """
            INSERT INTO crash_pack_dead (pack, dead_bytes, erase, lease_until_ms) VALUES (?, ?, ?, 0)
            ON CONFLICT (pack) DO UPDATE SET dead_bytes = dead_bytes + excluded.dead_bytes, erase = MAX(erase, excluded.erase)
            """)
        for (pack, bytes) in dead.sorted(by: { $0.key < $1.key }) { try note.execute(arguments: [pack, bytes, erase]) }
    }

    /// Forgets the dead bytes of `packs` (gone, or rewritten).
    static func forgetDeadBytes(_ db: Database, packs: [String]) throws {
        let forget = try db.cachedStatement(sql: "DELETE FROM crash_pack_dead WHERE pack = ?")
        for pack in packs { try forget.execute(arguments: [pack]) }
    }
}
