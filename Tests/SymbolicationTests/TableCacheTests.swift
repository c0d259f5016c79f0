import Foundation
import SymBytes
import SymELF
import SymReport
import SymTable
import Testing
@testable import Symbolication
import TestSupport

/// The persistent table cache as `ModuleSymbols(path:cache:)` uses it (the drop-in symbolizers'
/// `ModuleCache`, in SymLookup, opens every module through it): hits by build-id only, the same
/// answers as a conversion, nothing cached without a build-id or DWARF.
@Suite struct TableCacheTests {
    /// The GNU build-id of `path`, as readelf prints it.
    static func buildID(_ path: String) throws -> String {
        let text = try Tool.output("/usr/bin/readelf", ["-n", path])
        let line = try #require(text.split(separator: "\n").first { $0.contains("Build ID:") })
        return String(line.split(separator: " ").last!)
    }

    /// The conversion cache's key of `path` (no separate debug file): its build-id and identity.
    static func key(_ path: String) throws -> String {
        try #require(ModuleConverter.cacheKey(binary: ELFFile(path: path), debugFile: nil, decoder: .builtin))
    }

    /// Every third byte of every function nm lists in `path`.
    static func addresses(_ path: String) throws -> [UInt64] {
        let starts = try ConversionTests.textSymbols(path).values.sorted()
        var result: [UInt64] = []
        for (start, next) in zip(starts, starts.dropFirst()) where next - start < 1 << 16 {
            result += Swift.stride(from: start, to: next, by: 3)
        }
        return result
    }

    /// The frames of every address, as one comparable value.
    static func answers(_ symbols: ModuleSymbols, _ addresses: [UInt64]) throws -> [[SymbolicatedFrame]] {
        try addresses.map { address throws(FormatError) in try symbols.frames(at: address) }
    }

    /// The module at `path` opened through the table cache at `cache` (no system debug directory).
    static func open(_ cache: String, _ path: String) throws -> ModuleSymbols {
        try ModuleSymbols(path: path, locator: DebugFileLocator(includeSystemDirectory: false), cache: TableCache(directory: cache))
    }

    /// What an uncached conversion answers.
    static func uncached(_ path: String) throws -> ModuleSymbols {
        try ModuleSymbols(path: path, locator: DebugFileLocator(includeSystemDirectory: false), cache: nil)
    }

    @Test func aSecondProcessIsAnsweredFromTheCacheWithTheSameFrames() throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = directory + "/nested/cache"
        let app = directory + "/app"
        try FileManager.default.copyItem(atPath: Corpus.fixture("gcc-c-O2-dwarf5"), toPath: app)
        let table = TableCache(directory: cache).path(for: try Self.key(app))

        let first = try Self.open(cache, app)
        #expect(first.cachedPath == nil)
        #expect(FileManager.default.fileExists(atPath: table))
        let second = try Self.open(cache, app)
        #expect(second.cachedPath == table)

        let addresses = try Self.addresses(app)
        try #require(addresses.count > 100)
        let expected = try Self.answers(Self.uncached(app), addresses)
        #expect(try Self.answers(first, addresses) == expected)
        #expect(try Self.answers(second, addresses) == expected)
        #expect(expected.filter { $0.contains { !$0.file.isEmpty } }.count > 100)
    }

    @Test func aRebuiltFileWithAnotherBuildIDIsNotAnsweredFromTheStaleTable() throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = directory + "/cache"
        let app = directory + "/app"
        try FileManager.default.copyItem(atPath: Corpus.fixture("gcc-c-O2-dwarf5"), toPath: app)
        let oldID = try Self.buildID(app)
        let oldKey = try Self.key(app)
        _ = try Self.open(cache, app)

        // The same path, another build: its own table, not the cached one.
        try FileManager.default.removeItem(atPath: app)
        try FileManager.default.copyItem(atPath: Corpus.fixture("clang-c-O2-dwarf5"), toPath: app)
        let newID = try Self.buildID(app)
        let newKey = try Self.key(app)
        try #require(newID != oldID)
        // A stale table planted under the new build-id's name is refused too (its header says
        // the old build-id) and replaced by the right one.
        let tables = TableCache(directory: cache)
        try FileManager.default.copyItem(atPath: tables.path(for: oldKey), toPath: tables.path(for: newKey))
        let rebuilt = try Self.open(cache, app)
        #expect(rebuilt.cachedPath == nil)
        let addresses = try Self.addresses(app)
        let expected = try Self.answers(Self.uncached(app), addresses)
        #expect(try Self.answers(rebuilt, addresses) == expected)
        guard case .hit(let replaced) = TableCache(directory: cache).table(for: newKey) else {
            Issue.record("the stale table was not replaced")
            return
        }
        #expect(hexString(replaced.table.module.buildID) == newID)
        let again = try Self.open(cache, app)
        #expect(again.cachedPath == tables.path(for: newKey))
        #expect(try Self.answers(again, addresses) == expected)
    }

    @Test func withoutABuildIDNothingIsCached() throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = directory + "/cache"
        let app = directory + "/app"
        #expect(try ReportFixtures.run("/usr/bin/objcopy", ["--remove-section=.note.gnu.build-id",
                                                            Corpus.fixture("gcc-c-O2-dwarf5"), app]) == 0)
        let symbols = try Self.open(cache, app)
        #expect(symbols.cachedPath == nil)
        #expect(!FileManager.default.fileExists(atPath: cache))
        let addresses = try Self.addresses(app)
        #expect(try Self.answers(symbols, addresses) == Self.answers(Self.uncached(app), addresses))
    }

    /// A stripped twin shares the build-id of its DWARF-carrying original; uncached it is
    /// answered from its symbol table alone, so the cached table must not answer it either.
    @Test func aTwinWithoutDWARFIsNotAnsweredFromTheCache() throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = directory + "/cache"
        _ = try Self.open(cache, Corpus.fixture("gcc-c-O2-dwarf5"))
        let stripped = Corpus.fixture("gcc-c-O2-dwarf5-strip-debug")
        #expect(FileManager.default.fileExists(atPath: TableCache(directory: cache).path(for: try Self.key(Corpus.fixture("gcc-c-O2-dwarf5")))))
        let symbols = try Self.open(cache, stripped)
        #expect(symbols.cachedPath == nil)
        let addresses = try Self.addresses(stripped)
        let answers = try Self.answers(symbols, addresses)
        #expect(answers == (try Self.answers(Self.uncached(stripped), addresses)))
        #expect(answers.allSatisfy { $0.allSatisfy { $0.file.isEmpty } })
    }

    /// A table cached by an older conversion (same build-id, other contents: here the symbols-only
    /// table of the stripped twin) is never read: the module is converted again, the new table
    /// stored under the current version's name and the stale one removed.
    @Test func aTableOfAnOlderConverterVersionIsIgnoredAndReplaced() throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = directory + "/cache"
        let app = Corpus.fixture("gcc-c-O2-dwarf5")
        let id = try Self.buildID(app)
        let key = try Self.key(app)
        let staleBytes = try ModuleConverter.table(binary: ELFFile(path: Corpus.fixture("gcc-c-O2-dwarf5-strip-debug")))
        let stale = ModuleSymbols(table: try SymbolTable(bytes: staleBytes))
        try #require(hexString(stale.table.module.buildID) == id)
        let current = TableCache(directory: cache)
        #expect(current.converterVersion == ModuleConverter.version && current.converterVersion >= 2)
        // Newest first: storing a version removes the ones before it.
        for version in (1..<current.converterVersion).reversed() {
            let older = TableCache(directory: cache, converterVersion: version)
            #expect(older.path(for: key) != current.path(for: key))
            try older.store(staleBytes, key: key)
        }
        #expect(FileManager.default.fileExists(atPath: cache + "/\(key).csym"))
        guard case .absent = current.table(for: key) else {
            Issue.record("a table of an older converter version was read")
            return
        }

        let symbols = try Self.open(cache, app)
        #expect(symbols.cachedPath == nil)
        let addresses = try Self.addresses(app)
        let expected = try Self.answers(Self.uncached(app), addresses)
        #expect(try Self.answers(symbols, addresses) == expected)
        #expect(try Self.answers(stale, addresses) != expected)
        // Replaced: only the current version's table is left, and the next process reads it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache) == [ReportModule.fileName(of: current.path(for: key))])
        let again = try Self.open(cache, app)
        #expect(again.cachedPath == current.path(for: key))
        #expect(try Self.answers(again, addresses) == expected)

        // symbolicate reads the same cache by the same key.
        try FileManager.default.removeItem(atPath: current.path(for: key))
        try TableCache(directory: cache, converterVersion: 1).store(staleBytes, key: key)
        let address = try #require(zip(addresses, expected).first { !$0.1.isEmpty && !$0.1[0].file.isEmpty }?.0)
        let hexAddress = String(address, radix: 16)
        let report = try CrashReport.parse("    #0 0x\(hexAddress) (\(app)+0x\(hexAddress)) (BuildId: \(id))\n")
        let sources = SymbolSources(locator: DebugFileLocator(includeSystemDirectory: false), cacheDirectory: cache)
        let first = Symbolicator(sources: sources).symbolicate(report).frames[0][0]
        #expect(first.source == app)
        #expect(FileManager.default.fileExists(atPath: current.path(for: key)))
        #expect(!FileManager.default.fileExists(atPath: cache + "/\(key).csym"))
        let second = Symbolicator(sources: sources).symbolicate(report).frames[0][0]
        #expect(second.source == current.path(for: key))
        #expect(second.locations == first.locations)
        #expect(first.locations.map(\.file) == expected[addresses.firstIndex(of: address)!].map(\.file))
    }

    @Test func anUnreadableCacheFileIsConvertedAgainAndReplaced() throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = directory + "/cache"
        let app = Corpus.fixture("gcc-c-O2-dwarf5")
        let table = TableCache(directory: cache).path(for: try Self.key(app))
        try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
        for damage in [Data(), Data("CSYM but not really a table".utf8)] {
            try damage.write(to: URL(fileURLWithPath: table))
            let symbols = try Self.open(cache, app)
            #expect(symbols.cachedPath == nil)
            #expect(try Self.open(cache, app).cachedPath == table)
        }
    }
}

/// Issue 19 item 23: a table is keyed by the build-id and the identity of the files converted, so
/// a hostile file carrying a genuine build-id cannot have its table answer for the genuine file.
@Suite struct TableCacheIdentityTests {
    /// `other`'s bytes with its build-id note's descriptor replaced by `genuine`'s build-id.
    static func hostile(carrying genuine: String, in other: String, to path: String) throws {
        let genuineID = try #require(try ELFFile(path: genuine).buildID)
        let otherID = try #require(try ELFFile(path: other).buildID)
        try #require(genuineID.count == otherID.count && genuineID != otherID)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: other)))
        let start = try #require((0...(bytes.count - otherID.count)).first { bytes[$0..<($0 + otherID.count)].elementsEqual(otherID) })
        bytes.replaceSubrange(start..<(start + otherID.count), with: genuineID)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        try #require(try ELFFile(path: path).buildID == genuineID)
    }

    @Test(arguments: [true, false])
    func aHostileFileWithAGenuineBuildIDDoesNotPoisonTheCache(hostileFirst: Bool) throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cache = directory + "/cache"
        let genuine = directory + "/genuine"
        let hostile = directory + "/hostile"
        try FileManager.default.copyItem(atPath: Corpus.fixture("gcc-c-O2-dwarf5"), toPath: genuine)
        try Self.hostile(carrying: genuine, in: Corpus.fixture("clang-cpp-O2-dwarf5"), to: hostile)
        try #require(try TableCacheTests.buildID(genuine) == TableCacheTests.buildID(hostile))

        let order = hostileFirst ? [hostile, genuine] : [genuine, hostile]
        for path in order {
            let symbols = try TableCacheTests.open(cache, path)
            #expect(symbols.cachedPath == nil, "\(path) answered from another file's table")
            let addresses = try TableCacheTests.addresses(path)
            try #require(addresses.count > 50)
            let expected = try TableCacheTests.answers(TableCacheTests.uncached(path), addresses)
            #expect(try TableCacheTests.answers(symbols, addresses) == expected)
            #expect(expected.contains { $0.contains { !$0.file.isEmpty } })
        }
        // Each file keeps its own table, and a second run of each is a hit on it.
        let tables = TableCache(directory: cache)
        #expect(try TableCacheTests.key(genuine) != TableCacheTests.key(hostile))
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache).count == 2)
        for path in order {
            let again = try TableCacheTests.open(cache, path)
            #expect(again.cachedPath == tables.path(for: try TableCacheTests.key(path)))
            let addresses = try TableCacheTests.addresses(path)
            #expect(try TableCacheTests.answers(again, addresses) == TableCacheTests.answers(TableCacheTests.uncached(path), addresses))
        }
    }
}
