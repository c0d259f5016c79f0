import Foundation
import GRDB
import SymBundle
#if canImport(Glibc)
import Glibc
#endif

/// Metadata of apps, versions and modules in SQLite (GRDB, WAL, synchronous=FULL) next to the
/// content-addressed file store, all under one data directory.
///
/// Files always reach the object store before the rows naming them are committed, so a committed
/// row never points at a missing file; a crash between the two leaves only unreferenced objects.
public final class SymbolStore: Sendable {
    /// The object store: the directory under the same data directory, or the one given.
    public let objects: any ObjectStore
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
    public struct StoredModule: Sendable {
        var buildID: String
        var name: String
        var arch: String
        var hasDWARF: Bool
        var symbolsSHA256: String
        var symbolsSize: UInt64
        var debugSHA256: String?
        var debugSize: UInt64?
        /// What to do with it when the app has the build-id already.
        var change: Change = .insert
    }

    /// What an upload does to a module row.
    public enum Change: Sendable, Equatable {
        /// A new build-id: insert the row (a row that appeared meanwhile is left as it is).
        case insert
        /// A build-id the app has: replace its table (when `table`) and add the debug file it
        /// lacks (when `debug`), provided the stored table is still `expectedSymbols`.
        case improve(table: Bool, debug: Bool, expectedSymbols: String)
        /// A build-id the app has, and nothing better in this upload.
        case keep
    }

    /// The stored facts about a module that decide whether an upload improves it.
    public struct ModuleState: Sendable {
        var hasDWARF: Bool
        var symbolsSHA256: String
        var hasDebugFile: Bool
    }

    /// What an upload did to each module of its bundle.
    public struct CommitResult: Sendable, Equatable {
        /// New build-ids, and stored ones whose table or debug file this upload improved.
        var stored: [String] = []
        /// The improved ones (a subset of `stored`).
        var improved: [String] = []
        /// Build-ids left as they were.
        var alreadyPresent: [String] = []
    }

    /// Why a data directory cannot be used, in one line that says what to do.
    public struct OpenError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The line.
        public var message: String

        init(_ message: String) {
            self.message = message
        }

        public var description: String { message }
    }

    /// Opens the store in `dataDirectory`, migrating it as needed. With `create` (`serve`, `apps
    /// create`) a missing directory or store is created; without it (commands that only read or
    /// change an existing store) a directory that holds no store is an error, so a mistyped
    /// `--data-dir` is not taken for an empty store. Errors are `OpenError`s.
    public init(dataDirectory: String, create: Bool = true, objects: (any ObjectStore)? = nil) throws {
        let databasePath = dataDirectory + "/metadata.sqlite"
        try Self.checkDirectory(dataDirectory, create: create)
        if !create && access(databasePath, F_OK) != 0 {
            throw OpenError("\(dataDirectory) holds no crashsym store (no metadata.sqlite): check --data-dir; "
                + "only `crashsym serve` and `crashsym apps create` create one")
        }
        do {
            self.objects = try objects ?? DirectoryObjectStore(root: dataDirectory)
        } catch {
            throw OpenError("cannot prepare the object store in \(dataDirectory): \(error); "
                + "check its permissions or choose another --data-dir")
        }
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            // FULL: a committed transaction survives power loss, not only a process crash.
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        do {
            database = try DatabasePool(path: databasePath, configuration: configuration)
            // GRDB turns the writer to `synchronous = NORMAL` when it enables WAL, after the
            // configuration's `PRAGMA synchronous = FULL` above: commits would wait for no disk.
            // FULL again on the one writer connection (readers never commit).
            try database.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        } catch {
            throw Self.openError(databasePath, error)
        }
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
        do {
            try migrator.migrate(database)
        } catch {
            throw Self.openError(databasePath, error)
        }
    }

    private static func openError(_ databasePath: String, _ error: any Error) -> OpenError {
        let reason = (error as? DatabaseError)?.message ?? "\(error)"
        return OpenError("\(databasePath) cannot be opened as crashsym's database (SQLite: \(reason)): "
            + "check the file and its permissions, or choose another --data-dir")
    }

    /// Checks that `path` is a writable directory, creating it (and its parents) when `create`.
    private static func checkDirectory(_ path: String, create: Bool) throws {
        var status = stat()
        if stat(path, &status) != 0 {
            let reason = String(cString: strerror(errno))
            guard errno == ENOENT else { throw OpenError("cannot use the data directory \(path): \(reason); choose another --data-dir") }
            guard create else {
                throw OpenError("no data directory \(path): check --data-dir; only `crashsym serve` and `crashsym apps create` create one")
            }
            // mkdir -p, one component at a time, so the failing component and errno are known.
            var prefix = path.hasPrefix("/") ? "" : "."
            for component in path.split(separator: "/") {
                prefix += "/" + component
                if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                    throw OpenError("cannot create the data directory \(path) (\(prefix): \(String(cString: strerror(errno)))): "
                        + "choose a writable --data-dir")
                }
            }
            guard stat(path, &status) == 0 else { throw OpenError("cannot create the data directory \(path): choose another --data-dir") }
        }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw OpenError("the data directory \(path) is not a directory: choose another --data-dir")
        }
        guard access(path, R_OK | W_OK | X_OK) == 0 else {
            throw OpenError("the data directory \(path) is not writable by this user: fix its permissions or choose another --data-dir")
        }
    }

    // MARK: Apps

    /// Creates an app and returns it with its key (the only time the key exists in clear).
    public func createApp(name: String, id: String? = nil) throws -> (app: App, key: String) {
        let id = id ?? Self.randomID()
        guard BundleManifest.isIdentifier(id) else { throw StoreError.conflict("app id must be 1 to 128 characters of [A-Za-z0-9._-]") }
        let key = AppKey.generate()
        let app = App(id: id, name: name, created: timestamp())
        try database.write { db in
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM app WHERE id = ?", arguments: [id]) == true {
                throw StoreError.conflict("an app with id \(id) already exists")
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
            guard db.changesCount == 1 else { throw StoreError.notFound("no app with id \(id)") }
        }
        return key
    }

    /// The stored key hash of app `id`, nil when there is no such app.
    public func keyHash(appID: String) async throws -> [UInt8]? {
        try await database.read { db in
            try Data.fetchOne(db, sql: "SELECT key_hash FROM app WHERE id = ?", arguments: [appID]).map { Array($0) }
        }
    }

    // MARK: Symbols

    /// Splits `modules` into those the app lacks and those it has, linking the present ones to
    /// the version (created when needed); `improvable` lists the present ones that the client's
    /// claims say it can improve (DWARF where the stored table has none, a debug file where none
    /// is stored).
    public func missing(appID: String, version: String, package: String, platform: String,
                 modules: [MissingSymbolsRequest.Module]) async throws -> MissingSymbolsResponse {
        let now = timestamp()
        return try await database.write { db in
            var answer = MissingSymbolsResponse(missing: [], present: [])
            let row = try db.cachedStatement(sql: """
                SELECT has_dwarf, debug_sha256 IS NOT NULL AS has_debug FROM module WHERE app_id = ? AND build_id = ?
                """)
            for module in modules {
                guard let stored = try Row.fetchOne(row, arguments: [appID, module.buildID]) else {
                    answer.missing.append(module.buildID)
                    continue
                }
                answer.present.append(module.buildID)
                let storedDWARF: Bool = stored["has_dwarf"], storedDebug: Bool = stored["has_debug"]
                if (module.hasDWARF == true && !storedDWARF) || (module.hasDebugFile == true && !storedDebug) {
                    answer.improvable.append(module.buildID)
                }
            }
            if !answer.present.isEmpty {
                try Self.ensureVersion(db, appID: appID, version: version, package: package, platform: platform, now: now)
                try Self.link(db, appID: appID, version: version, buildIDs: answer.present)
            }
            return answer
        }
    }

    /// Records `modules` (whose files are already durable in the object store) for the version,
    /// in one transaction: new build-ids are inserted, stored ones improved as each module's
    /// `change` says (only if no other upload changed their table meanwhile), others left as
    /// they are.
    public func commit(appID: String, manifest: BundleManifest, modules: [StoredModule]) async throws -> CommitResult {
        let now = timestamp()
        return try await database.write { db in
            try Self.ensureVersion(db, appID: appID, version: manifest.version, package: manifest.package,
                                   platform: manifest.platform, now: now)
            var result = CommitResult()
            let insert = try db.cachedStatement(sql: """
                INSERT INTO module (app_id, build_id, name, arch, has_dwarf, symbols_sha256, symbols_size,
                                    debug_sha256, debug_size, created)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (app_id, build_id) DO NOTHING
                """)
            let replaceTable = try db.cachedStatement(sql: """
                UPDATE module SET has_dwarf = ?, symbols_sha256 = ?, symbols_size = ?
                WHERE app_id = ? AND build_id = ? AND symbols_sha256 = ?
                """)
            let addDebug = try db.cachedStatement(sql: """
                UPDATE module SET debug_sha256 = ?, debug_size = ? WHERE app_id = ? AND build_id = ? AND debug_sha256 IS NULL
                """)
            for module in modules {
                var changed = false
                switch module.change {
                case .insert:
                    try insert.execute(arguments: [
                        appID, module.buildID, module.name, module.arch, module.hasDWARF, module.symbolsSHA256,
                        Int64(module.symbolsSize), module.debugSHA256, module.debugSize.map { Int64($0) }, now,
                    ])
                    changed = db.changesCount == 1
                case .improve(let table, let debug, let expected):
                    if table {
                        try replaceTable.execute(arguments: [module.hasDWARF, module.symbolsSHA256, Int64(module.symbolsSize),
                                                             appID, module.buildID, expected])
                        changed = db.changesCount == 1
                    }
                    if debug, let sha256 = module.debugSHA256, let size = module.debugSize {
                        try addDebug.execute(arguments: [sha256, Int64(size), appID, module.buildID])
                        changed = changed || db.changesCount == 1
                    }
                    if changed { result.improved.append(module.buildID) }
                case .keep:
                    break
                }
                if changed { result.stored.append(module.buildID) } else { result.alreadyPresent.append(module.buildID) }
            }
            try Self.link(db, appID: appID, version: manifest.version, buildIDs: modules.map(\.buildID))
            return result
        }
    }

    /// What the app has stored of each of `buildIDs` it has (read only).
    public func states(appID: String, buildIDs: [String]) async throws -> [String: ModuleState] {
        try await database.read { db in
            let row = try db.cachedStatement(sql: """
                SELECT has_dwarf, symbols_sha256, debug_sha256 IS NOT NULL AS has_debug FROM module WHERE app_id = ? AND build_id = ?
                """)
            var states: [String: ModuleState] = [:]
            for id in buildIDs {
                guard let stored = try Row.fetchOne(row, arguments: [appID, id]) else { continue }
                states[id] = ModuleState(hasDWARF: stored["has_dwarf"], symbolsSHA256: stored["symbols_sha256"],
                                         hasDebugFile: stored["has_debug"])
            }
            return states
        }
    }

    /// The app's versions, oldest first.
    public func versions(appID: String) async throws -> [VersionSummary] {
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
    public func modules(appID: String, version: String) async throws -> [ModuleSummary]? {
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
    public func debugFileObject(buildID: String) async throws -> String? {
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
