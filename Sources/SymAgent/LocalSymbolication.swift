import SymBytes
import SymReport
import Symbolication
import Synchronization

/// `--symbols`: reports symbolicated on the host before they are sent, for hosts whose debug
/// files never leave them. The engine and the symbol search are `crashsym symbolicate
/// --symbols`'s (one `Symbolicator` over `SymbolSources`), and what is sent is its JSON
/// (docs/crash-report.md), so the server stores the report with its frames resolved.
public final class LocalSymbolication: Sendable {
    /// One for the agent's life: the modules it keeps are the most recently used (the
    /// Symbolicator's bound), however many builds the host's crashes name.
    let symbolicator: Symbolicator

    /// Symbols from `searchPaths` (directories of `.csym` tables, ELF files or `.build-id` trees,
    /// or such files), then the places `crashsym symbolicate` looks; ELF files converted once into
    /// `cacheDirectory`.
    public init(searchPaths: [String], cacheDirectory: String) {
        symbolicator = Symbolicator(sources: SymbolSources(searchPaths: searchPaths, cacheDirectory: cacheDirectory),
                                    renderings: .json)
    }

    /// The report in the file at `path` (of `format`, else detected) symbolicated, as crashsym
    /// JSON; the reading or parsing error when it is not a report crashsym reads.
    public func json(ofFile path: String, format: ReportFormat?) -> Result<[UInt8], FormatError> {
        let result = Mutex<Result<[UInt8], FormatError>>(.failure(FormatError(.invalidValue, "\(path): not symbolicated")))
        symbolicator.symbolicateFiles([path], inputFormat: format, jobs: 1, render: { report in
            var bytes: [UInt8] = []
            ReportWriter.writeJSON(report, into: &bytes)
            return bytes
        }, emit: { _, outcome in result.withLock { $0 = outcome } })
        return result.withLock { $0 }
    }

    /// The report of the core at `path` (`crashsym agent capture`'s), walked and symbolicated
    /// here, as crashsym JSON (`CoreSpool.reportJSON`).
    public func json(ofCore path: String) -> [UInt8] {
        CoreSpool.reportJSON(ofCore: path, symbolicator: symbolicator)
    }
}
