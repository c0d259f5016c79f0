import Foundation
import GRDB

/// What the web console's pages read: per-app overviews, a filtered and paged group list, daily
/// counts per version. Read-only; the console changes groups through `setGroupState`.
extension CrashStore {
    /// One app's line on the apps page.
    public struct AppOverview: Sendable, Equatable {
        public var crashesLastDay: Int
        public var crashesLastWeek: Int
        public var openGroups: Int
        public var latestVersion: String?
        /// Crashes per day, oldest first, ending today (UTC days).
        public var daily: [Int]
    }

    /// The overview of an app at `now`, with `days` days of daily counts.
    public func appOverview(appID: String, now: Int64, days: Int = 14) async throws -> AppOverview {
        try await read { db in
            let day: Int64 = 86_400_000
            let today = now / day
            let first = today - Int64(days - 1)
            var daily = [Int](repeating: 0, count: days)
            for row in try Row.fetchAll(db, sql: """
                SELECT received_ms / ? AS day, COUNT(*) AS n FROM crash WHERE app_id = ? AND received_ms >= ? GROUP BY day
                """, arguments: [day, appID, first * day]) {
                let index = Int((row["day"] as Int64) - first)
                if index >= 0 && index < days { daily[index] = row["n"] }
            }
            let lastDay = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM crash WHERE app_id = ? AND received_ms >= ?",
                                           arguments: [appID, now - day]) ?? 0
            let lastWeek = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM crash WHERE app_id = ? AND received_ms >= ?",
                                            arguments: [appID, now - 7 * day]) ?? 0
            let open = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM crash_group WHERE app_id = ? AND state = 'open' AND count > 0",
                                        arguments: [appID]) ?? 0
            let versions = try String.fetchAll(db, sql: "SELECT version FROM version WHERE app_id = ?", arguments: [appID])
                + String.fetchAll(db, sql: """
                    SELECT DISTINCT v.version FROM crash_group_version v JOIN crash_group g ON g.id = v.group_id
                    WHERE g.app_id = ? AND v.count > 0
                    """, arguments: [appID])
            let latest = versions.filter { $0 != "unknown" }.max(by: VersionOrder.ascending)
            return AppOverview(crashesLastDay: lastDay, crashesLastWeek: lastWeek, openGroups: open, latestVersion: latest,
                               daily: daily)
        }
    }

    /// Filters of the console's group list.
    public struct GroupQuery: Sendable, Equatable {
        public var version: String?
        public var state: GroupState?
        public var sinceMilliseconds: Int64?
        /// Words that must appear in the signature or title (case-insensitive, as typed).
        public var text: String?
        public var order: GroupOrder = .count
        /// Where the previous page ended (`GroupPage.next`).
        public var cursor: String?
        public init() {}
    }

    /// One page of groups and the cursor of the next one.
    public struct GroupPage: Sendable {
        public var groups: [GroupSummary]
        public var next: String?
    }

    /// A page of the app's groups in `query.order`, resumed after `query.cursor` (keyset paging:
    /// a page costs the same wherever it is, and crashes arriving meanwhile shift nothing).
    public func groupPage(appID: String, query: GroupQuery, limit: Int) async throws -> GroupPage {
        try await read { db in
            var conditions = ["g.app_id = ?", "g.count > 0"]
            var arguments: [any DatabaseValueConvertible] = [appID]
            if let version = query.version {
                conditions.append("EXISTS (SELECT 1 FROM crash_group_version v WHERE v.group_id = g.id AND v.version = ? AND v.count > 0)")
                arguments.append(version)
            }
            if let state = query.state { conditions.append("g.state = ?"); arguments.append(state.rawValue) }
            if let since = query.sinceMilliseconds { conditions.append("g.last_seen_ms >= ?"); arguments.append(since) }
            if let text = query.text?.trimmingCharacters(in: .whitespaces), !text.isEmpty {
                let pattern = "%" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
                    .replacingOccurrences(of: "_", with: "\\_") + "%"
                conditions.append("(g.signature LIKE ? ESCAPE '\\' OR g.title LIKE ? ESCAPE '\\')")
                arguments += [pattern, pattern]
            }
            if let cursor = query.cursor.flatMap(GroupCursor.init(text:)) {
                switch query.order {
                case .count:
                    conditions.append("(g.count < ? OR (g.count = ? AND (g.last_seen_ms < ? OR (g.last_seen_ms = ? AND g.id > ?))))")
                    arguments += [cursor.count, cursor.count, cursor.lastSeen, cursor.lastSeen, cursor.id]
                case .lastSeen:
                    conditions.append("(g.last_seen_ms < ? OR (g.last_seen_ms = ? AND (g.count < ? OR (g.count = ? AND g.id > ?))))")
                    arguments += [cursor.lastSeen, cursor.lastSeen, cursor.count, cursor.count, cursor.id]
                }
            }
            let orderBy = query.order == .count ? "g.count DESC, g.last_seen_ms DESC" : "g.last_seen_ms DESC, g.count DESC"
            arguments.append(limit + 1)
            let rows = try Row.fetchAll(db, sql: """
                SELECT g.* FROM crash_group g WHERE \(conditions.joined(separator: " AND ")) ORDER BY \(orderBy), g.id LIMIT ?
                """, arguments: StatementArguments(arguments))
            let page = Array(rows.prefix(limit))
            let next = rows.count > limit ? page.last.map {
                GroupCursor(count: $0["count"], lastSeen: $0["last_seen_ms"], id: $0["id"]).text
            } : nil
            return GroupPage(groups: try page.map { try Self.consoleGroupSummary(db, $0) }, next: next)
        }
    }

    private static func consoleGroupSummary(_ db: Database, _ row: Row) throws -> GroupSummary {
        let id: String = row["id"]
        let versions = try String.fetchAll(db, sql: "SELECT version FROM crash_group_version WHERE group_id = ? AND count > 0",
                                           arguments: [id]).sorted(by: VersionOrder.ascending)
        let hosts = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM crash_group_host WHERE group_id = ?", arguments: [id]) ?? 0
        return GroupSummary(
            id: id, signature: row["signature"], title: row["title"], count: row["count"],
            firstSeen: formatMilliseconds(row["first_seen_ms"]), lastSeen: formatMilliseconds(row["last_seen_ms"]),
            versions: versions, hosts: hosts, sampleCrashID: row["sample_crash_id"],
            state: GroupState(rawValue: row["state"]) ?? .open, resolvedIn: row["resolved_in"], reopenedIn: row["reopened_in"])
    }

    /// The versions any group of the app has crashes of, newest first.
    public func crashVersions(appID: String) async throws -> [String] {
        try await read { db in
            try String.fetchAll(db, sql: """
                SELECT DISTINCT v.version FROM crash_group_version v JOIN crash_group g ON g.id = v.group_id
                WHERE g.app_id = ? AND v.count > 0
                """, arguments: [appID]).sorted(by: VersionOrder.ascending).reversed()
        }
    }

    /// Crashes per UTC day and version from `sinceMilliseconds` on, optionally of one group.
    public func dailyCounts(appID: String, groupID: String? = nil, sinceMilliseconds: Int64) async throws
        -> [(day: Int64, version: String, count: Int)] {
        try await read { db in
            let day: Int64 = 86_400_000
            let sql = groupID == nil
                ? "SELECT received_ms / ? AS day, version, COUNT(*) AS n FROM crash WHERE app_id = ? AND received_ms >= ? GROUP BY day, version"
                : """
                  SELECT received_ms / ? AS day, version, COUNT(*) AS n FROM crash WHERE group_id = ? AND app_id = ?
                  AND received_ms >= ? GROUP BY day, version
                  """
            let arguments: StatementArguments = groupID.map { [day, $0, appID, sinceMilliseconds] } ?? [day, appID, sinceMilliseconds]
            return try Row.fetchAll(db, sql: sql, arguments: arguments).map { ($0["day"], $0["version"], $0["n"]) }
        }
    }

    /// A group's crash count per version (newest version first) and hosts (up to `hostLimit`).
    public func groupSpread(groupID: String, hostLimit: Int = 100) async throws -> (versions: [(String, Int)], hosts: [String]) {
        try await read { db in
            let versions = try Row.fetchAll(db, sql: "SELECT version, count FROM crash_group_version WHERE group_id = ? AND count > 0",
                                            arguments: [groupID]).map { ($0["version"] as String, $0["count"] as Int) }
                .sorted { VersionOrder.ascending($1.0, $0.0) }
            let hosts = try String.fetchAll(db, sql: "SELECT host FROM crash_group_host WHERE group_id = ? ORDER BY host LIMIT ?",
                                            arguments: [groupID, hostLimit])
            return (versions, hosts)
        }
    }

    /// Which of `buildIDs` the app has a table for.
    public func presentTables(appID: String, buildIDs: [String]) async throws -> Set<String> {
        try await read { db in
            let exists = try db.cachedStatement(sql: "SELECT 1 FROM module WHERE app_id = ? AND build_id = ?")
            return Set(try buildIDs.filter { try Bool.fetchOne(exists, arguments: [appID, $0]) == true })
        }
    }
}

/// Where a page of groups ended: the sort keys of its last group, as `count.lastSeen.id`.
struct GroupCursor: Equatable {
    var count: Int
    var lastSeen: Int64
    var id: String

    var text: String { "\(count).\(lastSeen).\(id)" }

    init(count: Int, lastSeen: Int64, id: String) {
        self.count = count
        self.lastSeen = lastSeen
        self.id = id
    }

    /// Parses a cursor; nil for anything else (a hand-edited URL starts at the first page).
    init?(text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let count = Int(parts[0]), let lastSeen = Int64(parts[1]), !parts[2].isEmpty,
              parts[2].utf8.count <= 64, parts[2].allSatisfy(\.isHexDigit) else { return nil }
        self.init(count: count, lastSeen: lastSeen, id: String(parts[2]))
    }
}

extension CrashStore {
    /// Queues crash `id` of the app for symbolication again (the console's button); false when
    /// there is no such crash.
    public func requestResymbolication(appID: String, id: String, now: Int64) async throws -> Bool {
        try await write { db in
            guard let seq = try Int64.fetchOne(db, sql: "SELECT seq FROM crash WHERE app_id = ? AND id = ?", arguments: [appID, id]) else {
                return false
            }
            try Self.enqueue(db, seq: seq, kind: .resymbolicate, now: now)
            return true
        }
    }
}
