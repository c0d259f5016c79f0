import PostgresNIO

/// The versions of one build-id on PostgreSQL (the SQLite twin: CrashStore+Builds.swift).
extension PostgresMetadataStore {
    public func buildVersions(appID: String, buildID: String) async throws -> SymbolStore.BuildVersions? {
        guard let module = try await rows("SELECT name, arch FROM module WHERE app_id = \(appID) AND build_id = \(buildID)").first else {
            return nil
        }
        let (name, arch) = try module.decode((String, String).self)
        let limit = SymbolStore.BuildVersions.limit
        let versions = try await rows("""
            SELECT v.version, v.package, v.platform, v.created
            FROM version_module l JOIN version v ON v.app_id = l.app_id AND v.version = l.version
            WHERE l.app_id = \(appID) AND l.build_id = \(buildID)
            ORDER BY v.created COLLATE "C" DESC, v.version COLLATE "C" DESC LIMIT \(limit)
            """).map {
            let (version, package, platform, created) = try $0.decode((String, String, String, String).self)
            return SymbolStore.BuildVersions.Version(version: version, package: package, platform: platform, created: created)
        }
        return SymbolStore.BuildVersions(buildID: buildID, name: name, arch: arch, versions: versions)
    }
}
