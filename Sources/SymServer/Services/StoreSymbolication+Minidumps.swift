import SymBytes
import SymCore
import SymReport
import Symbolication

extension StoreSymbolication.Wanted {
    /// The tables a minidump needs: its modules by code id (for an ELF module, its build-id; other
    /// ids match no table), and by file name, as the report names them, those without one.
    init(_ dump: Minidump) {
        buildIDs = Set(dump.modules.compactMap { $0.codeID.map(hexString) })
        names = Set(dump.modules.filter { $0.codeID == nil }.map { ReportModule(path: $0.name).name })
    }
}

extension StoreSymbolication {
    /// Walks and symbolicates a minidump with the tables found for it (`storedTablesNow` or
    /// `storedTables`), on the calling thread: the engine walks each thread with the CFI the tables
    /// carry (`.csym` v4) and symbolicates, as `crashsym symbolicate` does a minidump.
    /// More than `maximumFrames` frames in all is a `limitExceeded` `FormatError`, thrown before
    /// the rest of the threads are walked.
    func symbolicateNow(minidump dump: Minidump, appID: String, version: String?, maximumFrames: Int = .max,
                        renderings: LocationChain.Renderings, stored: ReportTables) throws -> SymbolicatedReport {
        try Symbolicator(providers: [try provider(appID: appID, version: version, stored: stored)],
                         conversion: ConversionSettings(tableCache: nil), renderings: renderings)
            .symbolicate(minidump: dump, path: "minidump", maximumFrames: maximumFrames)
    }
}
