import Foundation
import GRDB

/// What a Crashpad or Breakpad client sent with a minidump (`POST …/minidump`): the product,
/// its annotations and the attachments kept with the crash. The minidump itself is the crash's
/// raw object (`input_format` `minidump`).
extension CrashStore {
    /// The `input_format` of a crash whose raw bytes are a minidump.
    public static let minidumpFormat = "minidump"

    /// An attached file kept with a crash, its bytes in the object store.
    public struct MinidumpAttachment: Sendable, Codable, Equatable {
        /// The form field's name.
        public var name: String
        /// The file name the client gave.
        public var filename: String
        /// The part's `Content-Type`, when it had one.
        public var contentType: String?
        public var size: Int
        public var sha256: String

        enum CodingKeys: String, CodingKey { case name, filename, contentType = "content_type", size, sha256 }
    }

    /// The client's side of a minidump crash.
    public struct MinidumpDetails: Sendable, Codable, Equatable {
        /// The `prod` annotation.
        public var product: String?
        /// Every annotation (text part) the client sent, by name (the first of a repeated name).
        public var annotations: [String: String]
        public var attachments: [MinidumpAttachment]
        /// Why the crash's version is not the `ver` annotation as sent (it was not a version);
        /// nil when it is, or when there was none.
        public var versionNote: String?

        enum CodingKeys: String, CodingKey { case product, annotations, attachments, versionNote = "version_note" }

        public init(product: String?, annotations: [String: String], attachments: [MinidumpAttachment], versionNote: String? = nil) {
            self.product = product
            self.annotations = annotations
            self.attachments = attachments
            self.versionNote = versionNote
        }
    }

    static func registerMinidumpMigrations(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v5-crash-minidumps") { db in
            // One row per minidump crash, gone with its crash (foreign keys are on in GRDB).
            try db.execute(sql: """
                CREATE TABLE crash_minidump (
                    crash_seq INTEGER PRIMARY KEY NOT NULL REFERENCES crash(seq) ON DELETE CASCADE,
                    product TEXT, annotations TEXT NOT NULL, attachments TEXT NOT NULL);
                """)
            // The attachments' objects, by crash; a row outlives its crash (no foreign key) until
            // `collectOrphanAttachments` removes it and names the objects no crash uses any more.
            try db.execute(sql: """
                CREATE TABLE crash_attachment (crash_seq INTEGER NOT NULL, sha256 TEXT NOT NULL, PRIMARY KEY (crash_seq, sha256));
                CREATE INDEX crash_attachment_by_object ON crash_attachment(sha256);
                """)
        }
        migrator.registerMigration("crash-minidump-version-note") { db in
            try db.execute(sql: "ALTER TABLE crash_minidump ADD COLUMN version_note TEXT")
        }
    }

    /// Records a minidump crash, what its client sent and its processing job in one
    /// transaction; a minidump seen before for the app (the idempotency key names its SHA-256)
    /// answers the first crash and stores nothing.
    public func acceptMinidump(_ crash: NewCrash, details: MinidumpDetails) async throws -> Receipt {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let annotations = String(decoding: try encoder.encode(details.annotations), as: UTF8.self)
        let attachments = String(decoding: try encoder.encode(details.attachments), as: UTF8.self)
        return try await write { db in
            let (receipt, seq) = try Self.insert(db, crash)
            if let seq {
                try db.execute(sql: "INSERT INTO crash_minidump (crash_seq, product, annotations, attachments, version_note) VALUES (?, ?, ?, ?, ?)",
                               arguments: [seq, details.product, annotations, attachments, details.versionNote])
                for attachment in details.attachments {
                    try db.execute(sql: "INSERT OR IGNORE INTO crash_attachment (crash_seq, sha256) VALUES (?, ?)",
                                   arguments: [seq, attachment.sha256])
                }
            }
            return receipt
        }
    }

    /// What the client sent with crash `id`; nil when it is not a minidump crash.
    public func minidumpDetails(appID: String, id: String) async throws -> MinidumpDetails? {
        try await read { db in
            guard let row = try Row.fetchOne(db, sql: """
                SELECT m.product, m.annotations, m.attachments, m.version_note FROM crash c JOIN crash_minidump m ON m.crash_seq = c.seq
                WHERE c.app_id = ? AND c.id = ?
                """, arguments: [appID, id]) else { return nil }
            let decoder = JSONDecoder()
            let annotations = try? decoder.decode([String: String].self, from: Data((row["annotations"] as String).utf8))
            let attachments = try? decoder.decode([MinidumpAttachment].self, from: Data((row["attachments"] as String).utf8))
            return MinidumpDetails(product: row["product"], annotations: annotations ?? [:], attachments: attachments ?? [],
                                   versionNote: row["version_note"])
        }
    }

    /// Forgets the attachments of deleted crashes (by a DELETE or retention); returns the
    /// objects that neither another crash's attachment nor a crash's raw bytes use, for the
    /// caller to remove after the commit.
    public func collectOrphanAttachments() async throws -> [String] {
        try await write { db in
            let orphans = try String.fetchAll(db, sql: """
                SELECT DISTINCT a.sha256 FROM crash_attachment a WHERE NOT EXISTS (SELECT 1 FROM crash c WHERE c.seq = a.crash_seq)
                """)
            guard !orphans.isEmpty else { return [] }
            try db.execute(sql: "DELETE FROM crash_attachment WHERE NOT EXISTS (SELECT 1 FROM crash c WHERE c.seq = crash_attachment.crash_seq)")
            return try Self.unused(db, orphans)
        }
    }

    /// Those of `candidates` that no row names: neither a crash's raw bytes (or their pack) nor an attachment,
    /// nor a module's table or debug file.
    static func unused(_ db: Database, _ candidates: [String]) throws -> [String] {
        let used = try db.cachedStatement(sql: """
            SELECT 1 WHERE EXISTS (SELECT 1 FROM crash_attachment WHERE sha256 = ?1) OR EXISTS (SELECT 1 FROM crash WHERE raw_sha256 = ?1)
                OR EXISTS (SELECT 1 FROM crash WHERE raw_pack = ?1)
                OR EXISTS (SELECT 1 FROM module WHERE symbols_sha256 = ?1 OR debug_sha256 = ?1)
            """)
        return try candidates.filter { try Bool.fetchOne(used, arguments: [$0]) != true }
    }
}
