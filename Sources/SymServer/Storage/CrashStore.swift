import Foundation
import GRDB
import Symbolication
import Synchronization

/// Crashes, their processing jobs, groups and grouping rules, in the metadata database of the
/// `SymbolStore` (SQLite, WAL, synchronous=FULL).
///
/// Every method is a domain verb: no SQL or file path leaves this type, and failures are
/// `StoreError`s. Work that must happen later is a row of `crash_job`, written in the same
/// transaction as the crash it concerns, so that a crash acknowledged once is processed even if
/// the process dies at any moment after the commit.
public final class CrashStore: Sendable {
    let database: DatabasePool
    /// Apps, versions and modules (the same database).
    let symbols: SymbolStore

    /// Ingestion's commits, grouped (`accept`).
    private let ingestion = WaitingGroup<Waiting>()

    /// The store over the database of `symbols` (its migrations include the crash tables).
    public init(symbols: SymbolStore) {
        database = symbols.database
        self.symbols = symbols
    }

    /// Registers the crash tables' migration (run by `SymbolStore` after its own).
    static func registerMigrations(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v2-crashes") { db in
            try db.execute(sql: """
                CREATE TABLE crash (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, app_id TEXT NOT NULL,
                    received_ms INTEGER NOT NULL, version TEXT NOT NULL, version_given INTEGER NOT NULL,
                    host TEXT, environment TEXT, input_format TEXT,
                    raw_sha256 TEXT NOT NULL, raw_size INTEGER NOT NULL,
                    state TEXT NOT NULL, failure TEXT, format TEXT, signal TEXT,
                    signature TEXT, title TEXT, group_id TEXT, report BLOB,
                    symbolicated_ms INTEGER, missing_build_ids TEXT);
                CREATE INDEX crash_by_app ON crash(app_id, seq);
                CREATE INDEX crash_by_group ON crash(group_id, seq);
                CREATE INDEX crash_by_received ON crash(received_ms);
                CREATE INDEX crash_by_raw ON crash(raw_sha256);
                CREATE TABLE crash_missing (
                    app_id TEXT NOT NULL, build_id TEXT NOT NULL, crash_seq INTEGER NOT NULL, module TEXT NOT NULL,
                    PRIMARY KEY (app_id, build_id, crash_seq));
                CREATE INDEX crash_missing_by_crash ON crash_missing(crash_seq);
                CREATE TABLE crash_job (
                    crash_seq INTEGER PRIMARY KEY NOT NULL, kind TEXT NOT NULL, priority INTEGER NOT NULL,
                    lease_until_ms INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0,
                    again INTEGER NOT NULL DEFAULT 0, created_ms INTEGER NOT NULL);
                CREATE INDEX crash_job_by_order ON crash_job(priority, crash_seq);
                CREATE TABLE crash_idempotency (
                    app_id TEXT NOT NULL, key TEXT NOT NULL, crash_seq INTEGER NOT NULL, PRIMARY KEY (app_id, key));
                CREATE INDEX crash_idempotency_by_crash ON crash_idempotency(crash_seq);
                CREATE TABLE crash_group (
                    id TEXT PRIMARY KEY NOT NULL, app_id TEXT NOT NULL, signature TEXT NOT NULL, title TEXT NOT NULL,
                    count INTEGER NOT NULL DEFAULT 0, first_seen_ms INTEGER NOT NULL, last_seen_ms INTEGER NOT NULL,
                    state TEXT NOT NULL DEFAULT 'open', resolved_in TEXT, reopened_in TEXT, sample_crash_id TEXT,
                    UNIQUE (app_id, signature));
                CREATE TABLE crash_group_version (
                    group_id TEXT NOT NULL, version TEXT NOT NULL, count INTEGER NOT NULL, PRIMARY KEY (group_id, version));
                CREATE TABLE crash_group_host (group_id TEXT NOT NULL, host TEXT NOT NULL, PRIMARY KEY (group_id, host));
                CREATE TABLE grouping_rules (app_id TEXT PRIMARY KEY NOT NULL, rules TEXT NOT NULL, updated_ms INTEGER NOT NULL);
                """)
        }
        registerWebhookMigrations(&migrator)
        registerUserMigrations(&migrator)
        registerMinidumpMigrations(&migrator)
        registerDeliveryClaimMigration(&migrator)
        registerNameMigrations(&migrator)
        registerRegroupMigrations(&migrator)
        registerAgentMigrations(&migrator)
        migrator.registerMigration("crash-system") { db in
            // The OS and kernel a crash happened on (`?system=`; nil for crashes from before).
            try db.execute(sql: "ALTER TABLE crash ADD COLUMN system TEXT")
        }
        migrator.registerMigration("crash-raw-pack") { db in
            // The pack holding a crash's raw bytes and their offset in it (CrashPack.swift); nil
            // for the crashes stored as single objects named raw_sha256 (all those from before).
            try db.execute(sql: """
                ALTER TABLE crash ADD COLUMN raw_pack TEXT;
                ALTER TABLE crash ADD COLUMN raw_offset INTEGER;
                CREATE INDEX crash_by_raw_pack ON crash(raw_pack);
                """)
        }
        migrator.registerMigration("crash-pack-dead") { db in
            // The bytes of deleted crashes still inside packs, what compaction rewrites
            // (CrashStore+Compaction.swift).
            try db.execute(sql: """
                CREATE TABLE crash_pack_dead (
                    pack TEXT PRIMARY KEY NOT NULL, dead_bytes INTEGER NOT NULL, erase INTEGER NOT NULL,
                    lease_until_ms INTEGER NOT NULL)
                """)
            // The packs to erase in order, without reading the others (leasePackCompactions).
            try db.execute(sql: "CREATE INDEX crash_pack_dead_by_erase ON crash_pack_dead(erase, pack)")
        }
    }

    // MARK: Types

    /// The processing state of a crash.
    public enum State: String, Sendable, Codable {
        /// Accepted, waiting for (or in) processing.
        case pending
        /// Symbolicated and grouped.
        case done
        /// The report could not be read; `failure` says why.
        case failed
    }

    /// A crash as received, its raw bytes already durable in the object store.
    public struct NewCrash: Sendable {
        public var appID: String
        public var version: String?
        public var host: String?
        /// The OS and kernel (`?system=`), e.g. `Linux 6.1.0-18-amd64 x86_64`.
        public var system: String? = nil
        public var environment: String?
        public var inputFormat: String?
        public var rawSHA256: String
        public var rawSize: Int
        public var idempotencyKey: String?
        public var receivedMilliseconds: Int64
        /// The pack holding the raw bytes at `rawOffset` (CrashPack.swift); nil: a single object
        /// named `rawSHA256`.
        public var rawPack: String? = nil
        public var rawOffset: Int64 = 0
    }

    /// What ingestion answers.
    public struct Receipt: Sendable, Equatable {
        public var id: String
        public var state: State
        public var groupID: String?
        /// True when an earlier request with the same idempotency key created the crash.
        public var replayed: Bool
    }

    /// A leased job: reprocess crash `seq`.
    public struct Job: Sendable {
        public enum Kind: String, Sendable {
            /// First processing of a new crash.
            case process
            /// Symbols arrived for a build-id (or a name) it lacked.
            case resymbolicate
            /// The app's grouping rules changed (CrashStore+Regroup.swift).
            case regroup

            /// Lower first: new crashes, then late symbols, then re-signing after a rules change.
            var priority: Int {
                switch self {
                case .process: 0
                case .resymbolicate: 1
                case .regroup: 2
                }
            }
        }
        var seq: Int64
        var kind: Kind
        var attempts: Int
    }

    /// What processing needs of a crash.
    public struct ProcessingInput: Sendable {
        var seq: Int64
        var id: String
        var appID: String
        var version: String
        var versionGiven: Bool
        var inputFormat: String?
        var rawSHA256: String
        var rawSize: Int = 0
        var rawPack: String? = nil
        var rawOffset: Int64 = 0

        /// Where the raw bytes are.
        var raw: RawLocation { RawLocation(sha256: rawSHA256, size: rawSize, pack: rawPack, offset: rawOffset) }
    }

    /// The outcome of processing a crash.
    public struct ProcessingResult: Sendable {
        var state: State
        var failure: String?
        var format: String?
        var signal: String?
        /// The version the report states, used when ingestion was given none.
        var reportVersion: String?
        var signature: String?
        var title: String?
        /// The symbolicated JSON model (docs/crash-report.md).
        var report: [UInt8]?
        /// Modules with a build-id whose frames found no symbols: (build-id, name).
        var missing: [(buildID: String, name: String)]
        /// Modules without a build-id whose frames found no symbols (none of the version's
        /// tables had the name, or several did): their names (CrashStore+Names.swift).
        var missingNames: [String] = []
        /// The signature with every examined frame's role (`CrashSignature.keptBytes`), for the
        /// console (CrashStore+Regroup.swift).
        var grouping: [UInt8]? = nil
    }

    // MARK: Ingestion

    /// Records a crash and its processing job in one transaction. With an idempotency key seen
    /// before for the app, nothing is stored and the first crash is answered instead.
    ///
    /// Crashes accepted at the same time share a transaction, and so its sync (group commit):
    /// while one group commits, the next gathers. Each crash is inserted under its own savepoint,
    /// so one that fails leaves the others in.
    public func accept(_ crash: NewCrash) async throws -> Receipt {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Receipt, any Error>) in
            if ingestion.add((crash, continuation)) {
                Task { await commitIngestion() }
            }
        }
    }

    /// Commits the waiting crashes a group at a time until none waits.
    private func commitIngestion() async {
        while let group = ingestion.next() {
            let crashes = group.map(\.crash)
            let results: [Result<Receipt, any Error>]
            do {
                results = try await write { db in
                    crashes.map { crash in
                        var receipt: Result<Receipt, any Error> = .failure(StoreError.unavailable("not inserted"))
                        do {
                            try db.inSavepoint {
                                receipt = .success(try Self.insert(db, crash).receipt)
                                return .commit
                            }
                        } catch let error as DatabaseError {
                            receipt = .failure(Self.storeError(error))
                        } catch {
                            receipt = .failure(error)
                        }
                        return receipt
                    }
                }
            } catch {
                results = group.map { _ in .failure(error) }
            }
            for (waiting, result) in zip(group, results) { waiting.continuation.resume(with: result) }
        }
    }

    /// A crash waiting to be committed with its group, and its caller.
    typealias Waiting = (crash: NewCrash, continuation: CheckedContinuation<Receipt, any Error>)

    /// `accept` inside a transaction: the receipt, and the new crash's seq (nil when the
    /// idempotency key answered an earlier crash).
    static func insert(_ db: Database, _ crash: NewCrash) throws -> (receipt: Receipt, seq: Int64?) {
        if let key = crash.idempotencyKey,
           let row = try Row.fetchOne(db.cachedStatement(sql: """
                SELECT c.id, c.state, c.group_id FROM crash_idempotency k JOIN crash c ON c.seq = k.crash_seq
                WHERE k.app_id = ? AND k.key = ?
                """), arguments: [crash.appID, key]) {
            return (Receipt(id: row["id"], state: State(rawValue: row["state"]) ?? .pending, groupID: row["group_id"], replayed: true), nil)
        }
        let id = Self.randomHex(bytes: 16)
        try db.run("""
            INSERT INTO crash (id, app_id, received_ms, version, version_given, host, system, environment, input_format,
                               raw_sha256, raw_size, raw_pack, raw_offset, state)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending')
            """, [id, crash.appID, crash.receivedMilliseconds, crash.version ?? "unknown", crash.version != nil,
                             crash.host, crash.system, crash.environment, crash.inputFormat, crash.rawSHA256, crash.rawSize,
                             crash.rawPack, crash.rawPack == nil ? nil : crash.rawOffset])
        let seq = db.lastInsertedRowID
        try Self.enqueue(db, seq: seq, kind: .process, now: crash.receivedMilliseconds)
        if let key = crash.idempotencyKey {
            try db.run("INSERT INTO crash_idempotency (app_id, key, crash_seq) VALUES (?, ?, ?)", [crash.appID, key, seq])
        }
        return (Receipt(id: id, state: .pending, groupID: nil, replayed: false), seq)
    }

    /// Adds (or re-arms) the job of crash `seq`: a job already leased is marked to run again
    /// when it finishes, so symbols that arrive during processing are not missed.
    static func enqueue(_ db: Database, seq: Int64, kind: Job.Kind, now: Int64) throws {
        try db.run("""
            INSERT INTO crash_job (crash_seq, kind, priority, created_ms) VALUES (?, ?, ?, ?)
            ON CONFLICT (crash_seq) DO UPDATE SET again = 1
            """, [seq, kind.rawValue, kind.priority, now])
    }

    // MARK: Jobs

    /// Frees every lease: at startup nothing is in progress (one process owns an embedded store).
    public func releaseAllLeases() async throws {
        try await write { db in try db.execute(sql: "UPDATE crash_job SET lease_until_ms = 0") }
    }

    /// Leases up to `limit` jobs whose lease is free or expired, new crashes before
    /// re-symbolication, for `lease` milliseconds.
    public func leaseJobs(limit: Int, now: Int64, lease: Int64) async throws -> [Job] {
        try await writeUnsynced { db in
            let rows = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT crash_seq, kind, attempts FROM crash_job WHERE lease_until_ms <= ?
                ORDER BY priority, crash_seq LIMIT ?
                """), arguments: [now, limit])
            let update = try db.cachedStatement(sql: """
                UPDATE crash_job SET lease_until_ms = ?, attempts = attempts + 1, again = 0 WHERE crash_seq = ?
                """)
            return try rows.map { row in
                let seq: Int64 = row["crash_seq"]
                try update.execute(arguments: [now + lease, seq])
                return Job(seq: seq, kind: Job.Kind(rawValue: row["kind"]) ?? .process, attempts: row["attempts"] + 1)
            }
        }
    }

    /// Jobs waiting or leased.
    public func pendingJobCount() async throws -> Int {
        try await read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM crash_job") ?? 0 }
    }

    /// What processing crashes `seqs` needs, by seq, in one read; the jobs of crashes deleted
    /// meanwhile are dropped (they are absent from the answer).
    public func processingInputs(seqs: [Int64]) async throws -> [Int64: ProcessingInput] {
        let inputs = try await read { db in
            var inputs: [Int64: ProcessingInput] = [:]
            let select = try db.cachedStatement(sql: """
                SELECT seq, id, app_id, version, version_given, input_format, raw_sha256, raw_size, raw_pack, raw_offset
                FROM crash WHERE seq = ?
                """)
            for seq in seqs {
                guard let row = try Row.fetchOne(select, arguments: [seq]) else { continue }
                inputs[seq] = ProcessingInput(seq: row["seq"], id: row["id"], appID: row["app_id"], version: row["version"],
                                              versionGiven: row["version_given"], inputFormat: row["input_format"],
                                              rawSHA256: row["raw_sha256"], rawSize: row["raw_size"], rawPack: row["raw_pack"],
                                              rawOffset: row["raw_offset"] ?? 0)
            }
            return inputs
        }
        let gone = seqs.filter { inputs[$0] == nil }
        if !gone.isEmpty {
            try await write { db in
                for seq in gone { try db.execute(sql: "DELETE FROM crash_job WHERE crash_seq = ?", arguments: [seq]) }
            }
        }
        return inputs
    }

    /// What processing crash `seq` needs; nil when it was deleted meanwhile (its job is dropped).
    func processingInput(seq: Int64) async throws -> ProcessingInput? {
        try await processingInputs(seqs: [seq])[seq]
    }

    /// Records the outcome of processing crash `seq`, moves it between groups, and ends its job
    /// (unless it was re-armed meanwhile), in one transaction with the notifications the group
    /// change calls for (CrashStore+Webhooks.swift). Returns the crash's group.
    func finish(seq: Int64, result: ProcessingResult, now: Int64, spike: SpikeRule = SpikeRule()) async throws -> String? {
        try await finish([(seq, result)], now: now, spike: spike)[0]
    }

    /// `finish` for several crashes in one transaction (one commit, one sync, for a batch of
    /// jobs); returns each crash's group, in order.
    public func finish(_ outcomes: [(seq: Int64, result: ProcessingResult)], now: Int64, spike: SpikeRule = SpikeRule()) async throws
        -> [String?] {
        // The missing build-ids' JSON is written before the transaction: the writer is the one
        // connection every ingestion and processing commit waits for.
        let missing = outcomes.map { Self.missingJSON($0.result.missing) }
        // Unsynced: a power loss may take the commit back, and then the job is still there and
        // the crash is processed again (docs/storage.md "Durability").
        return try await writeUnsynced { db in
            try zip(outcomes, missing).map { outcome, missing in
                try Self.finish(db, seq: outcome.seq, result: outcome.result, missingJSON: missing, now: now, spike: spike)
            }
        }
    }

    /// The JSON array of the missing modules' build-ids, as `missing_build_ids` keeps it.
    static func missingJSON(_ missing: [(buildID: String, name: String)]) -> String {
        var writer = JSONWriter()
        writer.beginArray()
        for module in missing { writer.value(module.buildID) }
        writer.endArray()
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    private static func finish(_ db: Database, seq: Int64, result: ProcessingResult, missingJSON: String, now: Int64,
                               spike: SpikeRule) throws -> String? {
        guard let crash = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT id, app_id, version, version_given, host, received_ms, group_id FROM crash WHERE seq = ?
            """), arguments: [seq]) else {
            try db.run("DELETE FROM crash_job WHERE crash_seq = ?", [seq])
            return nil
        }
        let appID: String = crash["app_id"]
        var version: String = crash["version"]
        if !(crash["version_given"] as Bool), let stated = result.reportVersion, !stated.isEmpty {
            version = String(stated.prefix(128))
        }
        let oldGroup: String? = crash["group_id"]
        var newGroup: String?
        var created = false
        if result.state == .done, let signature = result.signature {
            (newGroup, created) = try Self.group(db, appID: appID, signature: signature, title: result.title ?? signature, now: now)
        }
        if oldGroup != newGroup {
            if let oldGroup { try Self.leave(db, group: oldGroup, version: crash["version"], crashID: crash["id"]) }
            if let newGroup {
                let reopened = try Self.join(db, group: newGroup, crashID: crash["id"], version: version, host: crash["host"],
                                             received: crash["received_ms"])
                try Self.recordGroupEvents(db, appID: appID, change: GroupChange(groupID: newGroup, created: created, reopened: reopened),
                                           crashID: crash["id"], version: version, received: crash["received_ms"], now: now,
                                           spike: spike)
            }
        }
        let missingIDs = result.missing.map(\.buildID)
        try db.run("""
            UPDATE crash SET state = ?, failure = ?, format = ?, signal = ?, signature = ?, title = ?, group_id = ?,
                             report = ?, symbolicated_ms = ?, missing_build_ids = ?, version = ?, grouping = ?
            WHERE seq = ?
            """, [result.state.rawValue, result.failure, result.format, result.signal, result.signature,
                             result.title, newGroup, result.report.map { Data($0) },
                             result.state == .done ? now : nil, missingJSON, version, result.grouping.map { Data($0) }, seq])
        try db.run("DELETE FROM crash_missing WHERE crash_seq = ?", [seq])
        let insert = try db.cachedStatement(sql: """
            INSERT OR IGNORE INTO crash_missing (app_id, build_id, crash_seq, module) VALUES (?, ?, ?, ?)
            """)
        for module in result.missing { try insert.execute(arguments: [appID, module.buildID, seq, module.name]) }
        try Self.recordMissingNames(db, seq: seq, appID: appID, version: version, names: result.missingNames)

        // Symbols that arrived while this job ran re-armed it: run again instead of ending.
        try db.run("DELETE FROM crash_job WHERE crash_seq = ? AND again = 0", [seq])
        try db.run("UPDATE crash_job SET lease_until_ms = 0, again = 0 WHERE crash_seq = ?", [seq])
        // Build-ids committed while it ran but not yet linked to a job: queue now.
        if !missingIDs.isEmpty {
            let present = try Self.presentBuildIDs(db, appID: appID, buildIDs: missingIDs)
            if !present.isEmpty { try Self.enqueue(db, seq: seq, kind: .resymbolicate, now: now) }
        }
        return newGroup
    }

    /// Gives up on a job that failed `attempts` times: the crash is marked failed with `reason`.
    public func abandon(seq: Int64, reason: String) async throws {
        try await write { db in
            try db.execute(sql: "UPDATE crash SET state = 'failed', failure = ? WHERE seq = ?", arguments: [reason, seq])
            try db.execute(sql: "DELETE FROM crash_job WHERE crash_seq = ?", arguments: [seq])
        }
    }

    // MARK: Late symbols

    /// Queues re-symbolication of every crash of the app that lacked one of `buildIDs`; returns
    /// how many crashes were queued.
    @discardableResult
    public func requeue(appID: String, newBuildIDs buildIDs: [String], now: Int64) async throws -> Int {
        guard !buildIDs.isEmpty else { return 0 }
        return try await write { db in
            var seqs = Set<Int64>()
            let select = try db.cachedStatement(sql: "SELECT crash_seq FROM crash_missing WHERE app_id = ? AND build_id = ?")
            for id in buildIDs { seqs.formUnion(try Int64.fetchAll(select, arguments: [appID, id])) }
            for seq in seqs.sorted() { try Self.enqueue(db, seq: seq, kind: .resymbolicate, now: now) }
            return seqs.count
        }
    }

    /// Queues every crash whose missing build-ids have been uploaded since (run at startup: an
    /// upload committed just before the process died may not have queued its crashes).
    @discardableResult
    public func requeueResolvable(now: Int64) async throws -> Int {
        try await write { db in
            let seqs = try Int64.fetchAll(db, sql: """
                SELECT DISTINCT m.crash_seq FROM crash_missing m
                JOIN module s ON s.app_id = m.app_id AND s.build_id = m.build_id
                """)
            for seq in seqs { try Self.enqueue(db, seq: seq, kind: .resymbolicate, now: now) }
            return seqs.count
        }
    }

    private static func presentBuildIDs(_ db: Database, appID: String, buildIDs: [String]) throws -> [String] {
        let exists = try db.cachedStatement(sql: "SELECT 1 FROM module WHERE app_id = ? AND build_id = ?")
        return try buildIDs.filter { try Bool.fetchOne(exists, arguments: [appID, $0]) == true }
    }

    /// A build-id that crashes needed and the app lacks.
    public struct MissingSymbols: Sendable, Codable, Equatable {
        public var buildID: String
        public var name: String
        public var crashes: Int

        enum CodingKeys: String, CodingKey { case buildID = "build_id", name, crashes }
    }

    /// Build-ids that stored crashes lacked and the app still lacks, most needed first.
    public func missingSeen(appID: String, limit: Int = 1000) async throws -> [MissingSymbols] {
        try await read { db in
            try Row.fetchAll(db, sql: """
                SELECT m.build_id, MIN(m.module) AS name, COUNT(*) AS crashes FROM crash_missing m
                WHERE m.app_id = ? AND NOT EXISTS (SELECT 1 FROM module s WHERE s.app_id = m.app_id AND s.build_id = m.build_id)
                GROUP BY m.build_id ORDER BY crashes DESC, m.build_id LIMIT ?
                """, arguments: [appID, limit]).map {
                MissingSymbols(buildID: $0["build_id"], name: $0["name"], crashes: $0["crashes"])
            }
        }
    }

    // MARK: Reading crashes

    /// A crash as the API shows it (the report separately, as stored JSON).
    public struct CrashSummary: Sendable, Codable, Equatable {
        public var id: String
        public var state: State
        public var received: String
        public var version: String
        public var host: String?
        /// The OS and kernel the submitter named (nil: not given).
        public var system: String?
        public var environment: String?
        public var format: String?
        public var signal: String?
        public var failure: String?
        public var signature: String?
        public var title: String?
        public var groupID: String?
        public var lastSymbolicated: String?
        public var missingBuildIDs: [String]?
        public var rawSize: Int

        enum CodingKeys: String, CodingKey {
            case id, state, received, version, host, system, environment, format, signal, failure, signature, title
            case groupID = "group_id", lastSymbolicated = "last_symbolicated", missingBuildIDs = "missing_build_ids"
            case rawSize = "raw_size"
        }

        /// Every member, absent ones as `null` (the API documents each).
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(state, forKey: .state)
            try container.encode(received, forKey: .received)
            try container.encode(version, forKey: .version)
            try container.encode(host, forKey: .host)
            try container.encode(system, forKey: .system)
            try container.encode(environment, forKey: .environment)
            try container.encode(format, forKey: .format)
            try container.encode(signal, forKey: .signal)
            try container.encode(failure, forKey: .failure)
            try container.encode(signature, forKey: .signature)
            try container.encode(title, forKey: .title)
            try container.encode(groupID, forKey: .groupID)
            try container.encode(lastSymbolicated, forKey: .lastSymbolicated)
            try container.encode(missingBuildIDs, forKey: .missingBuildIDs)
            try container.encode(rawSize, forKey: .rawSize)
        }
    }

    /// Filters of the crash list.
    public struct CrashFilter: Sendable {
        public var groupID: String?
        public var version: String?
        public var sinceMilliseconds: Int64?
        public init(groupID: String? = nil, version: String? = nil, sinceMilliseconds: Int64? = nil) {
            self.groupID = groupID
            self.version = version
            self.sinceMilliseconds = sinceMilliseconds
        }
    }

    private static let summaryColumns = """
        seq, id, state, received_ms, version, host, system, environment, format, signal, failure, signature, title, group_id,
        symbolicated_ms, missing_build_ids, raw_size
        """

    private static func summary(_ row: Row) -> CrashSummary {
        let missing: String? = row["missing_build_ids"]
        return CrashSummary(
            id: row["id"], state: State(rawValue: row["state"]) ?? .pending, received: formatMilliseconds(row["received_ms"]),
            version: row["version"], host: row["host"], system: row["system"], environment: row["environment"], format: row["format"],
            signal: row["signal"], failure: row["failure"], signature: row["signature"], title: row["title"],
            groupID: row["group_id"], lastSymbolicated: (row["symbolicated_ms"] as Int64?).map(formatMilliseconds),
            missingBuildIDs: missing.flatMap { try? JSONDecoder().decode([String].self, from: Data($0.utf8)) },
            rawSize: row["raw_size"])
    }

    /// One page of the app's crashes, newest first, after `cursor` (from the previous page).
    public func crashes(appID: String, filter: CrashFilter, limit: Int, cursor: Int64?) async throws -> (crashes: [CrashSummary], next: Int64?) {
        try await read { db in
            var conditions = ["app_id = ?"]
            var arguments: [any DatabaseValueConvertible] = [appID]
            if let cursor { conditions.append("seq < ?"); arguments.append(cursor) }
            if let group = filter.groupID { conditions.append("group_id = ?"); arguments.append(group) }
            if let version = filter.version { conditions.append("version = ?"); arguments.append(version) }
            if let since = filter.sinceMilliseconds { conditions.append("received_ms >= ?"); arguments.append(since) }
            arguments.append(limit + 1)
            let rows = try Row.fetchAll(db, sql: """
                SELECT \(Self.summaryColumns) FROM crash WHERE \(conditions.joined(separator: " AND "))
                ORDER BY seq DESC LIMIT ?
                """, arguments: StatementArguments(arguments))
            let page = rows.prefix(limit)
            let next: Int64? = rows.count > limit ? page.last.map { $0["seq"] } : nil
            return (page.map(Self.summary), next)
        }
    }

    /// One crash with its symbolicated report (JSON bytes; nil until processed).
    public func crash(appID: String, id: String) async throws -> (summary: CrashSummary, report: [UInt8]?) {
        try await read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT \(Self.summaryColumns), report FROM crash WHERE app_id = ? AND id = ?",
                                             arguments: [appID, id]) else {
                throw StoreError.notFound("no crash \(id)")
            }
            let report: Data? = row["report"]
            return (Self.summary(row), report.map { Array($0) })
        }
    }

    /// Where the raw bytes of a crash are.
    public func rawObject(appID: String, id: String) async throws -> RawLocation {
        try await read { db in
            guard let row = try Row.fetchOne(db, sql: """
                SELECT raw_sha256, raw_size, raw_pack, raw_offset FROM crash WHERE app_id = ? AND id = ?
                """, arguments: [appID, id]) else {
                throw StoreError.notFound("no crash \(id)")
            }
            return RawLocation(sha256: row["raw_sha256"], size: row["raw_size"], pack: row["raw_pack"], offset: row["raw_offset"] ?? 0)
        }
    }

    /// Deletes a crash (its group's count drops by one); returns the object holding its raw bytes
    /// (a single object or a pack) when no other crash names it, for the caller to remove after
    /// the commit.
    public func deleteCrash(appID: String, id: String) async throws -> String? {
        try await write { db in
            guard let row = try Row.fetchOne(db, sql: """
                SELECT seq, COALESCE(raw_pack, raw_sha256) AS raw, group_id, version FROM crash WHERE app_id = ? AND id = ?
                """, arguments: [appID, id]) else {
                throw StoreError.notFound("no crash \(id)")
            }
            if let group: String = row["group_id"] { try Self.leave(db, group: group, version: row["version"], crashID: id) }
            return try Self.delete(db, seqs: [row["seq"]], objects: [row["raw"]], erase: true).first
        }
    }

    /// Deletes up to `limit` crashes received before `cutoff` (group counts stay); returns how
    /// many were deleted and the raw objects no crash references any more.
    public func expireCrashes(receivedBefore cutoff: Int64, limit: Int) async throws -> (deleted: Int, objects: [String]) {
        try await write { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT seq, COALESCE(raw_pack, raw_sha256) AS raw FROM crash WHERE received_ms < ? ORDER BY received_ms LIMIT ?
                """, arguments: [cutoff, limit])
            let objects = try Self.delete(db, seqs: rows.map { $0["seq"] }, objects: Set(rows.map { $0["raw"] as String }), erase: false)
            return (rows.count, objects)
        }
    }

    /// Deletes crashes `seqs`; returns which of `objects` no crash names any more. The bytes
    /// they leave in packs that other crashes keep are noted for compaction (`erase`: deleted by
    /// request, rewritten on the next pass whatever their share).
    private static func delete(_ db: Database, seqs: [Int64], objects: Set<String>, erase: Bool) throws -> [String] {
        let packed = try db.cachedStatement(sql: "SELECT raw_pack, raw_size FROM crash WHERE seq = ? AND raw_pack IS NOT NULL")
        var dead: [String: Int64] = [:]
        for seq in seqs {
            if let row = try Row.fetchOne(packed, arguments: [seq]) { dead[row["raw_pack"], default: 0] += row["raw_size"] }
        }
        for table in ["crash_missing", "crash_missing_name", "crash_job", "crash_idempotency"] {

            let statement = try db.cachedStatement(sql: "DELETE FROM \(table) WHERE crash_seq = ?")
            for seq in seqs { try statement.execute(arguments: [seq]) }
        }
        let grouped = try db.cachedStatement(sql: "SELECT group_id, id FROM crash WHERE seq = ? AND group_id IS NOT NULL")
        let leaving = try seqs.compactMap { try Row.fetchOne(grouped, arguments: [$0]) }
            .map { (group: $0["group_id"] as String, crash: $0["id"] as String) }
        let statement = try db.cachedStatement(sql: "DELETE FROM crash WHERE seq = ?")
        for seq in seqs { try statement.execute(arguments: [seq]) }
        // The groups keep their counts, but not a sample that no longer exists.
        for (group, crash) in leaving { try replaceSample(db, group: group, crashID: crash) }
        // A pack stays while any crash names it; a member's SHA-256 keeps a single object of the
        // same name too (harmless: it is one only when some crash stored those bytes alone).
        let referenced = try db.cachedStatement(sql: """
            SELECT 1 WHERE EXISTS (SELECT 1 FROM crash WHERE raw_sha256 = ?1) OR EXISTS (SELECT 1 FROM crash WHERE raw_pack = ?1)
            """)
        let freed = try objects.sorted().filter { try Bool.fetchOne(referenced, arguments: [$0]) != true }
        try noteDeadBytes(db, dead.filter { !freed.contains($0.key) }, erase: erase)
        try forgetDeadBytes(db, packs: freed)
        return freed
    }

    /// A table of the app: the object holding it and its size.
    public func table(appID: String, buildID: String) async throws -> (sha256: String, size: Int64)? {
        try await read { db in
            try Row.fetchOne(db, sql: "SELECT symbols_sha256, symbols_size FROM module WHERE app_id = ? AND build_id = ?",
                             arguments: [appID, buildID]).map { ($0["symbols_sha256"], $0["symbols_size"]) }
        }
    }

    /// The tables of app `appID` that a report needs, in one read: the table of each of
    /// `buildIDs` the app has (its SHA-256 by build-id), and for each of `names` (modules reported
    /// without a build-id) the tables of the app's version `version` whose module has that name.
    /// Synchronous: it runs on the calling thread (a thread-pool thread that goes on to
    /// symbolicate), so a request does not hop threads for it.
    func tablesNow(appID: String, buildIDs: Set<String>, names: Set<String>, version: String?) throws
        -> (byBuildID: [String: String], byName: [String: [(buildID: String, sha256: String)]]) {
        try readNow { db in try Self.tables(db, appID: appID, buildIDs: buildIDs, names: names, version: version) }
    }

    /// `tablesNow`'s reads, in a transaction of the caller's.
    static func tables(_ db: Database, appID: String, buildIDs: Set<String>, names: Set<String>, version: String?) throws
        -> (byBuildID: [String: String], byName: [String: [(buildID: String, sha256: String)]]) {
        var byBuildID: [String: String] = [:]
        let table = try db.cachedStatement(sql: "SELECT symbols_sha256 FROM module WHERE app_id = ? AND build_id = ?")
        for id in buildIDs {
            if let sha256 = try String.fetchOne(table, arguments: [appID, id]) { byBuildID[id] = sha256 }
        }
        var byName: [String: [(buildID: String, sha256: String)]] = [:]
        if let version, !names.isEmpty {
            let named = try db.cachedStatement(sql: """
                SELECT m.build_id, m.symbols_sha256 FROM version_module l
                JOIN module m ON m.app_id = l.app_id AND m.build_id = l.build_id
                WHERE l.app_id = ? AND l.version = ? AND m.name = ? ORDER BY m.build_id
                """)
            for name in names {
                byName[name] = try Row.fetchAll(named, arguments: [appID, version, name])
                    .map { ($0["build_id"], $0["symbols_sha256"]) }
            }
        }
        return (byBuildID, byName)
    }

    // MARK: Plumbing

    func read<T: Sendable>(_ body: @Sendable @escaping (Database) throws -> T) async throws -> T {
        do {
            return try await database.read(body)
        } catch let error as StoreError {
            throw error
        } catch let error as DatabaseError {
            throw Self.storeError(error)
        }
    }

    /// `read`, on the calling thread (never call it from an event loop or a cooperative thread).
    func readNow<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try database.read(body)
        } catch let error as StoreError {
            throw error
        } catch let error as DatabaseError {
            throw Self.storeError(error)
        }
    }

    func write<T: Sendable>(_ body: @Sendable @escaping (Database) throws -> T) async throws -> T {
        do {
            return try await database.write(body)
        } catch let error as StoreError {
            throw error
        } catch let error as DatabaseError {
            throw Self.storeError(error)
        }
    }

    /// `write` committed without waiting for the disk (`synchronous = NORMAL` for this one
    /// transaction; the connection is FULL again before any other write runs on it): for work
    /// that a restart redoes when a power loss takes the commit back (leases, processing
    /// outcomes, whose jobs stay until their commit survives). A process crash (kill -9) loses
    /// nothing either way: the commit is in the OS's cache. The next synced commit, or a
    /// checkpoint, makes it durable too.
    func writeUnsynced<T: Sendable>(_ body: @Sendable @escaping (Database) throws -> T) async throws -> T {
        do {
            return try await database.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                var result: T?
                do {
                    try db.inTransaction(.immediate) {
                        result = try body(db)
                        return .commit
                    }
                } catch {
                    try db.execute(sql: "PRAGMA synchronous = FULL")
                    throw error
                }
                try db.execute(sql: "PRAGMA synchronous = FULL")
                return result!
            }
        } catch let error as StoreError {
            throw error
        } catch let error as DatabaseError {
            throw Self.storeError(error)
        }
    }

    static func storeError(_ error: DatabaseError) -> StoreError {
        switch error.resultCode {
        case .SQLITE_CORRUPT, .SQLITE_NOTADB: .corrupt(error.message ?? "\(error)")
        case .SQLITE_CONSTRAINT: .conflict(error.message ?? "\(error)")
        default: .unavailable(error.message ?? "\(error)")
        }
    }

    static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for _ in 0..<bytes {
            let byte = UInt8.random(in: 0...255, using: &generator)
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// Milliseconds since 1970 as RFC 3339 UTC with milliseconds.
func formatMilliseconds(_ milliseconds: Int64) -> String {
    Date(timeIntervalSince1970: Double(milliseconds) / 1000).formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
}

/// The current time in milliseconds since 1970.
extension Database {
    /// Runs one statement through the connection's statement cache: ingestion and processing run
    /// the same statements thousands of times a second, and compiling each anew (SQLite's parser
    /// and GRDB's authorizer) took a tenth of processing's CPU, on the one writer connection.
    func run(_ sql: String, _ arguments: StatementArguments = StatementArguments()) throws {
        try cachedStatement(sql: sql).execute(arguments: arguments)
    }
}

func currentMilliseconds() -> Int64 {
    Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
}
