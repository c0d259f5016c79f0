import Foundation
import GRDB
import SymBundle

/// Metadata of apps, versions and modules in SQLite (GRDB, WAL, synchronous=FULL) next to the
/// content-addressed file store, all under one data directory.
///
/// Files always reach the object store before the rows naming them are committed, so a committed
/// row never points at a missing file; a crash between the two leaves only unreferenced objects.
public final class SymbolStore: Sendable {
    /// The object store under the same data directory.
    public let objects: ObjectStore
    let database: DatabasePool

    /// An app as listed by `crashsym apps list`.
    public struct App: Sendable, Equatable, Codable {
        /// The app id used in URLs and manifests.
        public var id: String
        /// Human-readable name.
        public var name: String
        /// Creation time (RFC 3339).
        public var created: String
    }

    /// A version of an app with its module count.
    public struct VersionSummary: Sendable, Codable, Equatable {
        public var version: String
        public var modules: Int
        public var created: String
    }

    /// A module of a version.
    public struct ModuleSummary: Sendable, Codable, Equatable {
        public var buildID: String
        public var name: String
        public var arch: String
        public var hasDWARF: Bool
        public var hasDebugFile: Bool
        public var symbolsSize: Int64

        enum CodingKeys: String, CodingKey {
            case buildID = "build_id", name, arch, hasDWARF = "has_dwarf", hasDebugFile = "has_debug_file",
                 symbolsSize = "symbols_size"
        }
    }

    /// A module whose files are in the object store, ready to be recorded.
    struct StoredModule: Sendable {
        var buildID: String
        var name: String
        var arch: String
        var hasDWARF: Bool
        var symbolsSHA256: String
        var symbolsSize: UInt64
        var debugSHA256: String?
        var debugSize: UInt64?
    }

    /// Opens (creating and migrating as needed) the store in `dataDirectory`.
    public init(dataDirectory: String) throws {
        objects = try ObjectStore(root: dataDirectory)
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            // FULL: a committed transaction survives power loss, not only a process crash.
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        database = try DatabasePool(path: dataDirectory + "/metadata.sqlite", configuration: configuration)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE app (
                    id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, key_hash BLOB NOT NULL, created TEXT NOT NULL);
                CREATE TABLE module (
                    app_id TEXT NOT NULL REFERENCES app(id), build_id TEXT NOT NULL, name TEXT NOT NULL,
                    arch TEXT NOT NULL, has_dwarf INTEGER NOT NULL, symbols_sha256 TEXT NOT NULL,
                    symbols_size INTEGER NOT NULL, debug_sha256 TEXT, debug_size INTEGER, created TEXT NOT NULL,
                    PRIMARY KEY (app_id, build_id));
                CREATE INDEX module_by_build_id ON module(build_id);
                CREATE TABLE version (
                    app_id TEXT NOT NULL REFERENCES app(id), version TEXT NOT NULL, package TEXT NOT NULL,
                    platform TEXT NOT NULL, created TEXT NOT NULL, PRIMARY KEY (app_id, version));
                CREATE TABLE version_module (
                    app_id TEXT NOT NULL, version TEXT NOT NULL, build_id TEXT NOT NULL,
                    PRIMARY KEY (app_id, version, build_id));
                """)
        }
        CrashStore.registerMigrations(&migrator)
        try migrator.migrate(database)
    }

    // MARK: Apps

    /// Creates an app and returns it with its key (the only time the key exists in clear).
    public func createApp(name: String, id: String? = nil) throws -> (app: App, key: String) {
        let id = id ?? Self.randomID()
        guard BundleManifest.isIdentifier(id) else { throw ServerError(.badRequest, "app id must be 1 to 128 characters of [A-Za-z0-9._-]") }
        let key = AppKey.generate()
        let app = App(id: id, name: name, created: timestamp())
        try database.write { db in
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM app WHERE id = ?", arguments: [id]) == true {
                throw ServerError(.badRequest, "an app with id \(id) already exists")
            }
            try db.execute(sql: "INSERT INTO app (id, name, key_hash, created) VALUES (?, ?, ?, ?)",
                           arguments: [id, name, Data(AppKey.hash(key)), app.created])
        }
        return (app, key)
    }

    /// All apps, oldest first.
    public func listApps() throws -> [App] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT id, name, created FROM app ORDER BY created, id").map {
                App(id: $0["id"], name: $0["name"], created: $0["created"])
            }
        }
    }

    /// Replaces the key of app `id` and returns the new key; the old key stops working at once.
    public func rotateKey(appID id: String) throws -> String {
        let key = AppKey.generate()
        try database.write { db in
            try db.execute(sql: "UPDATE app SET key_hash = ? WHERE id = ?", arguments: [Data(AppKey.hash(key)), id])
            guard db.changesCount == 1 else { throw ServerError(.notFound, "no app with id \(id)") }
        }
        return key
    }

    /// The stored key hash of app `id`, nil when there is no such app.
    func keyHash(appID: String) async throws -> [UInt8]? {
        try await database.read { db in
            try Data.fetchOne(db, sql: "SELECT key_hash FROM app WHERE id = ?", arguments: [appID]).map { Array($0) }
        }
    }

    // MARK: Symbols

    /// Splits `buildIDs` into those the app lacks and those it has, linking the present ones to
    /// the version (created when needed).
    func missing(appID: String, version: String, package: String, platform: String,
                 buildIDs: [String]) async throws -> (missing: [String], present: [String]) {
        let now = timestamp()
        return try await database.write { db in
            var missing: [String] = []
            var present: [String] = []
            let exists = try db.cachedStatement(sql: "SELECT 1 FROM module WHERE app_id = ? AND build_id = ?")
            for id in buildIDs {
                if try Bool.fetchOne(exists, arguments: [appID, id]) == true { present.append(id) } else { missing.append(id) }
            }
            if !present.isEmpty {
                try Self.ensureVersion(db, appID: appID, version: version, package: package, platform: platform, now: now)
                try Self.link(db, appID: appID, version: version, buildIDs: present)
            }
            return (missing, present)
        }
    }

    /// Records `modules` (whose files are already durable in the object store) for the version,
    /// in one transaction; modules the app already had are left as they are.
    func commit(appID: String, manifest: BundleManifest, modules: [StoredModule]) async throws -> (stored: [String], alreadyPresent: [String]) {
        let now = timestamp()
        return try await database.write { db in
            try Self.ensureVersion(db, appID: appID, version: manifest.version, package: manifest.package,
                                   platform: manifest.platform, now: now)
            var stored: [String] = []
            var alreadyPresent: [String] = []
            let insert = try db.cachedStatement(sql: """
                INSERT INTO module (app_id, build_id, name, arch, has_dwarf, symbols_sha256, symbols_size,
                                    debug_sha256, debug_size, created)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (app_id, build_id) DO NOTHING
                """)
            for module in modules {
                try insert.execute(arguments: [
                    appID, module.buildID, module.name, module.arch, module.hasDWARF, module.symbolsSHA256,
                    Int64(module.symbolsSize), module.debugSHA256, module.debugSize.map { Int64($0) }, now,
                ])
                if db.changesCount == 1 { stored.append(module.buildID) } else { alreadyPresent.append(module.buildID) }
            }
            try Self.link(db, appID: appID, version: manifest.version, buildIDs: modules.map(\.buildID))
            return (stored, alreadyPresent)
        }
    }

    /// Which of `buildIDs` the app already has (read only).
    func present(appID: String, buildIDs: [String]) async throws -> Set<String> {
        try await database.read { db in
            let exists = try db.cachedStatement(sql: "SELECT 1 FROM module WHERE app_id = ? AND build_id = ?")
            var present = Set<String>()
            for id in buildIDs where try Bool.fetchOne(exists, arguments: [appID, id]) == true { present.insert(id) }
            return present
        }
    }

    /// The app's versions, oldest first.
    func versions(appID: String) async throws -> [VersionSummary] {
        try await database.read { db in
            try Row.fetchAll(db, sql: """
                SELECT v.version, v.created,
                       (SELECT COUNT(*) FROM version_module m WHERE m.app_id = v.app_id AND m.version = v.version) AS modules
                FROM version v WHERE v.app_id = ? ORDER BY v.created, v.version
                """, arguments: [appID]).map {
                VersionSummary(version: $0["version"], modules: $0["modules"], created: $0["created"])
            }
        }
    }

    /// The modules of a version, nil when the version is unknown.
    func modules(appID: String, version: String) async throws -> [ModuleSummary]? {
        try await database.read { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM version WHERE app_id = ? AND version = ?",
                                    arguments: [appID, version]) == true else { return nil }
            return try Row.fetchAll(db, sql: """
                SELECT m.build_id, m.name, m.arch, m.has_dwarf, m.debug_sha256 IS NOT NULL AS has_debug, m.symbols_size
                FROM version_module l JOIN module m ON m.app_id = l.app_id AND m.build_id = l.build_id
                WHERE l.app_id = ? AND l.version = ? ORDER BY m.name, m.build_id
                """, arguments: [appID, version]).map {
                ModuleSummary(buildID: $0["build_id"], name: $0["name"], arch: $0["arch"], hasDWARF: $0["has_dwarf"],
                              hasDebugFile: $0["has_debug"], symbolsSize: $0["symbols_size"])
            }
        }
    }

    /// The SHA-256 of an uploaded debug file with this build-id (any app), for debuginfod.
    func debugFileObject(buildID: String) async throws -> String? {
        try await database.read { db in
            try String.fetchOne(db, sql: "SELECT debug_sha256 FROM module WHERE build_id = ? AND debug_sha256 IS NOT NULL LIMIT 1",
                                arguments: [buildID])
        }
    }

    private static func ensureVersion(_ db: Database, appID: String, version: String, package: String, platform: String, now: String) throws {
        try db.execute(sql: """
            INSERT INTO version (app_id, version, package, platform, created) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (app_id, version) DO NOTHING
            """, arguments: [appID, version, package, platform, now])
    }

    private static func link(_ db: Database, appID: String, version: String, buildIDs: [String]) throws {
        let statement = try db.cachedStatement(sql: "INSERT OR IGNORE INTO version_module (app_id, version, build_id) VALUES (?, ?, ?)")
        for id in buildIDs { try statement.execute(arguments: [appID, version, id]) }
    }

    private static func randomID() -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef")
        return String((0..<16).map { _ in digits[Int.random(in: 0..<16, using: &generator)] })
    }
}

/// The current time as RFC 3339 UTC with seconds (`2026-11-22T15:04:05Z`).
func timestamp(_ date: Date = Date()) -> String {
    date.formatted(.iso8601)
}
