import SymBytes
import SymCore
import SymReport
import Symbolication

extension StoreSymbolication {
    /// Walks and symbolicates a minidump with the tables of app `appID`, on the calling thread:
    /// the tables of every module are fetched first (by the module's code id, which for an ELF
    /// module is its build-id; other ids match no table), then the engine walks each thread with
    /// the CFI the tables carry (`.csym` v4) and symbolicates, as `crashsym symbolicate` does a
    /// minidump.
    func symbolicateNow(minidump dump: Minidump, appID: String, version: String?,
                        renderings: LocationChain.Renderings) throws -> SymbolicatedReport {
        let buildIDs = Set(dump.modules.compactMap { $0.codeID.map(hexString) })
        // Modules without an id are matched by file name, as the report names them.
        let names = Set(dump.modules.filter { $0.codeID == nil }.map { ReportModule(path: $0.name).name })
        let stored = try crashes.tablesNow(appID: appID, buildIDs: buildIDs, names: names, version: version)
        let found = StoreSymbolProvider.Found(
            byBuildID: stored.byBuildID.mapValues { objects.path(sha256: $0) },
            byName: stored.byName.mapValues { $0.map { (buildID: $0.buildID, path: objects.path(sha256: $0.sha256)) } })
        let provider = StoreSymbolProvider(appID: appID, version: version, found: found, tables: tables)
        return try Symbolicator(providers: [provider], conversion: ConversionSettings(tableCache: nil), renderings: renderings)
            .symbolicate(minidump: dump, path: "minidump")
    }
}
