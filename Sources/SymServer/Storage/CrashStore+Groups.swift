import Foundation
import GRDB

extension CrashStore {
    /// The state of a group, set by people (`PATCH …/groups/{id}`) or by a regression.
    public enum GroupState: String, Sendable, Codable, CaseIterable {
        case open, resolved, ignored
    }

    /// A group as `GET …/groups` lists it.
    public struct GroupSummary: Sendable, Codable, Equatable {
        public var id: String
        public var signature: String
        public var title: String
        public var count: Int
        public var firstSeen: String
        public var lastSeen: String
        public var versions: [String]
        public var hosts: Int
        public var sampleCrashID: String?
        public var state: GroupState
        /// The newest version seen when the group was resolved.
        public var resolvedIn: String?
        /// The newer version whose crash reopened the resolved group.
        public var reopenedIn: String?

        enum CodingKeys: String, CodingKey {
            case id, signature, title, count, versions, hosts, state
            case firstSeen = "first_seen", lastSeen = "last_seen", sampleCrashID = "sample_crash_id"
            case resolvedIn = "resolved_in", reopenedIn = "reopened_in"
        }

        /// Every member, absent ones as `null`.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(signature, forKey: .signature)
            try container.encode(title, forKey: .title)
            try container.encode(count, forKey: .count)
            try container.encode(firstSeen, forKey: .firstSeen)
            try container.encode(lastSeen, forKey: .lastSeen)
            try container.encode(versions, forKey: .versions)
            try container.encode(hosts, forKey: .hosts)
            try container.encode(sampleCrashID, forKey: .sampleCrashID)
            try container.encode(state, forKey: .state)
            try container.encode(resolvedIn, forKey: .resolvedIn)
            try container.encode(reopenedIn, forKey: .reopenedIn)
        }
    }

    /// The order of the group list.
    public enum GroupOrder: String, Sendable {
        case count
        case lastSeen = "last_seen"
    }

    /// The app's groups, optionally only those with crashes of `version` or seen since a time.
    public func groups(appID: String, version: String?, sinceMilliseconds: Int64?, order: GroupOrder, limit: Int) async throws -> [GroupSummary] {
        try await read { db in
            var conditions = ["g.app_id = ?"]
            var arguments: [any DatabaseValueConvertible] = [appID]
            if let version {
                conditions.append("EXISTS (SELECT 1 FROM crash_group_version v WHERE v.group_id = g.id AND v.version = ?)")
                arguments.append(version)
            }
            if let since = sinceMilliseconds { conditions.append("g.last_seen_ms >= ?"); arguments.append(since) }
            arguments.append(limit)
            let orderBy = order == .count ? "g.count DESC, g.last_seen_ms DESC" : "g.last_seen_ms DESC, g.count DESC"
            let rows = try Row.fetchAll(db, sql: """
                SELECT g.* FROM crash_group g WHERE \(conditions.joined(separator: " AND ")) AND g.count > 0
                ORDER BY \(orderBy), g.id LIMIT ?
                """, arguments: StatementArguments(arguments))
            return try rows.map { try Self.groupSummary(db, $0) }
        }
    }

    /// One group.
    public func group(appID: String, id: String) async throws -> GroupSummary {
        try await read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM crash_group WHERE app_id = ? AND id = ?", arguments: [appID, id]) else {
                throw StoreError.notFound("no group \(id)")
            }
            return try Self.groupSummary(db, row)
        }
    }

    static func groupSummary(_ db: Database, _ row: Row) throws -> GroupSummary {
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

    /// Sets a group's state; resolving records the newest version seen so far, so that a crash
    /// of a newer version reopens it.
    public func setGroupState(appID: String, id: String, state: GroupState) async throws -> GroupSummary {
        try await write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM crash_group WHERE app_id = ? AND id = ?", arguments: [appID, id]) == true else {
                throw StoreError.notFound("no group \(id)")
            }
            let versions = try String.fetchAll(db, sql: "SELECT version FROM crash_group_version WHERE group_id = ?", arguments: [id])
            let newest = versions.max(by: VersionOrder.ascending)
            try db.execute(sql: "UPDATE crash_group SET state = ?, resolved_in = ?, reopened_in = NULL WHERE id = ?",
                           arguments: [state.rawValue, state == .resolved ? newest : nil, id])
            return try Self.groupSummary(db, try Row.fetchOne(db, sql: "SELECT * FROM crash_group WHERE id = ?", arguments: [id])!)
        }
    }

    /// The group of `signature` in the app, created when new (`created` says so).
    static func group(_ db: Database, appID: String, signature: String, title: String, now: Int64) throws -> (id: String, created: Bool) {
        if let id = try String.fetchOne(db.cachedStatement(sql: "SELECT id FROM crash_group WHERE app_id = ? AND signature = ?"),
                                        arguments: [appID, signature]) {
            return (id, false)
        }
        let id = randomHex(bytes: 8)
        try db.run("""
            INSERT INTO crash_group (id, app_id, signature, title, first_seen_ms, last_seen_ms) VALUES (?, ?, ?, ?, ?, ?)
            """, [id, appID, signature, String(title.prefix(512)), now, now])
        return (id, true)
    }

    /// Counts a crash into a group; a resolved group hit by a newer version than it was
    /// resolved in opens again and says which; returns whether it reopened.
    @discardableResult
    static func join(_ db: Database, group: String, crashID: String, version: String, host: String?, received: Int64) throws -> Bool {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT count, first_seen_ms, last_seen_ms, state, resolved_in FROM crash_group WHERE id = ?
            """), arguments: [group]) else { return false }
        let count: Int = row["count"]
        let first: Int64 = count == 0 ? received : min(row["first_seen_ms"], received)
        let last: Int64 = count == 0 ? received : max(row["last_seen_ms"], received)
        try db.run("""
            UPDATE crash_group SET count = count + 1, first_seen_ms = ?, last_seen_ms = ?,
                sample_crash_id = coalesce(sample_crash_id, ?) WHERE id = ?
            """, [first, last, crashID, group])
        var reopened = false
        if row["state"] == GroupState.resolved.rawValue,
           VersionOrder.ascending(row["resolved_in"] as String? ?? "", version) {
            try db.execute(sql: "UPDATE crash_group SET state = 'open', reopened_in = ? WHERE id = ?", arguments: [version, group])
            reopened = true
        }
        try db.run("""
            INSERT INTO crash_group_version (group_id, version, count) VALUES (?, ?, 1)
            ON CONFLICT (group_id, version) DO UPDATE SET count = count + 1
            """, [group, version])
        if let host {
            try db.run("INSERT OR IGNORE INTO crash_group_host (group_id, host) VALUES (?, ?)", [group, host])
        }
        return reopened
    }

    /// Takes a crash out of a group's counts (it moved to another group or was deleted).
    static func leave(_ db: Database, group: String, version: String, crashID: String) throws {
        try db.run("UPDATE crash_group SET count = max(count - 1, 0) WHERE id = ?", [group])
        try db.run("UPDATE crash_group_version SET count = max(count - 1, 0) WHERE group_id = ? AND version = ?", [group, version])
        try replaceSample(db, group: group, crashID: crashID)
    }

    /// When `crashID` is the group's sample and leaves it (deleted, expired or moved to another
    /// group), names the group's newest other crash instead (the one retention keeps longest),
    /// or none when it has no other.
    static func replaceSample(_ db: Database, group: String, crashID: String) throws {
        let statement = try db.cachedStatement(sql: """
            UPDATE crash_group SET sample_crash_id =
                (SELECT id FROM crash WHERE group_id = ?1 AND id != ?2 ORDER BY seq DESC LIMIT 1)
            WHERE id = ?1 AND sample_crash_id = ?2
            """)
        try statement.execute(arguments: [group, crashID])
    }

    // MARK: Grouping rules

    /// The app's grouping rules, nil when it has none of its own.
    public func groupingRules(appID: String) async throws -> String? {
        try await read { db in
            try String.fetchOne(db, sql: "SELECT rules FROM grouping_rules WHERE app_id = ?", arguments: [appID])
        }
    }
}

/// The order of version strings: numeric runs compare as numbers (`1.10` after `1.9`), other
/// runs as text, so that "a newer version" means what release numbering means.
enum VersionOrder {
    /// Whether `lhs` comes before `rhs`.
    static func ascending(_ lhs: String, _ rhs: String) -> Bool {
        let left = components(lhs), right = components(rhs)
        for (a, b) in zip(left, right) where a != b {
            switch (a, b) {
            case (.number(let x), .number(let y)): return x < y
            case (.number, .text): return false
            case (.text, .number): return true
            case (.text(let x), .text(let y)): return x < y
            }
        }
        return left.count < right.count
    }

    private enum Component: Equatable {
        case number(UInt64)
        case text(String)
    }

    private static func components(_ version: String) -> [Component] {
        var result: [Component] = []
        var current = ""
        var numeric = false
        func flush() {
            guard !current.isEmpty else { return }
            result.append(numeric ? .number(UInt64(current.suffix(18)) ?? 0) : .text(current))
            current = ""
        }
        for character in version {
            if character == "." || character == "-" || character == "+" || character == "_" {
                flush()
                continue
            }
            let digit = character.isASCII && character.isNumber
            if !current.isEmpty && digit != numeric { flush() }
            numeric = digit
            current.append(character)
        }
        flush()
        return result
    }
}
