import Foundation
import HummingbirdBcrypt
import NIOPosix
import PostgresNIO

/// Webhooks, people and the console's reads on PostgreSQL (the SQLite twins:
/// CrashStore+Webhooks.swift, CrashStore+Users.swift, CrashStore+Console.swift).
extension PostgresMetadataStore {
    // MARK: Group events (in `finish`'s transaction)

    static func recordGroupEvents(_ db: Transaction, appID: String, change: CrashStore.GroupChange, crashID: String, version: String,
                                  received: Int64, now: Int64, spike rule: CrashStore.SpikeRule,
                                  hooks: [(id: String, events: Set<String>)]? = nil) async throws {
        let minute = received / 60_000
        let oldest = minute - CrashStore.minutesKept
        try await db.rows("""
            WITH old AS (DELETE FROM crash_group_minute WHERE group_id = \(change.groupID) AND minute < \(oldest))
            INSERT INTO crash_group_minute (group_id, minute, count) VALUES (\(change.groupID), \(minute), 1)
            ON CONFLICT (group_id, minute) DO UPDATE SET count = crash_group_minute.count + 1
            """)
        let hooks = if let hooks { hooks } else { try await webhooks(db, appID: appID) }
        guard !hooks.isEmpty else { return }
        func wanted(_ event: Webhook.Event) -> Bool { hooks.contains { $0.events.contains(event.rawValue) } }
        var events: [(Webhook.Event, lastHour: Int?, average: Double?)] = []
        if change.created && wanted(.groupNew) { events.append((.groupNew, nil, nil)) }
        if change.reopened && wanted(.regression) { events.append((.regression, nil, nil)) }
        if wanted(.spike), let spike = try await spikeReached(db, group: change.groupID, minute: minute, received: received, rule: rule) {
            events.append((.spike, spike.lastHour, spike.average))
        }
        guard !events.isEmpty,
              let row = try await db.rows("SELECT \(unescaped: groupColumns) FROM crash_group g WHERE g.id = \(change.groupID)").first
        else { return }
        let group = try await groupSummary(db, row)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        for (event, lastHour, average) in events {
            let snapshot = WebhookEvent(event: event, appID: appID, group: group, crashID: crashID, version: version,
                                        created: formatMilliseconds(now), lastHour: lastHour, hourlyAverage: average)
            let payload = String(decoding: try encoder.encode(snapshot), as: UTF8.self)
            for hook in hooks where hook.events.contains(event.rawValue) {
                try await db.rows("""
                    INSERT INTO webhook_delivery (id, webhook_id, app_id, event, group_id, payload, created_ms, next_attempt_ms)
                    VALUES (\(CrashStore.randomHex(bytes: 16)), \(hook.id), \(appID), \(event.rawValue), \(change.groupID), \(payload),
                            \(now), \(now))
                    """)
            }
        }
    }

    /// The app's webhooks with the events each wants (read once per `finish` batch).
    static func webhooks(_ db: Transaction, appID: String) async throws -> [(id: String, events: Set<String>)] {
        try await db.rows("SELECT id, events FROM webhook WHERE app_id = \(appID)").map { row in
            let (id, events) = try row.decode((String, String).self)
            return (id: id, events: Set(events.split(separator: ",").map(String.init)))
        }
    }

    private static func spikeReached(_ db: Transaction, group: String, minute: Int64, received: Int64,
                                     rule: CrashStore.SpikeRule) async throws -> (lastHour: Int, average: Double)? {
        let hourStart = minute - 60
        let lastHour = try await db.rows("""
            SELECT coalesce(SUM(count), 0)::bigint FROM crash_group_minute WHERE group_id = \(group) AND minute > \(hourStart) AND minute <= \(minute)
            """)[0].decode(Int.self)
        guard lastHour >= rule.minimum else { return nil }
        if let notified = try await db.rows("SELECT notified_ms FROM crash_group_spike WHERE group_id = \(group)").first,
           received - (try notified.decode(Int64.self)) < 3_600_000 {
            return nil
        }
        let state = try await db.rows("SELECT state FROM crash_group WHERE id = \(group)").first.map { try $0.decode(String.self) }
        guard state != CrashStore.GroupState.ignored.rawValue else { return nil }
        let weekStart = minute - CrashStore.minutesKept
        let before = try await db.rows("""
            SELECT coalesce(SUM(count), 0)::bigint FROM crash_group_minute WHERE group_id = \(group) AND minute > \(weekStart) AND minute <= \(hourStart)
            """)[0].decode(Int.self)
        let average = Double(before) / (7 * 24)
        guard Double(lastHour) >= rule.factor * average else { return nil }
        try await db.rows("""
            INSERT INTO crash_group_spike (group_id, notified_ms) VALUES (\(group), \(received))
            ON CONFLICT (group_id) DO UPDATE SET notified_ms = excluded.notified_ms
            """)
        return (lastHour, average)
    }

    // MARK: Webhooks

    public func addWebhook(_ new: Webhook.New) async throws -> Webhook {
        let now = currentMilliseconds()
        let id = CrashStore.randomHex(bytes: 8)
        let events = new.events.map(\.rawValue).joined(separator: ",")
        try await transaction { db in
            guard try await db.exists("SELECT 1 FROM app WHERE id = \(new.appID)") else { throw StoreError.notFound("no app \(new.appID)") }
            try await db.rows("""
                INSERT INTO webhook (id, app_id, url, events, secret, format, created_ms)
                VALUES (\(id), \(new.appID), \(new.url), \(events), \(new.secret), \(new.format.rawValue), \(now))
                """)
        }
        return Webhook(id: id, appID: new.appID, url: new.url, events: new.events, format: new.format, hasSecret: new.secret != nil,
                       created: formatMilliseconds(now))
    }

    public func webhooks(appID: String) async throws -> [Webhook] {
        try await rows("""
            SELECT id, app_id, url, events, secret IS NOT NULL, format, created_ms FROM webhook WHERE app_id = \(appID)
            ORDER BY created_ms, id COLLATE "C"
            """).map { row in
            let (id, app, url, events, secret, format, created) = try row.decode((String, String, String, String, Bool, String, Int64).self)
            return Webhook(id: id, appID: app, url: url, events: events.split(separator: ",").compactMap { Webhook.Event(rawValue: String($0)) },
                           format: Webhook.Format(rawValue: format) ?? .json, hasSecret: secret, created: formatMilliseconds(created))
        }
    }

    public func removeWebhook(appID: String, id: String) async throws {
        try await transaction { db in
            guard try await db.exists("DELETE FROM webhook WHERE app_id = \(appID) AND id = \(id) RETURNING id") else {
                throw StoreError.notFound("no webhook \(id)")
            }
            try await db.rows("DELETE FROM webhook_delivery WHERE webhook_id = \(id)")
        }
    }

    public func deliveries(appID: String, webhookID: String, limit: Int) async throws -> [CrashStore.Delivery] {
        guard try await !rows("SELECT 1 FROM webhook WHERE app_id = \(appID) AND id = \(webhookID)").isEmpty else {
            throw StoreError.notFound("no webhook \(webhookID)")
        }
        return try await rows("""
            SELECT id, event, group_id, state, attempts, created_ms, last_attempt_ms, last_status, last_error, last_latency_ms,
                   next_attempt_ms, delivered_ms
            FROM webhook_delivery WHERE webhook_id = \(webhookID) ORDER BY seq DESC LIMIT \(limit)
            """).map { row in
            let (id, event, group, stateText, attempts, created, lastAttempt, lastStatus, lastError, latency, next, delivered) =
                try row.decode((String, String, String, String, Int, Int64, Int64?, Int?, String?, Int64?, Int64, Int64?).self)
            let state = CrashStore.DeliveryState(rawValue: stateText) ?? .pending
            return CrashStore.Delivery(
                id: id, event: Webhook.Event(rawValue: event) ?? .groupNew, groupID: group, state: state, attempts: attempts,
                created: formatMilliseconds(created), lastAttempt: lastAttempt.map(formatMilliseconds), lastStatus: lastStatus,
                lastError: lastError, lastLatencyMilliseconds: latency.map { Int($0) },
                nextAttempt: state == .pending ? formatMilliseconds(next) : nil, delivered: delivered.map(formatMilliseconds))
        }
    }

    public func dueDeliveries(now: Int64, limit: Int, busy: Set<String>) async throws -> [CrashStore.DueDelivery] {
        let excluded = busy.sorted()
        return try await rows("""
            SELECT d.seq, d.id, d.webhook_id, d.event, d.payload, d.attempts, d.created_ms, w.url, w.secret, w.format
            FROM webhook_delivery d JOIN webhook w ON w.id = d.webhook_id
            WHERE d.state = 'pending' AND d.next_attempt_ms <= \(now) AND d.claimed_until_ms <= \(now)
              AND NOT (d.webhook_id = ANY(\(excluded)))
            ORDER BY d.seq LIMIT \(limit)
            """).map { row in
            let (seq, id, webhook, event, payload, attempts, created, url, secret, format) =
                try row.decode((Int64, String, String, String, String, Int, Int64, String, String?, String).self)
            return CrashStore.DueDelivery(seq: seq, id: id, webhookID: webhook, url: url, secret: secret,
                                          format: Webhook.Format(rawValue: format) ?? .json, event: Webhook.Event(rawValue: event) ?? .groupNew,
                                          payload: payload, attempts: attempts, createdMilliseconds: created)
        }
    }

    public func recordAttempt(seq: Int64, _ attempt: CrashStore.DeliveryAttempt) async throws {
        let error = attempt.error.map { String($0.prefix(500)) }
        let delivered: Int64? = attempt.state == .delivered ? attempt.at : nil
        _ = try await rows("""
            UPDATE webhook_delivery SET attempts = attempts + 1, last_attempt_ms = \(attempt.at), last_status = \(attempt.status),
                last_error = \(error), last_latency_ms = \(attempt.latencyMilliseconds), state = \(attempt.state.rawValue),
                next_attempt_ms = \(attempt.nextAttempt), delivered_ms = \(delivered), claimed_until_ms = 0
            WHERE seq = \(seq)
            """)
    }

    public func claimDelivery(seq: Int64, now: Int64, until: Int64) async throws -> Bool {
        try await !rows("""
            UPDATE webhook_delivery SET claimed_until_ms = \(until)
            WHERE seq = \(seq) AND state = 'pending' AND claimed_until_ms <= \(now) RETURNING seq
            """).isEmpty
    }

    /// Claims belong to the nodes that took them until they expire: nothing to free here.
    public func releaseDeliveryClaims() async throws {}

    public func expireDeliveries(before cutoff: Int64) async throws {
        _ = try await rows("DELETE FROM webhook_delivery WHERE state <> 'pending' AND created_ms < \(cutoff)")
    }

    // MARK: People

    public func createUser(name: String, admin: Bool) async throws -> String {
        guard CrashStore.isUserName(name) else { throw StoreError.conflict("a user name is 1 to 64 characters of [A-Za-z0-9._@-]") }
        let password = CrashStore.generatePassword()
        let hash = Bcrypt.hash(password, cost: CrashStore.bcryptCost)
        guard try await !rows("""
            INSERT INTO console_user (name, password_hash, admin, created_ms) VALUES (\(name), \(hash), \(admin), \(currentMilliseconds()))
            ON CONFLICT (name) DO NOTHING RETURNING name
            """).isEmpty else {
            throw StoreError.conflict("a user named \(name) already exists (reset its password with `crashsym users reset-password`)")
        }
        return password
    }

    public func resetPassword(name: String) async throws -> String {
        let password = CrashStore.generatePassword()
        let hash = Bcrypt.hash(password, cost: CrashStore.bcryptCost)
        try await transaction { db in
            guard try await db.exists("UPDATE console_user SET password_hash = \(hash) WHERE name = \(name) RETURNING name") else {
                throw StoreError.notFound("no user named \(name)")
            }
            try await db.rows("DELETE FROM console_session WHERE user_name = \(name)")
            try await db.rows("DELETE FROM console_signin_failure WHERE name = \(name)")
        }
        return password
    }

    public func grant(name: String, appID: String) async throws {
        try await transaction { db in
            guard try await db.exists("SELECT 1 FROM console_user WHERE name = \(name)") else { throw StoreError.notFound("no user named \(name)") }
            guard try await db.exists("SELECT 1 FROM app WHERE id = \(appID)") else { throw StoreError.notFound("no app with id \(appID)") }
            try await db.rows("INSERT INTO console_grant (user_name, app_id) VALUES (\(name), \(appID)) ON CONFLICT DO NOTHING")
        }
    }

    public func listUsers() async throws -> [CrashStore.ConsoleUser] {
        try await rows("""
            SELECT u.name, u.admin, coalesce((SELECT array_agg(g.app_id ORDER BY g.app_id COLLATE "C") FROM console_grant g
                                              WHERE g.user_name = u.name), '{}')
            FROM console_user u ORDER BY u.name COLLATE "C"
            """).map {
            let (name, admin, apps) = try $0.decode((String, Bool, [String]).self)
            return CrashStore.ConsoleUser(name: name, admin: admin, apps: apps)
        }
    }

    public func signIn(name: String, password: String, now: Int64) async throws -> CrashStore.SignInOutcome {
        let limit = CrashStore.signInFailureLimit
        let window = CrashStore.signInFailureWindowMilliseconds, lockout = CrashStore.lockoutMilliseconds
        // As on SQLite: the attempt is counted before the password is checked, in one statement.
        let counted = try await rows("""
            INSERT INTO console_signin_failure AS f (name, failures, locked_until_ms, window_start_ms) VALUES (\(name), 1, 0, \(now))
            ON CONFLICT (name) DO UPDATE SET
                failures = CASE WHEN f.window_start_ms <= \(now) - \(window) AND f.locked_until_ms <= \(now) THEN 1 ELSE f.failures + 1 END,
                window_start_ms = CASE WHEN f.window_start_ms <= \(now) - \(window) AND f.locked_until_ms <= \(now) THEN \(now)
                                       ELSE f.window_start_ms END,
                locked_until_ms = CASE WHEN f.window_start_ms <= \(now) - \(window) AND f.locked_until_ms <= \(now) THEN 0
                                       WHEN f.failures + 1 = \(limit) THEN \(now) + \(lockout) ELSE f.locked_until_ms END
            RETURNING failures, locked_until_ms
            """).first
        let attempt = try counted.map { try $0.decode((Int, Int64).self) } ?? (limit + 1, now + lockout)
        if attempt.0 > limit { return .locked(untilMilliseconds: attempt.1) }
        let user = try await rows("SELECT password_hash, admin FROM console_user WHERE name = \(name)").first
            .map { try $0.decode((String, Bool).self) }
        let hash = user?.0 ?? CrashStore.decoyHash
        let verified = try await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(password, hash: hash) }
        guard verified && user != nil else {
            return attempt.0 == limit ? .locked(untilMilliseconds: attempt.1) : .refused
        }
        let token = CrashStore.randomHex(bytes: 32), csrf = CrashStore.randomHex(bytes: 32)
        let expires = now + CrashStore.sessionMilliseconds
        let key = CrashStore.sessionKey(token)
        try await transaction { db in
            try await db.rows("DELETE FROM console_signin_failure WHERE name = \(name)")
            try await db.rows("DELETE FROM console_session WHERE expires_ms <= \(now)")
            try await db.rows("""
                INSERT INTO console_session (token_sha256, user_name, csrf, created_ms, expires_ms) VALUES (\(key), \(name), \(csrf), \(now), \(expires))
                """)
        }
        return .signedIn(token: token, session: CrashStore.ConsoleSession(user: name, admin: user?.1 ?? false, csrf: csrf))
    }

    public func session(token: String, now: Int64) async throws -> CrashStore.ConsoleSession? {
        guard token.utf8.count == 64 else { return nil }
        return try await rows("""
            SELECT s.user_name, s.csrf, u.admin FROM console_session s JOIN console_user u ON u.name = s.user_name
            WHERE s.token_sha256 = \(CrashStore.sessionKey(token)) AND s.expires_ms > \(now)
            """).first.map {
            let (user, csrf, admin) = try $0.decode((String, String, Bool).self)
            return CrashStore.ConsoleSession(user: user, admin: admin, csrf: csrf)
        }
    }

    public func signOut(token: String) async throws {
        _ = try await rows("DELETE FROM console_session WHERE token_sha256 = \(CrashStore.sessionKey(token))")
    }

    public func forgetSignInFailures(now: Int64) async throws -> Int {
        try await rows("""
            DELETE FROM console_signin_failure
            WHERE window_start_ms <= \(now - CrashStore.signInFailureWindowMilliseconds) AND locked_until_ms <= \(now)
            RETURNING name
            """).count
    }

    public func visibleApps(_ session: CrashStore.ConsoleSession) async throws -> [SymbolStore.App] {
        let query: PostgresQuery = session.admin
            ? "SELECT id, name, created FROM app ORDER BY created, id COLLATE \"C\""
            : """
              SELECT a.id, a.name, a.created FROM app a JOIN console_grant g ON g.app_id = a.id
              WHERE g.user_name = \(session.user) ORDER BY a.created, a.id COLLATE "C"
              """
        return try await rows(query).map {
            let (id, name, created) = try $0.decode((String, String, String).self)
            return SymbolStore.App(id: id, name: name, created: created)
        }
    }

    public func visibleApp(_ session: CrashStore.ConsoleSession, appID: String) async throws -> SymbolStore.App? {
        guard let row = try await rows("SELECT id, name, created FROM app WHERE id = \(appID)").first else { return nil }
        if !session.admin {
            guard try await !rows("SELECT 1 FROM console_grant WHERE user_name = \(session.user) AND app_id = \(appID)").isEmpty else {
                return nil
            }
        }
        let (id, name, created) = try row.decode((String, String, String).self)
        return SymbolStore.App(id: id, name: name, created: created)
    }

    // MARK: Console reads

    public func appOverview(appID: String, now: Int64, days: Int) async throws -> CrashStore.AppOverview {
        let day: Int64 = 86_400_000
        let today = now / day
        let first = today - Int64(days - 1)
        let firstMs = first * day
        var daily = [Int](repeating: 0, count: days)
        for row in try await rows("""
            SELECT received_ms / \(day) AS day, COUNT(*) FROM crash WHERE app_id = \(appID) AND received_ms >= \(firstMs) GROUP BY day
            """) {
            let (dayNumber, count) = try row.decode((Int64, Int).self)
            let index = Int(dayNumber - first)
            if index >= 0 && index < days { daily[index] = count }
        }
        let dayAgo = now - day, weekAgo = now - 7 * day
        let (lastDay, lastWeek, open) = try await rows("""
            SELECT (SELECT COUNT(*) FROM crash WHERE app_id = \(appID) AND received_ms >= \(dayAgo)),
                   (SELECT COUNT(*) FROM crash WHERE app_id = \(appID) AND received_ms >= \(weekAgo)),
                   (SELECT COUNT(*) FROM crash_group WHERE app_id = \(appID) AND state = 'open' AND count > 0)
            """)[0].decode((Int, Int, Int).self)
        let versions = try await rows("""
            SELECT version FROM version WHERE app_id = \(appID)
            UNION ALL
            SELECT DISTINCT v.version FROM crash_group_version v JOIN crash_group g ON g.id = v.group_id WHERE g.app_id = \(appID) AND v.count > 0
            """).map { try $0.decode(String.self) }
        let latest = versions.filter { $0 != "unknown" }.max(by: VersionOrder.ascending)
        return CrashStore.AppOverview(crashesLastDay: lastDay, crashesLastWeek: lastWeek, openGroups: open, latestVersion: latest, daily: daily)
    }

    public func groupPage(appID: String, query: CrashStore.GroupQuery, limit: Int) async throws -> CrashStore.GroupPage {
        let found = try await groupRows(appID: appID, query: query, limit: limit + 1, versionCounted: true)
        let page = Array(found.prefix(limit))
        var next: String?
        if found.count > limit, let last = page.last {
            let lastSeen = try await rows("SELECT last_seen_ms FROM crash_group WHERE id = \(last.id)")[0].decode(Int64.self)
            next = GroupCursor(count: last.count, lastSeen: lastSeen, id: last.id).text
        }
        return CrashStore.GroupPage(groups: page, next: next)
    }

    public func crashVersions(appID: String) async throws -> [String] {
        try await rows("""
            SELECT DISTINCT v.version FROM crash_group_version v JOIN crash_group g ON g.id = v.group_id WHERE g.app_id = \(appID) AND v.count > 0
            """).map { try $0.decode(String.self) }.sorted(by: VersionOrder.ascending).reversed()
    }

    public func dailyCounts(appID: String, groupID: String?, sinceMilliseconds: Int64) async throws
        -> [(day: Int64, version: String, count: Int)] {
        let day: Int64 = 86_400_000
        let query: PostgresQuery = groupID.map { group in
            """
            SELECT received_ms / \(day) AS day, version, COUNT(*) FROM crash WHERE group_id = \(group) AND app_id = \(appID)
            AND received_ms >= \(sinceMilliseconds) GROUP BY day, version
            """
        } ?? """
            SELECT received_ms / \(day) AS day, version, COUNT(*) FROM crash WHERE app_id = \(appID) AND received_ms >= \(sinceMilliseconds)
            GROUP BY day, version
            """
        return try await rows(query).map {
            let (day, version, count) = try $0.decode((Int64, String, Int).self)
            return (day, version, count)
        }
    }

    public func groupSpread(groupID: String, hostLimit: Int) async throws -> (versions: [(String, Int)], hosts: [String]) {
        let versions = try await rows("SELECT version, count FROM crash_group_version WHERE group_id = \(groupID) AND count > 0").map {
            let (version, count) = try $0.decode((String, Int64).self)
            return (version, Int(count))
        }.sorted { VersionOrder.ascending($1.0, $0.0) }
        let hosts = try await rows("""
            SELECT host FROM crash_group_host WHERE group_id = \(groupID) ORDER BY host COLLATE "C" LIMIT \(hostLimit)
            """).map { try $0.decode(String.self) }
        return (versions, hosts)
    }
}
