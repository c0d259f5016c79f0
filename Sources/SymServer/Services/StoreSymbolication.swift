import Foundation
import NIOPosix
import SymReport
import Symbolication

/// The server's one call into the symbolication engine: the app's tables from the store, then
/// the engine exactly as `crashsym symbolicate` runs it (address rules, build-id checks and
/// inline chains are the engine's, never decided here).
///
/// Fetch first, then look up: the tables a report needs are found in the metadata store (by
/// build-id, or by name among the tables of the crash's version for modules reported without
/// one), then the engine symbolicates synchronously on the thread pool, opening them through the
/// shared `OpenedTableCache` (`--table-cache-mb`).
struct StoreSymbolication: Sendable {
    let crashes: CrashStore
    let objects: any ObjectStore
    /// Opened tables shared by every request, bounded in bytes, least recently used dropped first.
    let tables: OpenedTableCache

    init(crashes: CrashStore, objects: any ObjectStore, tableCacheBytes: Int) {
        self.crashes = crashes
        self.objects = objects
        tables = OpenedTableCache(budget: tableCacheBytes)
    }

    /// Symbolicates `report` with the tables of app `appID` (`version`: the crash's version, for
    /// modules without a build-id), rendered for `renderings`, on the thread pool.
    func symbolicate(_ report: CrashReport, appID: String, version: String?,
                     renderings: LocationChain.Renderings) async throws -> SymbolicatedReport {
        try await NIOThreadPool.singleton.runIfActive {
            try symbolicateNow(report, appID: appID, version: version, renderings: renderings)
        }
    }

    /// `symbolicate`, on the calling thread: the store is read and the engine runs here, so a
    /// request that parses, symbolicates and renders does it in one thread-pool job.
    func symbolicateNow(_ report: CrashReport, appID: String, version: String?,
                        renderings: LocationChain.Renderings) throws -> SymbolicatedReport {
        let buildIDs = Set(report.modules.compactMap(\.buildID))
        let names = Set(report.modules.filter { $0.buildID == nil }.map(\.name))
        let stored = try crashes.tablesNow(appID: appID, buildIDs: buildIDs, names: names, version: version)
        let found = StoreSymbolProvider.Found(
            byBuildID: try stored.byBuildID.mapValues { try objects.localFile(sha256: $0) },
            byName: try stored.byName.mapValues { try $0.map { (buildID: $0.buildID, path: try objects.localFile(sha256: $0.sha256)) } })
        let provider = StoreSymbolProvider(appID: appID, version: version, found: found, tables: tables)
        return Symbolicator(providers: [provider], conversion: ConversionSettings(tableCache: nil), renderings: renderings)
            .symbolicate(report)
    }
}

/// The server's symbol provider: the app's stored tables, fetched before the engine asks
/// (`StoreSymbolication`), opened through the shared cache. Candidates name a table by its
/// URL in the API (`/api/v1/apps/{app}/symbols/{build-id}`), never by a path on the server.
struct StoreSymbolProvider: SymbolProvider {
    /// The tables found for one report.
    struct Found: Sendable {
        /// Object path by build-id.
        var byBuildID: [String: String] = [:]
        /// The version's tables by module name (for modules without a build-id).
        var byName: [String: [(buildID: String, path: String)]] = [:]
    }

    static let source = SymbolCandidate.Source(rawValue: "store")
    let appID: String
    let version: String?
    let found: Found
    let tables: OpenedTableCache

    func find(_ module: ModuleQuery) -> SymbolAnswer {
        if let id = module.buildID {
            guard let path = found.byBuildID[id] else {
                return .notFound([SymbolCandidate(source: Self.source, location: location(id), outcome: .absent)])
            }
            return answer(module, path: path, buildID: id)
        }
        let candidates = found.byName[module.name] ?? []
        switch candidates.count {
        case 0:
            return .notFound([SymbolCandidate(source: Self.source, location: location(nil),
                                              outcome: .noMatchingFile(buildID: nil, name: module.name))])
        case 1:
            return answer(module, path: candidates[0].path, buildID: candidates[0].buildID)
        default:
            // Several uploaded modules of the version share the name: ambiguous, not guessed.
            return .notFound(candidates.map {
                SymbolCandidate(source: Self.source, location: location($0.buildID),
                                outcome: .unreadable(reason: "one of \(candidates.count) modules named \(module.name) in version \(version ?? "?"): ambiguous, not guessed"))
            })
        }
    }

    private func answer(_ module: ModuleQuery, path: String, buildID: String) -> SymbolAnswer {
        var inspection = module.inspect(path, source: Self.source, tables: tables)
        inspection.candidate.location = location(buildID)
        return inspection.answer
    }

    /// Where a table lives for API clients.
    private func location(_ buildID: String?) -> String {
        "/api/v1/apps/\(appID)/symbols" + (buildID.map { "/" + $0 } ?? (version.map { "?version=" + $0 } ?? ""))
    }
}
