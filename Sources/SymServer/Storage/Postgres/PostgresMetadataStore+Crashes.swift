import Foundation
import NIOCore
import NIOPosix
import PostgresNIO

/// Crashes, jobs and groups on PostgreSQL (the SQLite twin: CrashStore.swift, CrashStore+Groups.swift).
extension PostgresMetadataStore {
    // MARK: Ingestion

    /// A crash with an idempotency key is a transaction of its own (the key serialises requests);
    /// the others are committed together with those of concurrent requests (`PostgresIngestBatcher`).
    public func accept(_ crash: CrashStore.NewCrash) async throws -> CrashStore.Receipt {
        guard crash.idempotencyKey == nil else {
            return try await transaction { db in try await Self.insert(db, crash).receipt }
        }
        let item = PostgresIngestBatcher.Item(id: CrashStore.randomHex(bytes: 16), crash: crash)
        return try await ingestBatcher.accept(item) { [self] items in try await insert(items) }
    }

    /// Inserts `items` (crashes without idempotency keys), their jobs and the notification of
    /// idle workers in one statement, which commits or fails as a whole. Errors are PostgreSQL's.
    func insert(_ items: [PostgresIngestBatcher.Item]) async throws {
        let crashes = items.map(\.crash)
        let ids = items.map(\.id), apps = crashes.map(\.appID), received = crashes.map(\.receivedMilliseconds)
        let versions = crashes.map { $0.version ?? "unknown" }, given = crashes.map { $0.version != nil }
        let hosts = NullableTextArray(elements: crashes.map(\.host)), systems = NullableTextArray(elements: crashes.map(\.system))
        let environments = NullableTextArray(elements: crashes.map(\.environment))
        let formats = NullableTextArray(elements: crashes.map(\.inputFormat))
        let raws = crashes.map(\.rawSHA256), sizes = crashes.map { Int64($0.rawSize) }
        let packs = NullableTextArray(elements: crashes.map(\.rawPack)), offsets = crashes.map(\.rawOffset)
        let kind = CrashStore.Job.Kind.process
        let query: PostgresQuery = """
            WITH new AS (
                INSERT INTO crash (id, app_id, received_ms, version, version_given, host, system, environment, input_format,
                                   raw_sha256, raw_size, raw_pack, raw_offset, state)
                SELECT id, app_id, received_ms, version, version_given, host, system, environment, input_format, raw_sha256, raw_size,
                       raw_pack, CASE WHEN raw_pack IS NULL THEN NULL ELSE raw_offset END, 'pending'
                FROM unnest(\(ids)::text[], \(apps)::text[], \(received)::bigint[], \(versions)::text[], \(given)::bool[], \(hosts),
                            \(systems), \(environments), \(formats), \(raws)::text[], \(sizes)::bigint[], \(packs), \(offsets)::bigint[])
                     AS n(id, app_id, received_ms, version, version_given, host, system, environment, input_format, raw_sha256, raw_size,
                          raw_pack, raw_offset)
                RETURNING seq, received_ms),
            queued AS (
                INSERT INTO crash_job (crash_seq, kind, priority, created_ms)
                SELECT seq, \(kind.rawValue), \(kind.priority), received_ms FROM new RETURNING crash_seq)
            SELECT pg_notify('crashsym_jobs', '') WHERE EXISTS (SELECT 1 FROM queued)
            """
        let (client, logger) = (client, logger)
        _ = try await bounded {
            try await client.withConnection { connection in
                try await connection.query(query, logger: logger).collect().count
            }
        }
    }

    /// `accept` inside a transaction: the receipt, and the new crash's seq (nil when the
    /// idempotency key answered an earlier crash).
    static func insert(_ db: Transaction, _ crash: CrashStore.NewCrash) async throws -> (receipt: CrashStore.Receipt, seq: Int64?) {
        if let key = crash.idempotencyKey {
            // Serialises requests with the same key (the second waits for the first's commit).
            try await db.rows("SELECT pg_advisory_xact_lock(hashtext(\(crash.appID)), hashtext(\(key)))")
            if let row = try await db.rows("""
                SELECT c.id, c.state, c.group_id FROM crash_idempotency k JOIN crash c ON c.seq = k.crash_seq
                WHERE k.app_id = \(crash.appID) AND k.key = \(key)
                """).first {
                let (id, state, group) = try row.decode((String, String, String?).self)
                return (CrashStore.Receipt(id: id, state: CrashStore.State(rawValue: state) ?? .pending, groupID: group, replayed: true), nil)
            }
        }
        let id = CrashStore.randomHex(bytes: 16)
        let rawSize = Int64(crash.rawSize), rawOffset: Int64? = crash.rawPack == nil ? nil : crash.rawOffset
        let seq = try await db.rows("""
            INSERT INTO crash (id, app_id, received_ms, version, version_given, host, system, environment, input_format,
                               raw_sha256, raw_size, raw_pack, raw_offset, state)
            VALUES (\(id), \(crash.appID), \(crash.receivedMilliseconds), \(crash.version ?? "unknown"), \(crash.version != nil),
                    \(crash.host), \(crash.system), \(crash.environment), \(crash.inputFormat), \(crash.rawSHA256), \(rawSize),
                    \(crash.rawPack), \(rawOffset), 'pending')
            RETURNING seq
            """)[0].decode(Int64.self)
        try await Self.enqueue(db, seq: seq, kind: .process, now: crash.receivedMilliseconds)
        if let key = crash.idempotencyKey {
            try await db.rows("INSERT INTO crash_idempotency (app_id, key, crash_seq) VALUES (\(crash.appID), \(key), \(seq))")
        }
        return (CrashStore.Receipt(id: id, state: .pending, groupID: nil, replayed: false), seq)
    }

    // MARK: Minidumps (the SQLite twin: CrashStore+Minidumps.swift)

    public func acceptMinidump(_ crash: CrashStore.NewCrash, details: CrashStore.MinidumpDetails) async throws -> CrashStore.Receipt {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let annotations = String(decoding: try encoder.encode(details.annotations), as: UTF8.self)
        let attachments = String(decoding: try encoder.encode(details.attachments), as: UTF8.self)
        return try await transaction { db in
            let (receipt, seq) = try await Self.insert(db, crash)
            if let seq {
                try await db.rows("""
                    INSERT INTO crash_minidump (crash_seq, product, annotations, attachments, version_note)
                    VALUES (\(seq), \(details.product), \(annotations), \(attachments), \(details.versionNote))
                    """)
                for attachment in details.attachments {
                    try await db.rows("""
                        INSERT INTO crash_attachment (crash_seq, sha256) VALUES (\(seq), \(attachment.sha256)) ON CONFLICT DO NOTHING
                        """)
                }
            }
            return receipt
        }
    }

    public func minidumpDetails(appID: String, id: String) async throws -> CrashStore.MinidumpDetails? {
        guard let row = try await rows("""
            SELECT m.product, m.annotations, m.attachments, m.version_note FROM crash c JOIN crash_minidump m ON m.crash_seq = c.seq
            WHERE c.app_id = \(appID) AND c.id = \(id)
            """).first else { return nil }
        let (product, annotationText, attachmentText, versionNote) = try row.decode((String?, String, String, String?).self)
        let decoder = JSONDecoder()
        let annotations = try? decoder.decode([String: String].self, from: Data(annotationText.utf8))
        let attachments = try? decoder.decode([CrashStore.MinidumpAttachment].self, from: Data(attachmentText.utf8))
        return CrashStore.MinidumpDetails(product: product, annotations: annotations ?? [:], attachments: attachments ?? [],
                                          versionNote: versionNote)
    }

    public func collectOrphanAttachments() async throws -> [String] {
        try await transaction { db in
            let orphans = try await db.rows("""
                DELETE FROM crash_attachment a WHERE NOT EXISTS (SELECT 1 FROM crash c WHERE c.seq = a.crash_seq)
                RETURNING a.sha256
                """).map { try $0.decode(String.self) }
            return try await Self.unused(db, Set(orphans).sorted())
        }
    }

    public func referencedObjects() async throws -> Set<String> {
        Set(try await rows("""
            SELECT symbols_sha256 FROM module
            UNION SELECT debug_sha256 FROM module WHERE debug_sha256 IS NOT NULL
            UNION SELECT raw_sha256 FROM crash
            UNION SELECT raw_pack FROM crash WHERE raw_pack IS NOT NULL
            UNION SELECT sha256 FROM crash_attachment
            """).map { try $0.decode(String.self) })
    }

    /// Each check and removal is a transaction that first takes SHARE locks on the tables whose
    /// rows name objects: an insert or update of them (ROW EXCLUSIVE) waits until the removal is
    /// done, on every node, and the lock waits for those already running to commit.
    public func removeUnusedObjects(_ candidates: [String], using remove: @escaping @Sendable (String) throws -> Bool) async throws -> [String] {
        var removed: [String] = []
        for sha256 in candidates {
            let gone = try await transaction { db in
                try await db.rows("LOCK TABLE module, crash, crash_attachment IN SHARE MODE")
                guard try await !Self.unused(db, [sha256]).isEmpty else { return false }
                return try await NIOThreadPool.singleton.runIfActive { try remove(sha256) }
            }
            if gone { removed.append(sha256) }
        }
        return removed
    }

    /// Those of `candidates` that no row names: neither a crash's raw bytes nor an attachment,
    /// nor a module's table or debug file.
    static func unused(_ db: Transaction, _ candidates: [String]) async throws -> [String] {
        guard !candidates.isEmpty else { return [] }
        let used = Set(try await db.rows("""
            SELECT sha256 FROM crash_attachment WHERE sha256 = ANY(\(candidates))
            UNION SELECT raw_sha256 FROM crash WHERE raw_sha256 = ANY(\(candidates))
            UNION SELECT raw_pack FROM crash WHERE raw_pack = ANY(\(candidates))
            UNION SELECT symbols_sha256 FROM module WHERE symbols_sha256 = ANY(\(candidates))
            UNION SELECT debug_sha256 FROM module WHERE debug_sha256 = ANY(\(candidates))
            """).map { try $0.decode(String.self) })
        return candidates.filter { !used.contains($0) }
    }

    /// Adds (or re-arms) the job of crash `seq`, and wakes idle workers of every node at commit.
    static func enqueue(_ db: Transaction, seq: Int64, kind: CrashStore.Job.Kind, now: Int64) async throws {
        let priority = kind.priority
        try await db.rows("""
            INSERT INTO crash_job (crash_seq, kind, priority, created_ms) VALUES (\(seq), \(kind.rawValue), \(priority), \(now))
            ON CONFLICT (crash_seq) DO UPDATE SET again = TRUE
            """)
        try await db.rows("SELECT pg_notify('crashsym_jobs', '')")
    }

    // MARK: Jobs

    /// Leases belong to the nodes that took them until they expire: nothing to free here.
    public func releaseAllLeases() async throws {}

    public func leaseJobs(limit: Int, now: Int64, lease: Int64) async throws -> [CrashStore.Job] {
        let until = now + lease
        return try await transaction { db in
            try await db.rows("""
                WITH picked AS (
                    SELECT crash_seq FROM crash_job WHERE lease_until_ms <= \(now)
                    ORDER BY priority, crash_seq LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                UPDATE crash_job j SET lease_until_ms = \(until), attempts = j.attempts + 1, again = FALSE
                FROM picked WHERE j.crash_seq = picked.crash_seq
                RETURNING j.crash_seq, j.kind, j.attempts, j.priority
                """).map { row -> (CrashStore.Job, Int) in
                let (seq, kind, attempts, priority) = try row.decode((Int64, String, Int, Int).self)
                return (CrashStore.Job(seq: seq, kind: CrashStore.Job.Kind(rawValue: kind) ?? .process, attempts: attempts), priority)
            }
            .sorted { ($0.1, $0.0.seq) < ($1.1, $1.0.seq) }.map(\.0)
        }
    }

    public func renewLeases(seqs: [Int64], now: Int64, lease: Int64) async throws {
        guard !seqs.isEmpty else { return }
        let until = now + lease
        _ = try await rows("UPDATE crash_job SET lease_until_ms = \(until) WHERE crash_seq = ANY(\(seqs)) AND lease_until_ms > 0")
    }

    public func pendingJobCount() async throws -> Int {
        try await rows("SELECT COUNT(*) FROM crash_job")[0].decode(Int.self)
    }

    public func processingInputs(seqs: [Int64]) async throws -> [Int64: CrashStore.ProcessingInput] {
        var inputs: [Int64: CrashStore.ProcessingInput] = [:]
        for row in try await rows("""
            SELECT seq, id, app_id, version, version_given, input_format, raw_sha256, raw_size, raw_pack, raw_offset
            FROM crash WHERE seq = ANY(\(seqs))
            """) {
            let (seq, id, app, version, given, format, raw, size, pack, offset)
                = try row.decode((Int64, String, String, String, Bool, String?, String, Int64, String?, Int64?).self)
            inputs[seq] = CrashStore.ProcessingInput(seq: seq, id: id, appID: app, version: version, versionGiven: given,
                                                     inputFormat: format, rawSHA256: raw, rawSize: Int(size), rawPack: pack,
                                                     rawOffset: offset ?? 0)
        }
        let gone = seqs.filter { inputs[$0] == nil }
        if !gone.isEmpty { _ = try await rows("DELETE FROM crash_job WHERE crash_seq = ANY(\(gone))") }
        return inputs
    }

    public func finish(_ outcomes: [(seq: Int64, result: CrashStore.ProcessingResult)], now: Int64, spike: CrashStore.SpikeRule)
        async throws -> [String?] {
        try await transaction { db in
            // The batch's crash rows in one round trip, locked in seq order (FOR UPDATE: a node
            // that finishes the same crash after an expired lease waits, then sees the group this
            // one set, so counters move once); the apps' webhooks once.
            let seqs = outcomes.map(\.seq)
            var crashes: [Int64: FinishingCrash] = [:]
            for row in try await db.rows("""
                SELECT seq, id, app_id, version, version_given, host, received_ms, group_id FROM crash
                WHERE seq = ANY(\(seqs)) ORDER BY seq FOR UPDATE
                """) {
                let (seq, id, app, version, given, host, received, group) =
                    try row.decode((Int64, String, String, String, Bool, String?, Int64, String?).self)
                crashes[seq] = FinishingCrash(id: id, appID: app, version: version, versionGiven: given, host: host,
                                              received: received, group: group)
            }
            var hooks: [String: [(id: String, events: Set<String>)]] = [:]
            for app in Set(crashes.values.map(\.appID)) { hooks[app] = try await Self.webhooks(db, appID: app) }
            var groups: [String?] = []
            var moves: [GroupMove] = []
            for outcome in outcomes {
                guard let crash = crashes[outcome.seq] else {
                    try await db.rows("DELETE FROM crash_job WHERE crash_seq = \(outcome.seq)")
                    groups.append(nil)
                    continue
                }
                groups.append(try await Self.finish(db, seq: outcome.seq, crash: crash, result: outcome.result, now: now,
                                                    moves: &moves))
            }
            try await Self.apply(db, moves, now: now, spike: spike, hooks: hooks)
            return groups
        }
    }

    /// A crash leaving or joining a group: what `finish` changes in the group's counters, applied
    /// at the end of the batch.
    struct GroupMove {
        enum Kind { case leave, join(created: Bool) }
        var kind: Kind
        var group: String
        var appID: String
        var crashID: String
        var version: String
        var host: String?
        var received: Int64
    }

    /// Applies a batch's group moves in group-id order (the order of a group's own moves kept).
    ///
    /// The group, version and minute rows are where concurrent batches meet (a crash storm of one
    /// bug sends every node's crashes to one group row), and an updated row stays locked until the
    /// commit: applied last, the hot row is locked for the batch's last statements instead of from
    /// its first crash on; applied in one order by every batch, two batches lock their groups in
    /// the same order and cannot deadlock on them.
    static func apply(_ db: Transaction, _ moves: [GroupMove], now: Int64, spike: CrashStore.SpikeRule,
                      hooks: [String: [(id: String, events: Set<String>)]]) async throws {
        let ordered = moves.enumerated().sorted { ($0.element.group, $0.offset) < ($1.element.group, $1.offset) }.map(\.element)
        for move in ordered {
            switch move.kind {
            case .leave:
                try await leave(db, group: move.group, version: move.version, crashID: move.crashID)
            case .join(let created):
                let reopened = try await join(db, group: move.group, crashID: move.crashID, version: move.version, host: move.host,
                                              received: move.received)
                try await recordGroupEvents(db, appID: move.appID, change: CrashStore.GroupChange(groupID: move.group, created: created,
                                                                                                  reopened: reopened),
                                            crashID: move.crashID, version: move.version, received: move.received, now: now,
                                            spike: spike, hooks: hooks[move.appID] ?? [])
            }
        }
    }

    /// What `finish` reads of a crash before recording its outcome.
    struct FinishingCrash {
        var id: String
        var appID: String
        var version: String
        var versionGiven: Bool
        var host: String?
        var received: Int64
        var group: String?
    }

    /// Records one crash's outcome; its group moves are appended to `moves` for `apply`.
    private static func finish(_ db: Transaction, seq: Int64, crash: FinishingCrash, result: CrashStore.ProcessingResult, now: Int64,
                               moves: inout [GroupMove]) async throws -> String? {
        let (crashID, appID, storedVersion, received, oldGroup) = (crash.id, crash.appID, crash.version, crash.received, crash.group)
        var version = storedVersion
        if !crash.versionGiven, let stated = result.reportVersion, !stated.isEmpty { version = String(stated.prefix(128)) }
        var newGroup: String?
        var created = false
        if result.state == .done, let signature = result.signature {
            (newGroup, created) = try await group(db, appID: appID, signature: signature, title: result.title ?? signature, now: now)
        }
        if oldGroup != newGroup {
            if let oldGroup {
                moves.append(GroupMove(kind: .leave, group: oldGroup, appID: appID, crashID: crashID, version: storedVersion,
                                       host: crash.host, received: received))
            }
            if let newGroup {
                moves.append(GroupMove(kind: .join(created: created), group: newGroup, appID: appID, crashID: crashID, version: version,
                                       host: crash.host, received: received))
            }
        }
        let missingIDs = result.missing.map(\.buildID)
        let missingJSON = String(decoding: try JSONEncoder().encode(missingIDs), as: UTF8.self)
        let report = result.report.map { ByteBuffer(bytes: $0) }
        let symbolicated: Int64? = result.state == .done ? now : nil
        // The crash's missing build-ids and names are replaced: the old ones go in the same statement.
        try await db.rows("""
            WITH old_missing AS (DELETE FROM crash_missing WHERE crash_seq = \(seq)),
                 old_names AS (DELETE FROM crash_missing_name WHERE crash_seq = \(seq))
            UPDATE crash SET state = \(result.state.rawValue), failure = \(result.failure), format = \(result.format),
                signal = \(result.signal), signature = \(result.signature), title = \(result.title), group_id = \(newGroup),
                report = \(report), symbolicated_ms = \(symbolicated), missing_build_ids = \(missingJSON), version = \(version),
                grouping = \(result.grouping.map { ByteBuffer(bytes: $0) })
            WHERE seq = \(seq)
            """)
        if !result.missing.isEmpty {
            let names = result.missing.map(\.name)
            try await db.rows("""
                INSERT INTO crash_missing (app_id, build_id, crash_seq, module)
                SELECT \(appID), id, \(seq), name FROM unnest(\(missingIDs)::text[], \(names)::text[]) AS m(id, name)
                ON CONFLICT DO NOTHING
                """)
        }
        try await recordMissingNames(db, seq: seq, appID: appID, version: version, names: result.missingNames, now: now, replacing: false)
        // Symbols that arrived while this job ran re-armed it: run again instead of ending (the
        // two statements touch disjoint rows: `again` false, `again` true).
        try await db.rows("""
            WITH ended AS (DELETE FROM crash_job WHERE crash_seq = \(seq) AND NOT again)
            UPDATE crash_job SET lease_until_ms = 0, again = FALSE WHERE crash_seq = \(seq) AND again
            """)
        if !missingIDs.isEmpty,
           try await db.exists("SELECT 1 FROM module WHERE app_id = \(appID) AND build_id = ANY(\(missingIDs)) LIMIT 1") {
            try await enqueue(db, seq: seq, kind: .resymbolicate, now: now)
        }
        return newGroup
    }

    public func abandon(seq: Int64, reason: String) async throws {
        try await transaction { db in
            try await db.rows("UPDATE crash SET state = 'failed', failure = \(reason) WHERE seq = \(seq)")
            try await db.rows("DELETE FROM crash_job WHERE crash_seq = \(seq)")
        }
    }

    @discardableResult
    public func requeue(appID: String, newBuildIDs buildIDs: [String], now: Int64) async throws -> Int {
        guard !buildIDs.isEmpty else { return 0 }
        return try await transaction { db in
            let seqs = Set(try await db.rows("""
                SELECT crash_seq FROM crash_missing WHERE app_id = \(appID) AND build_id = ANY(\(buildIDs))
                """).map { try $0.decode(Int64.self) })
            for seq in seqs.sorted() { try await Self.enqueue(db, seq: seq, kind: .resymbolicate, now: now) }
            return seqs.count
        }
    }

    @discardableResult
    public func requeueResolvable(now: Int64) async throws -> Int {
        try await transaction { db in
            let seqs = try await db.rows("""
                SELECT DISTINCT m.crash_seq FROM crash_missing m JOIN module s ON s.app_id = m.app_id AND s.build_id = m.build_id
                """).map { try $0.decode(Int64.self) }
            for seq in seqs { try await Self.enqueue(db, seq: seq, kind: .resymbolicate, now: now) }
            return seqs.count
        }
    }

    public func requestResymbolication(appID: String, id: String, now: Int64) async throws -> Bool {
        try await transaction { db in
            guard let row = try await db.rows("SELECT seq FROM crash WHERE app_id = \(appID) AND id = \(id)").first else { return false }
            try await Self.enqueue(db, seq: try row.decode(Int64.self), kind: .resymbolicate, now: now)
            return true
        }
    }

    // MARK: Reading and deleting crashes

    public func missingSeen(appID: String, limit: Int) async throws -> [CrashStore.MissingSymbols] {
        try await rows("""
            SELECT m.build_id, MIN(m.module COLLATE "C"), COUNT(*) AS crashes FROM crash_missing m
            WHERE m.app_id = \(appID) AND NOT EXISTS (SELECT 1 FROM module s WHERE s.app_id = m.app_id AND s.build_id = m.build_id)
            GROUP BY m.build_id ORDER BY crashes DESC, m.build_id COLLATE "C" LIMIT \(limit)
            """).map {
            let (id, name, crashes) = try $0.decode((String, String, Int).self)
            return CrashStore.MissingSymbols(buildID: id, name: name, crashes: crashes)
        }
    }

    private static let summaryColumns = """
        seq, id, state, received_ms, version, host, system, environment, format, signal, failure, signature, title, group_id,
        symbolicated_ms, missing_build_ids, raw_size
        """

    private static func summary(_ row: PostgresRow) throws -> (seq: Int64, summary: CrashStore.CrashSummary) {
        let columns = row.makeRandomAccess()
        func text(_ name: String) throws -> String? { try columns[name].decode(String?.self) }
        let missing = try text("missing_build_ids")
        let summary = CrashStore.CrashSummary(
            id: try columns["id"].decode(String.self), state: CrashStore.State(rawValue: try text("state") ?? "") ?? .pending,
            received: formatMilliseconds(try columns["received_ms"].decode(Int64.self)), version: try text("version") ?? "",
            host: try text("host"), system: try text("system"), environment: try text("environment"), format: try text("format"), signal: try text("signal"),
            failure: try text("failure"), signature: try text("signature"), title: try text("title"), groupID: try text("group_id"),
            lastSymbolicated: try columns["symbolicated_ms"].decode(Int64?.self).map(formatMilliseconds),
            missingBuildIDs: missing.flatMap { try? JSONDecoder().decode([String].self, from: Data($0.utf8)) },
            rawSize: Int(try columns["raw_size"].decode(Int64.self)))
        return (try columns["seq"].decode(Int64.self), summary)
    }

    public func crashes(appID: String, filter: CrashStore.CrashFilter, limit: Int, cursor: Int64?) async throws
        -> (crashes: [CrashStore.CrashSummary], next: Int64?) {
        var binds = PostgresBindings()
        var conditions: [String] = []
        func condition(_ sql: String, _ value: some PostgresEncodable & Sendable) throws {
            try binds.append(value)
            conditions.append(sql.replacingOccurrences(of: "?", with: "$\(binds.count)"))
        }
        try condition("app_id = ?", appID)
        if let cursor { try condition("seq < ?", cursor) }
        if let group = filter.groupID { try condition("group_id = ?", group) }
        if let version = filter.version { try condition("version = ?", version) }
        if let since = filter.sinceMilliseconds { try condition("received_ms >= ?", since) }
        try binds.append(limit + 1)
        let found = try await rows(PostgresQuery(unsafeSQL: """
            SELECT \(Self.summaryColumns) FROM crash WHERE \(conditions.joined(separator: " AND ")) ORDER BY seq DESC LIMIT $\(binds.count)
            """, binds: binds)).map(Self.summary)
        let page = found.prefix(limit)
        return (page.map(\.summary), found.count > limit ? page.last?.seq : nil)
    }

    public func crash(appID: String, id: String) async throws -> (summary: CrashStore.CrashSummary, report: [UInt8]?) {
        guard let row = try await rows(PostgresQuery(unsafeSQL: """
            SELECT \(Self.summaryColumns), report FROM crash WHERE app_id = $1 AND id = $2
            """, binds: try Self.binds(appID, id))).first else {
            throw StoreError.notFound("no crash \(id)")
        }
        let report = try row.makeRandomAccess()["report"].decode(ByteBuffer?.self)
        return (try Self.summary(row).summary, Self.bytes(report))
    }

    static func binds(_ values: String...) throws -> PostgresBindings {
        var binds = PostgresBindings()
        for value in values { try binds.append(value) }
        return binds
    }

    public func rawObject(appID: String, id: String) async throws -> CrashStore.RawLocation {
        guard let row = try await rows("""
            SELECT raw_sha256, raw_size, raw_pack, raw_offset FROM crash WHERE app_id = \(appID) AND id = \(id)
            """).first else {
            throw StoreError.notFound("no crash \(id)")
        }
        let (sha256, size, pack, offset) = try row.decode((String, Int64, String?, Int64?).self)
        return CrashStore.RawLocation(sha256: sha256, size: Int(size), pack: pack, offset: offset ?? 0)
    }

    public func deleteCrash(appID: String, id: String) async throws -> String? {
        try await transaction { db in
            guard let row = try await db.rows("""
                SELECT seq, COALESCE(raw_pack, raw_sha256), group_id, version FROM crash WHERE app_id = \(appID) AND id = \(id) FOR UPDATE
                """).first else {
                throw StoreError.notFound("no crash \(id)")
            }
            let (seq, raw, group, version) = try row.decode((Int64, String, String?, String).self)
            if let group { try await Self.leave(db, group: group, version: version, crashID: id) }
            return try await Self.delete(db, seqs: [seq], objects: [raw], erase: true).first
        }
    }

    public func expireCrashes(receivedBefore cutoff: Int64, limit: Int) async throws -> (deleted: Int, objects: [String]) {
        try await transaction { db in
            let found = try await db.rows("""
                SELECT seq, COALESCE(raw_pack, raw_sha256) FROM crash WHERE received_ms < \(cutoff) ORDER BY received_ms LIMIT \(limit)
                FOR UPDATE SKIP LOCKED
                """).map { try $0.decode((Int64, String).self) }
            let objects = try await Self.delete(db, seqs: found.map(\.0), objects: Set(found.map(\.1)), erase: false)
            return (found.count, objects)
        }
    }

    /// Deletes crashes `seqs`; returns which of `objects` no crash names any more, and notes the
    /// bytes left in packs that other crashes keep for compaction (CrashStore.delete).
    private static func delete(_ db: Transaction, seqs: [Int64], objects: Set<String>, erase: Bool) async throws -> [String] {
        let dead = try await db.rows("""
            SELECT raw_pack, SUM(raw_size)::BIGINT FROM crash WHERE seq = ANY(\(seqs)) AND raw_pack IS NOT NULL GROUP BY raw_pack
            """).map { try $0.decode((String, Int64).self) }
        for table in ["crash_missing", "crash_missing_name", "crash_job", "crash_idempotency"] {
            try await db.rows(PostgresQuery(unsafeSQL: "DELETE FROM \(table) WHERE crash_seq = ANY($1)", binds: {
                var binds = PostgresBindings()
                try binds.append(seqs)
                return binds
            }()))
        }
        let leaving = try await db.rows("DELETE FROM crash WHERE seq = ANY(\(seqs)) RETURNING group_id, id")
            .map { try $0.decode((String?, String).self) }
        for (group, crash) in leaving {
            if let group { try await replaceSample(db, group: group, crashID: crash) }
        }
        let sorted = objects.sorted()
        // A pack stays while any crash names it (CrashStore.delete).
        let referenced = Set(try await db.rows("""
            SELECT raw_sha256 FROM crash WHERE raw_sha256 = ANY(\(sorted)) UNION SELECT raw_pack FROM crash WHERE raw_pack = ANY(\(sorted))
            """).map { try $0.decode(String.self) })
        let freed = sorted.filter { !referenced.contains($0) }
        try await noteDeadBytes(db, dead.filter { !freed.contains($0.0) }, erase: erase)
        if !freed.isEmpty { try await db.rows("DELETE FROM crash_pack_dead WHERE pack = ANY(\(freed))") }
        return freed
    }

    // MARK: Groups

    static func group(_ db: Transaction, appID: String, signature: String, title: String, now: Int64) async throws
        -> (id: String, created: Bool) {
        // A group that exists is read without locking its row (an upsert's DO UPDATE would lock
        // the hottest row of a crash storm for the rest of the transaction); a new one is inserted,
        // and one inserted meanwhile by another transaction (DO NOTHING waits for its commit) is
        // read again: each statement sees the rows committed before it.
        let existing = "SELECT id FROM crash_group WHERE app_id = \(appID) AND signature = \(signature)" as PostgresQuery
        if let row = try await db.rows(existing).first { return (try row.decode(String.self), false) }
        let id = CrashStore.randomHex(bytes: 8)
        let title = String(title.prefix(512))
        if try await db.exists("""
            INSERT INTO crash_group (id, app_id, signature, title, first_seen_ms, last_seen_ms)
            VALUES (\(id), \(appID), \(signature), \(title), \(now), \(now))
            ON CONFLICT (app_id, signature) DO NOTHING RETURNING id
            """) {
            return (id, true)
        }
        guard let row = try await db.rows(existing).first else {
            throw StoreError.unavailable("the group of signature \(signature) was neither found nor created; retry")
        }
        return (try row.decode(String.self), false)
    }

    static func join(_ db: Transaction, group: String, crashID: String, version: String, host: String?, received: Int64) async throws
        -> Bool {
        guard let row = try await db.rows("""
            UPDATE crash_group SET count = count + 1,
                first_seen_ms = CASE WHEN count = 0 THEN \(received) ELSE least(first_seen_ms, \(received)) END,
                last_seen_ms = CASE WHEN count = 0 THEN \(received) ELSE greatest(last_seen_ms, \(received)) END,
                sample_crash_id = coalesce(sample_crash_id, \(crashID))
            WHERE id = \(group) RETURNING state, resolved_in
            """).first else { return false }
        let (state, resolvedIn) = try row.decode((String, String?).self)
        var reopened = false
        if state == CrashStore.GroupState.resolved.rawValue, VersionOrder.ascending(resolvedIn ?? "", version) {
            try await db.rows("UPDATE crash_group SET state = 'open', reopened_in = \(version) WHERE id = \(group)")
            reopened = true
        }
        try await db.rows("""
            WITH host AS (INSERT INTO crash_group_host (group_id, host) SELECT \(group), \(host)::text WHERE \(host)::text IS NOT NULL
                          ON CONFLICT DO NOTHING)
            INSERT INTO crash_group_version (group_id, version, count) VALUES (\(group), \(version), 1)
            ON CONFLICT (group_id, version) DO UPDATE SET count = crash_group_version.count + 1
            """)
        return reopened
    }

    static func leave(_ db: Transaction, group: String, version: String, crashID: String) async throws {
        try await db.rows("UPDATE crash_group SET count = greatest(count - 1, 0) WHERE id = \(group)")
        try await db.rows("""
            UPDATE crash_group_version SET count = greatest(count - 1, 0) WHERE group_id = \(group) AND version = \(version)
            """)
        try await replaceSample(db, group: group, crashID: crashID)
    }

    static func replaceSample(_ db: Transaction, group: String, crashID: String) async throws {
        try await db.rows("""
            UPDATE crash_group SET sample_crash_id =
                (SELECT id FROM crash WHERE group_id = \(group) AND id <> \(crashID) ORDER BY seq DESC LIMIT 1)
            WHERE id = \(group) AND sample_crash_id = \(crashID)
            """)
    }

    /// A group row (`groupColumns`) with its versions and host count, read through `db` (the
    /// store, or a transaction that changed the group).
    static func groupSummary(_ db: some RowSource, _ row: PostgresRow) async throws -> CrashStore.GroupSummary {
        let columns = row.makeRandomAccess()
        let id = try columns["id"].decode(String.self)
        let extra = try await db.rows("""
            SELECT (SELECT array_agg(version) FROM crash_group_version WHERE group_id = \(id) AND count > 0),
                   (SELECT COUNT(*) FROM crash_group_host WHERE group_id = \(id))
            """)
        let (versions, hosts) = try extra[0].decode(([String]?, Int).self)
        return CrashStore.GroupSummary(
            id: id, signature: try columns["signature"].decode(String.self), title: try columns["title"].decode(String.self),
            count: Int(try columns["count"].decode(Int64.self)),
            firstSeen: formatMilliseconds(try columns["first_seen_ms"].decode(Int64.self)),
            lastSeen: formatMilliseconds(try columns["last_seen_ms"].decode(Int64.self)),
            versions: (versions ?? []).sorted(by: VersionOrder.ascending), hosts: hosts,
            sampleCrashID: try columns["sample_crash_id"].decode(String?.self),
            state: CrashStore.GroupState(rawValue: try columns["state"].decode(String.self)) ?? .open,
            resolvedIn: try columns["resolved_in"].decode(String?.self), reopenedIn: try columns["reopened_in"].decode(String?.self))
    }

    static let groupColumns = "g.id, g.signature, g.title, g.count, g.first_seen_ms, g.last_seen_ms, g.sample_crash_id, g.state, g.resolved_in, g.reopened_in"

    public func groups(appID: String, version: String?, sinceMilliseconds: Int64?, order: CrashStore.GroupOrder, limit: Int)
        async throws -> [CrashStore.GroupSummary] {
        var query = CrashStore.GroupQuery()
        query.version = version
        query.sinceMilliseconds = sinceMilliseconds
        query.order = order
        return try await groupRows(appID: appID, query: query, limit: limit, versionCounted: false)
    }

    /// The groups of `groups` and `groupPage` (the API's list counts a version with any row in
    /// `crash_group_version`, the console's only one with crashes left).
    func groupRows(appID: String, query: CrashStore.GroupQuery, limit: Int, versionCounted: Bool) async throws -> [CrashStore.GroupSummary] {
        var binds = PostgresBindings()
        var conditions = ["g.count > 0"]
        func condition(_ sql: String, _ values: [any PostgresThrowingDynamicTypeEncodable]) throws {
            var text = sql
            for value in values {
                try binds.append(value)
                text = text.replacingOccurrences(of: "?#", with: "$\(binds.count)", options: [], range: text.range(of: "?#"))
            }
            conditions.append(text)
        }
        try condition("g.app_id = ?#", [appID])
        if let version = query.version {
            try condition("EXISTS (SELECT 1 FROM crash_group_version v WHERE v.group_id = g.id AND v.version = ?#"
                + (versionCounted ? " AND v.count > 0)" : ")"), [version])
        }
        if let state = query.state { try condition("g.state = ?#", [state.rawValue]) }
        if let since = query.sinceMilliseconds { try condition("g.last_seen_ms >= ?#", [since]) }
        if let text = query.text?.trimmingCharacters(in: .whitespaces), !text.isEmpty {
            let pattern = "%" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
                .replacingOccurrences(of: "_", with: "\\_") + "%"
            // SQLite's LIKE is case-insensitive for ASCII: ILIKE here.
            try condition("(g.signature ILIKE ?# ESCAPE '\\' OR g.title ILIKE ?# ESCAPE '\\')", [pattern, pattern])
        }
        if let cursor = query.cursor.flatMap(GroupCursor.init(text:)) {
            let count = Int64(cursor.count)
            switch query.order {
            case .count:
                try condition("(g.count < ?# OR (g.count = ?# AND (g.last_seen_ms < ?# OR (g.last_seen_ms = ?# AND g.id COLLATE \"C\" > ?#))))",
                              [count, count, cursor.lastSeen, cursor.lastSeen, cursor.id])
            case .lastSeen:
                try condition("(g.last_seen_ms < ?# OR (g.last_seen_ms = ?# AND (g.count < ?# OR (g.count = ?# AND g.id COLLATE \"C\" > ?#))))",
                              [cursor.lastSeen, cursor.lastSeen, count, count, cursor.id])
            }
        }
        let orderBy = query.order == .count ? "g.count DESC, g.last_seen_ms DESC" : "g.last_seen_ms DESC, g.count DESC"
        try binds.append(limit)
        let found = try await rows(PostgresQuery(unsafeSQL: """
            SELECT \(Self.groupColumns) FROM crash_group g WHERE \(conditions.joined(separator: " AND "))
            ORDER BY \(orderBy), g.id COLLATE "C" LIMIT $\(binds.count)
            """, binds: binds))
        var groups: [CrashStore.GroupSummary] = []
        for row in found { groups.append(try await Self.groupSummary(self, row)) }
        return groups
    }

    public func group(appID: String, id: String) async throws -> CrashStore.GroupSummary {
        guard let row = try await rows("""
            SELECT \(unescaped: Self.groupColumns) FROM crash_group g WHERE g.app_id = \(appID) AND g.id = \(id)
            """).first else {
            throw StoreError.notFound("no group \(id)")
        }
        return try await Self.groupSummary(self, row)
    }

    public func setGroupState(appID: String, id: String, state: CrashStore.GroupState) async throws -> CrashStore.GroupSummary {
        try await transaction { db in
            guard try await db.exists("SELECT 1 FROM crash_group WHERE app_id = \(appID) AND id = \(id) FOR UPDATE") else {
                throw StoreError.notFound("no group \(id)")
            }
            let versions = try await db.rows("SELECT version FROM crash_group_version WHERE group_id = \(id)").map { try $0.decode(String.self) }
            let newest = state == .resolved ? versions.max(by: VersionOrder.ascending) : nil
            try await db.rows("UPDATE crash_group SET state = \(state.rawValue), resolved_in = \(newest), reopened_in = NULL WHERE id = \(id)")
            let row = try await db.rows("SELECT \(unescaped: Self.groupColumns) FROM crash_group g WHERE g.id = \(id)")[0]
            return try await Self.groupSummary(db, row)
        }
    }

    public func groupingRules(appID: String) async throws -> String? {
        try await rows("SELECT rules FROM grouping_rules WHERE app_id = \(appID)").first.map { try $0.decode(String.self) }
    }
}
