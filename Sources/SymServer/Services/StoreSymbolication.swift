import Foundation
import NIOPosix
import SymReport
import Symbolication
#if canImport(Glibc)
import Glibc
#endif

/// The server's one call into the symbolication engine: the app's tables from the store, then
/// the engine exactly as `crashsym symbolicate` runs it (address rules, build-id checks and
/// inline chains are the engine's, never decided here).
///
/// Fetch first, then look up: the tables a report needs are found in the store (by build-id, or
/// by name among the tables of the crash's version for modules reported without one), then the
/// engine symbolicates synchronously on the thread pool.
struct StoreSymbolication: Sendable {
    let crashes: CrashStore
    let objects: ObjectStore

    /// Where the tables of the current request are named `<sha256>.csym` for the engine (links to
    /// the objects; scratch, recreated as needed).
    private var linkDirectory: String { objects.temporaryDirectory + "/tables" }

    /// Symbolicates `report` with the tables of app `appID` (`version`: the crash's version, for
    /// modules without a build-id), rendered for `renderings`.
    func symbolicate(_ report: CrashReport, appID: String, version: String?,
                     renderings: LocationChain.Renderings) async throws -> SymbolicatedReport {
        var objectsFound: [String] = []
        for module in report.modules {
            if let id = module.buildID {
                if let table = try await crashes.table(appID: appID, buildID: id) { objectsFound.append(table.sha256) }
            } else if let version {
                // Several uploaded modules of the version with this name: ambiguous, not guessed.
                let candidates = try await crashes.tables(appID: appID, version: version, named: module.name)
                if candidates.count == 1 { objectsFound.append(candidates[0].sha256) }
            }
        }
        var paths: [String] = []
        for sha256 in Set(objectsFound).sorted() { paths.append(try link(sha256)) }
        let sources = SymbolSources(searchPaths: paths, useModulePaths: false,
                                    locator: DebugFileLocator(includeSystemDirectory: false), cacheDirectory: nil)
        return try await NIOThreadPool.singleton.runIfActive {
            Symbolicator(sources: sources, renderings: renderings).symbolicate(report)
        }
    }

    /// The path of the table object `sha256` under a `.csym` name.
    private func link(_ sha256: String) throws -> String {
        let path = linkDirectory + "/" + sha256 + ".csym"
        if symlink(objects.path(sha256: sha256), path) == 0 || errno == EEXIST { return path }
        if errno == ENOENT {
            try ObjectStore.makeDirectory(linkDirectory)
            if symlink(objects.path(sha256: sha256), path) == 0 || errno == EEXIST { return path }
        }
        throw StoreError.unavailable("cannot link table \(sha256): \(String(cString: strerror(errno)))")
    }
}
