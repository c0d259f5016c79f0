import Foundation
import GRDB

/// Webhooks and their outbox (docs/webhooks.md). A notification is a `webhook_delivery` row
/// per subscribed webhook, written in the transaction that changed the group, so that a crash
/// acknowledged and processed always gets its notifications, whenever the process dies.
extension CrashStore {
    /// Registers the webhook tables' migration (after the crash tables').
    static func registerWebhookMigrations(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v3-webhooks") { db in
            try db.execute(sql: """
                CREATE TABLE webhook (
                    id TEXT PRIMARY KEY NOT NULL, app_id TEXT NOT NULL, url TEXT NOT NULL, events TEXT NOT NULL,
                    secret TEXT, format TEXT NOT NULL, created_ms INTEGER NOT NULL);
                CREATE INDEX webhook_by_app ON webhook(app_id);
                CREATE TABLE webhook_delivery (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, webhook_id TEXT NOT NULL,
                    app_id TEXT NOT NULL, event TEXT NOT NULL, group_id TEXT NOT NULL, payload TEXT NOT NULL,
                    created_ms INTEGER NOT NULL, state TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0,
                    next_attempt_ms INTEGER NOT NULL, last_attempt_ms INTEGER, last_status INTEGER, last_error TEXT,
                    last_latency_ms INTEGER, delivered_ms INTEGER);
                CREATE INDEX webhook_delivery_due ON webhook_delivery(state, next_attempt_ms);
                CREATE INDEX webhook_delivery_by_webhook ON webhook_delivery(webhook_id, seq);
                CREATE TABLE crash_group_minute (
                    group_id TEXT NOT NULL, minute INTEGER NOT NULL, count INTEGER NOT NULL,
                    PRIMARY KEY (group_id, minute)) WITHOUT ROWID;
                CREATE TABLE crash_group_spike (group_id TEXT PRIMARY KEY NOT NULL, notified_ms INTEGER NOT NULL);
                """)
        }
    }

    /// A claim per delivery (`claimDelivery`), so that one node sends it while others skip it.
    static func registerDeliveryClaimMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v5-webhook-delivery-claims") { db in
            try db.execute(sql: "ALTER TABLE webhook_delivery ADD COLUMN claimed_until_ms INTEGER NOT NULL DEFAULT 0")
        }
    }

    // MARK: Webhooks

    /// Stores a validated webhook (`Webhook.New.validated`) of an existing app.
    public func addWebhook(_ new: Webhook.New) async throws -> Webhook {
        let now = currentMilliseconds()
        let id = Self.randomHex(bytes: 8)
        try await write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM app WHERE id = ?", arguments: [new.appID]) == true else {
                throw StoreError.notFound("no app \(new.appID)")
            }
            try db.execute(sql: """
                INSERT INTO webhook (id, app_id, url, events, secret, format, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?)
                """, arguments: [id, new.appID, new.url, new.events.map(\.rawValue).joined(separator: ","), new.secret,
                                 new.format.rawValue, now])
        }
        return Webhook(id: id, appID: new.appID, url: new.url, events: new.events, format: new.format,
                       hasSecret: new.secret != nil, created: formatMilliseconds(now))
    }

    /// The app's webhooks, oldest first (never their secrets).
    public func webhooks(appID: String) async throws -> [Webhook] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM webhook WHERE app_id = ? ORDER BY created_ms, id", arguments: [appID])
                .map(Self.webhook)
        }
    }

    /// Deletes a webhook and its deliveries (pending ones are not sent).
    public func removeWebhook(appID: String, id: String) async throws {
        try await write { db in
            try db.execute(sql: "DELETE FROM webhook WHERE app_id = ? AND id = ?", arguments: [appID, id])
            guard db.changesCount > 0 else { throw StoreError.notFound("no webhook \(id)") }
            try db.execute(sql: "DELETE FROM webhook_delivery WHERE webhook_id = ?", arguments: [id])
        }
    }

    private static func webhook(_ row: Row) -> Webhook {
        let events: String = row["events"]
        return Webhook(id: row["id"], appID: row["app_id"], url: row["url"],
                       events: events.split(separator: ",").compactMap { Webhook.Event(rawValue: String($0)) },
                       format: Webhook.Format(rawValue: row["format"]) ?? .json, hasSecret: (row["secret"] as String?) != nil,
                       created: formatMilliseconds(row["created_ms"]))
    }

    // MARK: Deliveries

    /// Where a delivery stands.
    public enum DeliveryState: String, Sendable, Codable {
        /// Not sent yet, or waiting for its next attempt.
        case pending
        /// A 2xx answer came.
        case delivered
        /// Given up: a 4xx answer, or 24 hours of failed attempts.
        case failed
    }

    /// A delivery as `GET …/webhooks/{id}/deliveries` shows it.
    public struct Delivery: Sendable, Codable, Equatable {
        public var id: String
        public var event: Webhook.Event
        public var groupID: String
        public var state: DeliveryState
        public var attempts: Int
        public var created: String
        public var lastAttempt: String?
        public var lastStatus: Int?
        public var lastError: String?
        public var lastLatencyMilliseconds: Int?
        public var nextAttempt: String?
        public var delivered: String?

        enum CodingKeys: String, CodingKey {
            case id, event, state, attempts, created, delivered
            case groupID = "group_id", lastAttempt = "last_attempt", lastStatus = "last_status", lastError = "last_error"
            case lastLatencyMilliseconds = "last_latency_ms", nextAttempt = "next_attempt"
        }

        /// Every member, absent ones as `null`.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(event, forKey: .event)
            try container.encode(groupID, forKey: .groupID)
            try container.encode(state, forKey: .state)
            try container.encode(attempts, forKey: .attempts)
            try container.encode(created, forKey: .created)
            try container.encode(lastAttempt, forKey: .lastAttempt)
            try container.encode(lastStatus, forKey: .lastStatus)
            try container.encode(lastError, forKey: .lastError)
            try container.encode(lastLatencyMilliseconds, forKey: .lastLatencyMilliseconds)
            try container.encode(nextAttempt, forKey: .nextAttempt)
            try container.encode(delivered, forKey: .delivered)
        }
    }

    /// The newest deliveries of a webhook of the app, newest first.
    public func deliveries(appID: String, webhookID: String, limit: Int) async throws -> [Delivery] {
        try await read { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM webhook WHERE app_id = ? AND id = ?", arguments: [appID, webhookID]) == true else {
                throw StoreError.notFound("no webhook \(webhookID)")
            }
            return try Row.fetchAll(db, sql: """
                SELECT * FROM webhook_delivery WHERE webhook_id = ? ORDER BY seq DESC LIMIT ?
                """, arguments: [webhookID, limit]).map { row in
                let state = DeliveryState(rawValue: row["state"]) ?? .pending
                return Delivery(
                    id: row["id"], event: Webhook.Event(rawValue: row["event"]) ?? .groupNew, groupID: row["group_id"], state: state,
                    attempts: row["attempts"], created: formatMilliseconds(row["created_ms"]),
                    lastAttempt: (row["last_attempt_ms"] as Int64?).map(formatMilliseconds), lastStatus: row["last_status"],
                    lastError: row["last_error"], lastLatencyMilliseconds: row["last_latency_ms"],
                    nextAttempt: state == .pending ? formatMilliseconds(row["next_attempt_ms"]) : nil,
                    delivered: (row["delivered_ms"] as Int64?).map(formatMilliseconds))
            }
        }
    }

    /// A delivery due now, with what sending it needs.
    public struct DueDelivery: Sendable {
        var seq: Int64
        var id: String
        var webhookID: String
        var url: String
        var secret: String?
        var format: Webhook.Format
        var event: Webhook.Event
        var payload: String
        var attempts: Int
        var createdMilliseconds: Int64
    }

    /// Up to `limit` pending deliveries whose time has come, oldest first, skipping webhooks in
    /// `busy` (they are being delivered to).
    public func dueDeliveries(now: Int64, limit: Int, busy: Set<String>) async throws -> [DueDelivery] {
        try await read { db in
            let excluded = busy.sorted()
            let placeholders = excluded.isEmpty ? "" : " AND d.webhook_id NOT IN (\(Array(repeating: "?", count: excluded.count).joined(separator: ",")))"
            var arguments: [any DatabaseValueConvertible] = [now]
            arguments.append(contentsOf: excluded)
            arguments.append(limit)
            return try Row.fetchAll(db, sql: """
                SELECT d.seq, d.id, d.webhook_id, d.event, d.payload, d.attempts, d.created_ms, w.url, w.secret, w.format
                FROM webhook_delivery d JOIN webhook w ON w.id = d.webhook_id
                WHERE d.state = 'pending' AND d.next_attempt_ms <= ?1 AND d.claimed_until_ms <= ?1\(placeholders)
                ORDER BY d.seq LIMIT ?
                """, arguments: StatementArguments(arguments)).map { row in
                DueDelivery(seq: row["seq"], id: row["id"], webhookID: row["webhook_id"], url: row["url"], secret: row["secret"],
                            format: Webhook.Format(rawValue: row["format"]) ?? .json,
                            event: Webhook.Event(rawValue: row["event"]) ?? .groupNew, payload: row["payload"],
                            attempts: row["attempts"], createdMilliseconds: row["created_ms"])
            }
        }
    }

    /// Takes pending delivery `seq` for one attempt until `until`; false when another attempt
    /// holds it (another node) or it is no longer pending.
    public func claimDelivery(seq: Int64, now: Int64, until: Int64) async throws -> Bool {
        try await write { db in
            try db.execute(sql: """
                UPDATE webhook_delivery SET claimed_until_ms = ? WHERE seq = ? AND state = 'pending' AND claimed_until_ms <= ?
                """, arguments: [until, seq, now])
            return db.changesCount == 1
        }
    }

    /// Frees every claim: at startup no attempt is in flight (one process owns an embedded store).
    public func releaseDeliveryClaims() async throws {
        try await write { db in try db.execute(sql: "UPDATE webhook_delivery SET claimed_until_ms = 0 WHERE claimed_until_ms > 0") }
    }

    /// The outcome of one attempt.
    public struct DeliveryAttempt: Sendable {
        var at: Int64
        var status: Int?
        var error: String?
        var latencyMilliseconds: Int64
        /// The new state; `pending` with `nextAttempt` for a retry.
        var state: DeliveryState
        var nextAttempt: Int64
    }

    /// Records an attempt of delivery `seq`.
    public func recordAttempt(seq: Int64, _ attempt: DeliveryAttempt) async throws {
        try await write { db in
            try db.execute(sql: """
                UPDATE webhook_delivery SET attempts = attempts + 1, last_attempt_ms = ?, last_status = ?, last_error = ?,
                    last_latency_ms = ?, state = ?, next_attempt_ms = ?, delivered_ms = ?, claimed_until_ms = 0
                WHERE seq = ?
                """, arguments: [attempt.at, attempt.status, attempt.error.map { String($0.prefix(500)) }, attempt.latencyMilliseconds,
                                 attempt.state.rawValue, attempt.nextAttempt, attempt.state == .delivered ? attempt.at : nil, seq])
        }
    }

    /// Deletes deliveries that ended (delivered or failed) before `cutoff`.
    public func expireDeliveries(before cutoff: Int64) async throws {
        try await write { db in
            try db.execute(sql: "DELETE FROM webhook_delivery WHERE state != 'pending' AND created_ms < ?", arguments: [cutoff])
        }
    }

    // MARK: Events

    /// The spike rule (`--spike-factor`, `--spike-min`).
    public struct SpikeRule: Sendable {
        var factor: Double
        var minimum: Int

        public init(factor: Double = 5, minimum: Int = 20) {
            self.factor = factor
            self.minimum = minimum
        }
    }

    /// What counting a crash into a group did to it.
    struct GroupChange: Sendable {
        var groupID: String
        var created: Bool
        var reopened: Bool
    }

    static let minutesKept: Int64 = 7 * 1440 + 60

    /// Counts the crash into the group's minute buckets and, in the same transaction, queues the
    /// notifications the change calls for, one delivery per subscribed webhook of the app.
    static func recordGroupEvents(_ db: Database, appID: String, change: GroupChange, crashID: String, version: String,
                                  received: Int64, now: Int64, spike rule: SpikeRule) throws {
        let minute = received / 60_000
        try db.run("""
            INSERT INTO crash_group_minute (group_id, minute, count) VALUES (?, ?, 1)
            ON CONFLICT (group_id, minute) DO UPDATE SET count = count + 1
            """, [change.groupID, minute])
        try db.run("DELETE FROM crash_group_minute WHERE group_id = ? AND minute < ?", [change.groupID, minute - minutesKept])
        let hooks = try Row.fetchAll(db.cachedStatement(sql: "SELECT id, events FROM webhook WHERE app_id = ?"), arguments: [appID])
            .map { (id: $0["id"] as String, events: Set(($0["events"] as String).split(separator: ",").map(String.init))) }
        guard !hooks.isEmpty else { return }
        func wanted(_ event: Webhook.Event) -> Bool { hooks.contains { $0.events.contains(event.rawValue) } }
        var events: [(Webhook.Event, lastHour: Int?, average: Double?)] = []
        if change.created && wanted(.groupNew) { events.append((.groupNew, nil, nil)) }
        if change.reopened && wanted(.regression) { events.append((.regression, nil, nil)) }
        if wanted(.spike), let spike = try spikeReached(db, group: change.groupID, minute: minute, received: received, rule: rule) {
            events.append((.spike, spike.lastHour, spike.average))
        }
        guard !events.isEmpty,
              let row = try Row.fetchOne(db, sql: "SELECT * FROM crash_group WHERE id = ?", arguments: [change.groupID]) else { return }
        let group = try groupSummary(db, row)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let insert = try db.cachedStatement(sql: """
            INSERT INTO webhook_delivery (id, webhook_id, app_id, event, group_id, payload, created_ms, next_attempt_ms)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for (event, lastHour, average) in events {
            let snapshot = WebhookEvent(event: event, appID: appID, group: group, crashID: crashID, version: version,
                                        created: formatMilliseconds(now), lastHour: lastHour, hourlyAverage: average)
            let payload = String(decoding: try encoder.encode(snapshot), as: UTF8.self)
            for hook in hooks where hook.events.contains(event.rawValue) {
                try insert.execute(arguments: [randomHex(bytes: 16), hook.id, appID, event.rawValue, change.groupID, payload, now, now])
            }
        }
    }

    /// The spike numbers when the group's last hour (up to `received`) reaches the rule and no
    /// spike was noticed in the hour before; the notice is recorded. Ignored groups never spike.
    private static func spikeReached(_ db: Database, group: String, minute: Int64, received: Int64,
                                     rule: SpikeRule) throws -> (lastHour: Int, average: Double)? {
        let lastHour = try Int.fetchOne(db, sql: """
            SELECT coalesce(SUM(count), 0) FROM crash_group_minute WHERE group_id = ? AND minute > ? AND minute <= ?
            """, arguments: [group, minute - 60, minute]) ?? 0
        guard lastHour >= rule.minimum else { return nil }
        if let notified = try Int64.fetchOne(db, sql: "SELECT notified_ms FROM crash_group_spike WHERE group_id = ?", arguments: [group]),
           received - notified < 3_600_000 {
            return nil
        }
        guard try String.fetchOne(db, sql: "SELECT state FROM crash_group WHERE id = ?", arguments: [group]) != GroupState.ignored.rawValue else {
            return nil
        }
        let before = try Int.fetchOne(db, sql: """
            SELECT coalesce(SUM(count), 0) FROM crash_group_minute WHERE group_id = ? AND minute > ? AND minute <= ?
            """, arguments: [group, minute - minutesKept, minute - 60]) ?? 0
        let average = Double(before) / (7 * 24)
        guard Double(lastHour) >= rule.factor * average else { return nil }
        try db.execute(sql: """
            INSERT INTO crash_group_spike (group_id, notified_ms) VALUES (?, ?)
            ON CONFLICT (group_id) DO UPDATE SET notified_ms = excluded.notified_ms
            """, arguments: [group, received])
        return (lastHour, average)
    }
}
