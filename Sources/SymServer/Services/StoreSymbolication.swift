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
    let metadata: any MetadataStore
    let objects: any ObjectStore
    /// Opened tables shared by every request, bounded in bytes, least recently used dropped first.
    let tables: OpenedTableCache
    /// The tables of build-ids recently named by `POST …/symbolicate` and `GET …/symbolicate`
    /// requests (`requestTables`).
    let remembered = ReportTablesCache()

    init(metadata: any MetadataStore, objects: any ObjectStore, tableCacheBytes: Int) {
        self.metadata = metadata
        self.objects = objects
        tables = OpenedTableCache(budget: tableCacheBytes)
    }

    /// Symbolicates `report` with the tables of app `appID` (`version`: the crash's version, for
    /// modules without a build-id), rendered for `renderings`, on the thread pool.
    func symbolicate(_ report: CrashReport, appID: String, version: String?,
                     renderings: LocationChain.Renderings) async throws -> SymbolicatedReport {
        let stored: ReportTables? = metadata.immediateTables == nil
            ? try await storedTables(for: report, appID: appID, version: version) : nil
        return try await NIOThreadPool.singleton.runIfActive {
            guard let stored = try stored ?? storedTablesNow(for: report, appID: appID, version: version) else {
                throw StoreError.unavailable("the metadata store reads no tables synchronously")
            }
            return try symbolicateNow(report, appID: appID, version: version, renderings: renderings, stored: stored)
        }
    }

    /// The tables a crash needs: the build-ids of its modules, and the names of those without one.
    struct Wanted: Sendable {
        var buildIDs: Set<String>
        var names: Set<String>

        init(_ report: CrashReport) {
            buildIDs = Set(report.modules.compactMap(\.buildID))
            names = Set(report.modules.filter { $0.buildID == nil }.map(\.name))
        }

        init(buildIDs: Set<String>) {
            self.buildIDs = buildIDs
            names = []
        }
    }

    /// The tables `report` needs, read on the calling thread (a thread-pool thread); nil when the
    /// metadata store cannot read synchronously (use `storedTables` before the thread-pool job).
    func storedTablesNow(for report: CrashReport, appID: String, version: String?) throws -> ReportTables? {
        try storedTablesNow(Wanted(report), appID: appID, version: version)
    }

    /// The `wanted` tables, read on the calling thread; nil when the store cannot read synchronously.
    func storedTablesNow(_ wanted: Wanted, appID: String, version: String?) throws -> ReportTables? {
        guard let reader = metadata.immediateTables else { return nil }
        return try reader.reportTablesNow(appID: appID, buildIDs: wanted.buildIDs, names: wanted.names, version: version)
    }

    /// The tables `report` needs, read asynchronously.
    func storedTables(for report: CrashReport, appID: String, version: String?) async throws -> ReportTables {
        try await storedTables(Wanted(report), appID: appID, version: version)
    }

    /// The `wanted` tables, read asynchronously.
    func storedTables(_ wanted: Wanted, appID: String, version: String?) async throws -> ReportTables {
        try await metadata.reportTables(appID: appID, buildIDs: wanted.buildIDs, names: wanted.names, version: version)
    }

    /// The tables `report` needs for a symbolication request: remembered for its build-ids
    /// (`ReportTablesCache`), else read on the calling thread; nil when the store cannot read
    /// synchronously (then `requestTables`).
    func requestTablesNow(for report: CrashReport, appID: String, version: String?) throws -> ReportTables? {
        try requestTablesNow(Wanted(report), appID: appID, version: version)
    }

    /// The `wanted` tables for a request (`requestTablesNow(for:…)`).
    func requestTablesNow(_ wanted: Wanted, appID: String, version: String?) throws -> ReportTables? {
        guard wanted.names.isEmpty else { return try storedTablesNow(wanted, appID: appID, version: version) }
        if let known = remembered.tables(appID: appID, buildIDs: wanted.buildIDs) { return known }
        let generation = remembered.generation
        guard let found = try storedTablesNow(wanted, appID: appID, version: version) else { return nil }
        remembered.remember(appID: appID, buildIDs: wanted.buildIDs, found: found, generation: generation)
        return found
    }

    /// `requestTablesNow`, reading the store asynchronously.
    func requestTables(for report: CrashReport, appID: String, version: String?) async throws -> ReportTables {
        try await requestTables(Wanted(report), appID: appID, version: version)
    }

    /// The `wanted` tables for a request, reading the store asynchronously.
    func requestTables(_ wanted: Wanted, appID: String, version: String?) async throws -> ReportTables {
        guard wanted.names.isEmpty else { return try await storedTables(wanted, appID: appID, version: version) }
        if let known = remembered.tables(appID: appID, buildIDs: wanted.buildIDs) { return known }
        let generation = remembered.generation
        let found = try await storedTables(wanted, appID: appID, version: version)
        remembered.remember(appID: appID, buildIDs: wanted.buildIDs, found: found, generation: generation)
        return found
    }

    /// `symbolicate` with the tables found (`storedTablesNow` or `storedTables`), on the calling
    /// thread, so that a request that parses, symbolicates and renders does it in one thread-pool job.
    func symbolicateNow(_ report: CrashReport, appID: String, version: String?,
                        renderings: LocationChain.Renderings, stored: ReportTables) throws -> SymbolicatedReport {
        Symbolicator(providers: [try provider(appID: appID, version: version, stored: stored)],
                     conversion: ConversionSettings(tableCache: nil), renderings: renderings)
            .symbolicate(report)
    }

    /// The frames of each address of table `buildID` of app `appID`, as `crashsym lookup
    /// --format json` prints them (`GET …/symbolicate`); nil when the app has no such table.
    /// The table is found as `POST …/symbolicate` finds its tables (remembered, else read on the
    /// thread pool, `requestTablesNow`), so that a warm lookup is one thread-pool job and no
    /// read of the metadata store.
    func lookup(appID: String, buildID: String, addresses: [UInt64]) async throws -> [UInt8]? {
        let wanted = Wanted(buildIDs: [buildID])
        let first = try await NIOThreadPool.singleton.runIfActive { () throws -> Lookup in
            guard let stored = try requestTablesNow(wanted, appID: appID, version: nil) else { return .unread }
            return .done(try lookupNow(stored.byBuildID[buildID], buildID: buildID, addresses: addresses))
        }
        if case .done(let bytes) = first { return bytes }
        let stored = try await requestTables(wanted, appID: appID, version: nil)
        return try await NIOThreadPool.singleton.runIfActive {
            try lookupNow(stored.byBuildID[buildID], buildID: buildID, addresses: addresses)
        }
    }

    /// How far the first thread-pool job of a lookup got.
    private enum Lookup: Sendable {
        case done([UInt8]?)
        /// The store reads nothing synchronously: the table is read before a second job.
        case unread
    }

    /// `lookup` with the table object found (nil: none), on the calling thread.
    private func lookupNow(_ sha256: String?, buildID: String, addresses: [UInt64]) throws -> [UInt8]? {
        guard let sha256 else { return nil }
        let path = try objects.localFile(sha256: sha256)
        let symbols: ModuleSymbols
        do {
            symbols = try tables.table(at: path)  // opened once, shared with symbolication
        } catch {
            throw ServerError(.internal, "cannot read the table of \(buildID): \(error)")
        }
        // Names rendered by earlier requests are kept with the table: not rendered again.
        var renderer = FrameRenderer(table: symbols.table, strings: symbols.renderedStrings(style: .json))
        var bytes: [UInt8] = []
        bytes.reserveCapacity(addresses.count * 256)
        for address in addresses {
            do { try renderer.render(address, into: &bytes) } catch {
                throw ServerError(.internal, "the table of \(buildID) is corrupt: \(error)")
            }
        }
        return bytes
    }

    /// The store's provider over the tables found for one crash, each made local first (the
    /// object store may be remote: its `StoreError` is thrown).
    func provider(appID: String, version: String?, stored: ReportTables) throws -> StoreSymbolProvider {
        let found = StoreSymbolProvider.Found(
            byBuildID: try stored.byBuildID.mapValues { try objects.localFile(sha256: $0) },
            byName: try stored.byName.mapValues { try $0.map { (buildID: $0.buildID, path: try objects.localFile(sha256: $0.sha256)) } })
        return StoreSymbolProvider(appID: appID, version: version, found: found, tables: tables)
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
                                outcome: .ambiguous(name: module.name, count: candidates.count))
            })
        }
    }

    /// The stored table at `path`, checked against the module. Stored tables are `.csym` files
    /// (uploads are validated), so the file is not sniffed as `ModuleQuery.inspect` does: that
    /// read its first bytes for every module of every request.
    private func answer(_ module: ModuleQuery, path: String, buildID: String) -> SymbolAnswer {
        let location = location(buildID)
        do {
            let symbols = try tables.table(at: path)
            let candidate = module.check(symbols, at: location, source: Self.source)
            guard case .matched = candidate.outcome else { return .notFound([candidate]) }
            return SymbolAnswer(table: symbols, tableLocation: location, candidates: [candidate])
        } catch {
            return .notFound([SymbolCandidate(source: Self.source, location: location, outcome: .unreadable(reason: "\(error)"))])
        }
    }

    /// Where a table lives for API clients.
    private func location(_ buildID: String?) -> String {
        "/api/v1/apps/\(appID)/symbols" + (buildID.map { "/" + $0 } ?? (version.map { "?version=" + $0 } ?? ""))
    }
}
