import Foundation
import SymReport
import Testing
@testable import Symbolication

/// The grouping fixtures of Fixtures/grouping (see its README): real crash reports of five bugs,
/// each crashed in several builds, and the builds' binaries.
enum GroupingFixtures {
    static let directory = Corpus.root.appendingPathComponent("Fixtures/grouping").path

    /// The five bugs of `src/app.c` and `src/app-v2.c`.
    static let bugs = ["header", "config", "assert", "null", "uaf"]

    /// One captured report.
    struct Report: CustomTestStringConvertible, Sendable {
        /// The file name under `reports/`.
        let file: String
        /// The build directory (`v1-gcc-O2`).
        let build: String
        /// The bug (`header`).
        let bug: String
        var testDescription: String { file }
    }

    /// Every report under `reports/`, named `<build>-<bug>[-run2].txt`.
    static let reports: [Report] = {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory + "/reports")) ?? []
        return files.sorted().compactMap { file in
            guard file.hasSuffix(".txt") else { return nil }
            var stem = String(file.dropLast(4))
            if stem.hasSuffix("-run2") { stem = String(stem.dropLast(5)) }
            guard let dash = stem.lastIndex(of: "-") else { return nil }
            let bug = String(stem[stem.index(after: dash)...])
            guard bugs.contains(bug) else { return nil }
            return Report(file: file, build: String(stem[..<dash]), bug: bug)
        }
    }()

    /// Sources that see only the report's own build (glibc reports name modules without a
    /// build-id: they are matched by file name, and every build has an `app`), plus, when asked,
    /// this machine's C library and its separate debug file (libc6-dbg).
    static func sources(for report: Report, withSystemSymbols: Bool = false) -> SymbolSources {
        SymbolSources(searchPaths: [directory + "/" + report.build], useModulePaths: withSystemSymbols,
                      locator: DebugFileLocator(debugDirectories: [], includeSystemDirectory: withSystemSymbols),
                      cacheDirectory: withSystemSymbols ? systemSymbolsCache : nil)
    }

    /// Where the C library's converted table is kept between reports (converting it takes
    /// seconds); a fresh directory per test process.
    static let systemSymbolsCache: String = {
        let path = NSTemporaryDirectory() + "crashsym-grouping-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    /// The report symbolicated with the engine.
    static func symbolicated(_ report: Report, withSystemSymbols: Bool = false) throws -> SymbolicatedReport {
        let text = try String(contentsOfFile: directory + "/reports/" + report.file, encoding: .utf8)
        let parsed = try CrashReport.parse(text)
        return Symbolicator(sources: sources(for: report, withSystemSymbols: withSystemSymbols)).symbolicate(parsed)
    }
}
