import GRDB
import SymBundle

/// The SQLite metadata store: `CrashStore` over the `SymbolStore`'s database is the embedded
/// implementation of `MetadataStore` (one process owns the store).
public typealias SQLiteMetadataStore = CrashStore

extension CrashStore: MetadataStore, ImmediateTableReader {
    // MARK: Apps, versions and modules (SymbolStore's, over the same database)

    public func createApp(name: String, id: String?) async throws -> (app: SymbolStore.App, key: String) {
        try await symbols.createApp(name: name, id: id)
    }

    public func listApps() async throws -> [SymbolStore.App] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT id, name, created FROM app ORDER BY created, id").map {
                SymbolStore.App(id: $0["id"], name: $0["name"], created: $0["created"])
            }
        }
    }

    public func rotateKey(appID: String) async throws -> String { try await symbols.rotateKey(appID: appID) }

    public func keyHash(appID: String) async throws -> [UInt8]? { try await symbols.keyHash(appID: appID) }

    public func missing(appID: String, version: String, package: String, platform: String,
                        modules: [MissingSymbolsRequest.Module]) async throws -> MissingSymbolsResponse {
        try await symbols.missing(appID: appID, version: version, package: package, platform: platform, modules: modules)
    }

    public func commit(appID: String, manifest: BundleManifest, modules: [SymbolStore.StoredModule]) async throws
        -> SymbolStore.CommitResult {
        try await symbols.commit(appID: appID, manifest: manifest, modules: modules)
    }

    public func states(appID: String, buildIDs: [String]) async throws -> [String: SymbolStore.ModuleState] {
        try await symbols.states(appID: appID, buildIDs: buildIDs)
    }

    public func versions(appID: String) async throws -> [SymbolStore.VersionSummary] { try await symbols.versions(appID: appID) }

    public func modules(appID: String, version: String) async throws -> [SymbolStore.ModuleSummary]? {
        try await symbols.modules(appID: appID, version: version)
    }

    public func debugFileObject(buildID: String) async throws -> String? { try await symbols.debugFileObject(buildID: buildID) }

    // MARK: Tables of a report

    public func reportTables(appID: String, buildIDs: Set<String>, names: Set<String>, version: String?) async throws -> ReportTables {
        let found = try await read { db in try Self.tables(db, appID: appID, buildIDs: buildIDs, names: names, version: version) }
        return ReportTables(byBuildID: found.byBuildID, byName: found.byName)
    }

    public func reportTablesNow(appID: String, buildIDs: Set<String>, names: Set<String>, version: String?) throws -> ReportTables {
        let found = try tablesNow(appID: appID, buildIDs: buildIDs, names: names, version: version)
        return ReportTables(byBuildID: found.byBuildID, byName: found.byName)
    }

    public var immediateTables: (any ImmediateTableReader)? { self }

    // MARK: Jobs

    public func renewLeases(seqs: [Int64], now: Int64, lease: Int64) async throws {
        guard !seqs.isEmpty else { return }
        try await write { db in
            let renew = try db.cachedStatement(sql: "UPDATE crash_job SET lease_until_ms = ? WHERE crash_seq = ? AND lease_until_ms > 0")
            for seq in seqs { try renew.execute(arguments: [now + lease, seq]) }
        }
    }

    /// One process owns an embedded store: its own doorbell wakes its workers.
    public var jobNotifications: (any JobNotifications)? { nil }
}
