import Foundation
import NIOCore
import PostgresNIO
import SymBundle

/// Apps, keys, versions and modules on PostgreSQL (the SQLite twin: SymbolStore.swift).
extension PostgresMetadataStore {
    public func createApp(name: String, id: String?) async throws -> (app: SymbolStore.App, key: String) {
        let id = id ?? CrashStore.randomHex(bytes: 8)
        guard BundleManifest.isIdentifier(id) else { throw StoreError.conflict("app id must be 1 to 128 characters of [A-Za-z0-9._-]") }
        let key = AppKey.generate()
        let app = SymbolStore.App(id: id, name: name, created: timestamp())
        let hash = ByteBuffer(bytes: AppKey.hash(key))
        let inserted = try await rows("""
            INSERT INTO app (id, name, key_hash, created) VALUES (\(id), \(name), \(hash), \(app.created))
            ON CONFLICT (id) DO NOTHING RETURNING id
            """)
        guard !inserted.isEmpty else { throw StoreError.conflict("an app with id \(id) already exists") }
        return (app, key)
    }

    public func listApps() async throws -> [SymbolStore.App] {
        try await rows("SELECT id, name, created FROM app ORDER BY created, id COLLATE \"C\"").map {
            let (id, name, created) = try $0.decode((String, String, String).self)
            return SymbolStore.App(id: id, name: name, created: created)
        }
    }

    public func rotateKey(appID: String) async throws -> String {
        let key = AppKey.generate()
        let hash = ByteBuffer(bytes: AppKey.hash(key))
        guard try await !rows("UPDATE app SET key_hash = \(hash) WHERE id = \(appID) RETURNING id").isEmpty else {
            throw StoreError.notFound("no app with id \(appID)")
        }
        return key
    }

    public func keyHash(appID: String) async throws -> [UInt8]? {
        try await rows("SELECT key_hash FROM app WHERE id = \(appID)").first.map { Self.bytes(try $0.decode(ByteBuffer.self)) ?? [] }
    }

    public func missing(appID: String, version: String, package: String, platform: String,
                        modules: [MissingSymbolsRequest.Module]) async throws -> MissingSymbolsResponse {
        let now = timestamp()
        return try await transaction { db in
            var answer = MissingSymbolsResponse(missing: [], present: [])
            let ids = modules.map(\.buildID)
            var stored: [String: (dwarf: Bool, debug: Bool)] = [:]
            for row in try await db.rows("""
                SELECT build_id, has_dwarf, debug_sha256 IS NOT NULL FROM module WHERE app_id = \(appID) AND build_id = ANY(\(ids))
                """) {
                let (id, dwarf, debug) = try row.decode((String, Bool, Bool).self)
                stored[id] = (dwarf, debug)
            }
            for module in modules {
                guard let state = stored[module.buildID] else {
                    answer.missing.append(module.buildID)
                    continue
                }
                answer.present.append(module.buildID)
                if (module.hasDWARF == true && !state.dwarf) || (module.hasDebugFile == true && !state.debug) {
                    answer.improvable.append(module.buildID)
                }
            }
            if !answer.present.isEmpty {
                try await Self.ensureVersion(db, appID: appID, version: version, package: package, platform: platform, now: now)
                try await Self.link(db, appID: appID, version: version, buildIDs: answer.present)
            }
            return answer
        }
    }

    public func commit(appID: String, manifest: BundleManifest, modules: [SymbolStore.StoredModule]) async throws
        -> SymbolStore.CommitResult {
        let now = timestamp()
        return try await transaction { db in
            try await Self.ensureVersion(db, appID: appID, version: manifest.version, package: manifest.package,
                                         platform: manifest.platform, now: now)
            var result = SymbolStore.CommitResult()
            for module in modules {
                var changed = false
                switch module.change {
                case .insert:
                    let symbolsSize = Int64(module.symbolsSize), debugSize = module.debugSize.map { Int64($0) }
                    changed = try await db.exists("""
                        INSERT INTO module (app_id, build_id, name, arch, has_dwarf, symbols_sha256, symbols_size,
                                            debug_sha256, debug_size, created)
                        VALUES (\(appID), \(module.buildID), \(module.name), \(module.arch), \(module.hasDWARF),
                                \(module.symbolsSHA256), \(symbolsSize), \(module.debugSHA256), \(debugSize), \(now))
                        ON CONFLICT (app_id, build_id) DO NOTHING RETURNING build_id
                        """)
                case .improve(let table, let debug, let expected):
                    if table {
                        let size = Int64(module.symbolsSize)
                        changed = try await db.exists("""
                            UPDATE module SET has_dwarf = \(module.hasDWARF), symbols_sha256 = \(module.symbolsSHA256), symbols_size = \(size)
                            WHERE app_id = \(appID) AND build_id = \(module.buildID) AND symbols_sha256 = \(expected) RETURNING build_id
                            """)
                    }
                    if debug, let sha256 = module.debugSHA256, let size = module.debugSize.map({ Int64($0) }) {
                        let added = try await db.exists("""
                            UPDATE module SET debug_sha256 = \(sha256), debug_size = \(size)
                            WHERE app_id = \(appID) AND build_id = \(module.buildID) AND debug_sha256 IS NULL RETURNING build_id
                            """)
                        changed = changed || added
                    }
                    if changed { result.improved.append(module.buildID) }
                case .keep:
                    break
                }
                if changed { result.stored.append(module.buildID) } else { result.alreadyPresent.append(module.buildID) }
            }
            try await Self.link(db, appID: appID, version: manifest.version, buildIDs: modules.map(\.buildID))
            return result
        }
    }

    public func states(appID: String, buildIDs: [String]) async throws -> [String: SymbolStore.ModuleState] {
        var states: [String: SymbolStore.ModuleState] = [:]
        for row in try await rows("""
            SELECT build_id, has_dwarf, symbols_sha256, debug_sha256 IS NOT NULL FROM module
            WHERE app_id = \(appID) AND build_id = ANY(\(buildIDs))
            """) {
            let (id, dwarf, sha256, debug) = try row.decode((String, Bool, String, Bool).self)
            states[id] = SymbolStore.ModuleState(hasDWARF: dwarf, symbolsSHA256: sha256, hasDebugFile: debug)
        }
        return states
    }

    public func versions(appID: String) async throws -> [SymbolStore.VersionSummary] {
        try await rows("""
            SELECT v.version, v.created,
                   (SELECT COUNT(*) FROM version_module m WHERE m.app_id = v.app_id AND m.version = v.version)
            FROM version v WHERE v.app_id = \(appID) ORDER BY v.created, v.version COLLATE "C"
            """).map {
            let (version, created, modules) = try $0.decode((String, String, Int).self)
            return SymbolStore.VersionSummary(version: version, modules: modules, created: created)
        }
    }

    public func modules(appID: String, version: String) async throws -> [SymbolStore.ModuleSummary]? {
        guard try await !rows("SELECT 1 FROM version WHERE app_id = \(appID) AND version = \(version)").isEmpty else { return nil }
        return try await rows("""
            SELECT m.build_id, m.name, m.arch, m.has_dwarf, m.debug_sha256 IS NOT NULL, m.symbols_size
            FROM version_module l JOIN module m ON m.app_id = l.app_id AND m.build_id = l.build_id
            WHERE l.app_id = \(appID) AND l.version = \(version) ORDER BY m.name COLLATE "C", m.build_id COLLATE "C"
            """).map {
            let (id, name, arch, dwarf, debug, size) = try $0.decode((String, String, String, Bool, Bool, Int64).self)
            return SymbolStore.ModuleSummary(buildID: id, name: name, arch: arch, hasDWARF: dwarf, hasDebugFile: debug, symbolsSize: size)
        }
    }

    public func debugFileObject(buildID: String) async throws -> String? {
        try await rows("SELECT debug_sha256 FROM module WHERE build_id = \(buildID) AND debug_sha256 IS NOT NULL LIMIT 1")
            .first.map { try $0.decode(String.self) }
    }

    public func table(appID: String, buildID: String) async throws -> (sha256: String, size: Int64)? {
        try await rows("SELECT symbols_sha256, symbols_size FROM module WHERE app_id = \(appID) AND build_id = \(buildID)")
            .first.map { try $0.decode((String, Int64).self) }
    }

    public func presentTables(appID: String, buildIDs: [String]) async throws -> Set<String> {
        Set(try await rows("SELECT build_id FROM module WHERE app_id = \(appID) AND build_id = ANY(\(buildIDs))").map {
            try $0.decode(String.self)
        })
    }

    public func reportTables(appID: String, buildIDs: Set<String>, names: Set<String>, version: String?) async throws -> ReportTables {
        var tables = ReportTables()
        if !buildIDs.isEmpty {
            for row in try await rows("""
                SELECT build_id, symbols_sha256 FROM module WHERE app_id = \(appID) AND build_id = ANY(\(Array(buildIDs)))
                """) {
                let (id, sha256) = try row.decode((String, String).self)
                tables.byBuildID[id] = sha256
            }
        }
        if let version, !names.isEmpty {
            for name in names { tables.byName[name] = [] }
            for row in try await rows("""
                SELECT m.name, m.build_id, m.symbols_sha256 FROM version_module l
                JOIN module m ON m.app_id = l.app_id AND m.build_id = l.build_id
                WHERE l.app_id = \(appID) AND l.version = \(version) AND m.name = ANY(\(Array(names))) ORDER BY m.build_id COLLATE "C"
                """) {
                let (name, id, sha256) = try row.decode((String, String, String).self)
                tables.byName[name, default: []].append((id, sha256))
            }
        }
        return tables
    }

    private static func ensureVersion(_ db: Transaction, appID: String, version: String, package: String, platform: String,
                                      now: String) async throws {
        try await db.rows("""
            INSERT INTO version (app_id, version, package, platform, created) VALUES (\(appID), \(version), \(package), \(platform), \(now))
            ON CONFLICT (app_id, version) DO NOTHING
            """)
    }

    private static func link(_ db: Transaction, appID: String, version: String, buildIDs: [String]) async throws {
        try await db.rows("""
            INSERT INTO version_module (app_id, version, build_id) SELECT \(appID), \(version), unnest(\(buildIDs)::text[])
            ON CONFLICT DO NOTHING
            """)
    }
}
