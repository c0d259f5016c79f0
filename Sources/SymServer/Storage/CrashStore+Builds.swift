import GRDB

/// What an app's uploads say of one build-id: which module it is and the versions whose upload
/// named it (`GET …/builds/{build-id}`, docs/http-api.md), so that an agent can give a crash
/// whose report states no version the version its executable was uploaded with.
extension SymbolStore {
    /// A build-id of an app, with the versions that hold it, newest first.
    public struct BuildVersions: Codable, Sendable, Equatable {
        /// One version whose upload named the build-id.
        public struct Version: Codable, Sendable, Equatable {
            public var version: String
            public var package: String
            public var platform: String
            /// When the version was first uploaded (RFC 3339).
            public var created: String
        }

        public var buildID: String
        /// The module's file name, as uploaded.
        public var name: String
        public var arch: String
        /// Newest first (by when each version was first uploaded); at most `limit`.
        public var versions: [Version]

        enum CodingKeys: String, CodingKey { case buildID = "build_id", name, arch, versions }

        /// Versions listed at most: a library unchanged over years of releases names many.
        public static let limit = 100
    }
}

extension CrashStore {
    public func buildVersions(appID: String, buildID: String) async throws -> SymbolStore.BuildVersions? {
        try await read { db in
            guard let module = try Row.fetchOne(db, sql: "SELECT name, arch FROM module WHERE app_id = ? AND build_id = ?",
                                                arguments: [appID, buildID]) else { return nil }
            let versions = try Row.fetchAll(db, sql: """
                SELECT v.version, v.package, v.platform, v.created
                FROM version_module l JOIN version v ON v.app_id = l.app_id AND v.version = l.version
                WHERE l.app_id = ? AND l.build_id = ? ORDER BY v.created DESC, v.version DESC LIMIT ?
                """, arguments: [appID, buildID, SymbolStore.BuildVersions.limit]).map {
                SymbolStore.BuildVersions.Version(version: $0["version"], package: $0["package"], platform: $0["platform"],
                                                  created: $0["created"])
            }
            return SymbolStore.BuildVersions(buildID: buildID, name: module["name"], arch: module["arch"], versions: versions)
        }
    }
}
