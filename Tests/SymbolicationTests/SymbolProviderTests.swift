import Foundation
import SymBytes
import SymELF
import SymReport
import Testing
@testable import Symbolication

/// The symbol-provider seam: any provider (a table file at any path, an open table, ELF files)
/// feeds the one engine, which checks what it is handed; the chain asks in order; candidates
/// are data that `--explain` renders.
@Suite struct SymbolProviderTests {
    static let libraryID = "e3ae0ff073c26f50bba089c0323f76a4f9493774"
    static let library = ReportFixtures.binaries + "/libfault-asan.so"

    /// A provider answering from tables at paths it chooses (as the server's content-addressed
    /// store does), by build-id.
    struct TableFileProvider: SymbolProvider {
        let paths: [String: String]
        let tables: OpenedTableCache?

        func find(_ module: ModuleQuery) -> SymbolAnswer {
            guard let id = module.buildID, let path = paths[id] else {
                return .notFound([SymbolCandidate(source: .init(rawValue: "store"), location: module.buildID ?? module.name,
                                                  outcome: .absent)])
            }
            return module.table(at: path, source: .init(rawValue: "store"), opening: tables)
        }
    }

    /// A provider handing out one open table for any module, whatever its build-id.
    struct OpenTableProvider: SymbolProvider {
        let table: ModuleSymbols
        func find(_ module: ModuleQuery) -> SymbolAnswer { .table(table, at: "memory") }
    }

    /// A provider handing out ELF files for the engine to convert.
    struct ObjectProvider: SymbolProvider {
        let path: String
        func find(_ module: ModuleQuery) -> SymbolAnswer {
            (try? ELFFile(path: path)).map { .objects([$0]) } ?? .notFound([])
        }
    }

    /// A content-addressed object (no `.csym` suffix) holding the library's table.
    static func storedTable(in directory: String) throws -> String {
        let path = directory + "/objects/ab/" + String(repeating: "c", count: 62)
        try FileManager.default.createDirectory(atPath: directory + "/objects/ab", withIntermediateDirectories: true)
        try Data(try ModuleConverter.table(binary: try ELFFile(path: library))).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func aProviderAnswersFromATableFileAtAnyPathAsTheCLIDoes() throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let stored = try Self.storedTable(in: directory)
        let report = try CrashReport.parse(try ReportFixtures.text("asan-use-after-free.txt"))
        let cli = Symbolicator(sources: ReportFixtures.isolatedSources()).symbolicate(report)

        let tables = OpenedTableCache(budget: 1 << 30)
        let server = Symbolicator(providers: [TableFileProvider(paths: [Self.libraryID: stored], tables: tables)])
            .symbolicate(report)
        let module = try #require(report.modules.firstIndex { $0.buildID == Self.libraryID })
        var compared = 0
        for (s, stack) in report.stacks.enumerated() {
            for (f, frame) in stack.frames.enumerated() {
                if frame.module == module {
                    #expect(server.frames[s][f].status == .ok)
                    #expect(server.frames[s][f].source == stored)
                    #expect(server.frames[s][f].locations == cli.frames[s][f].locations)
                    #expect(server.frames[s][f].lookupAddress == cli.frames[s][f].lookupAddress)
                    compared += 1
                } else if frame.module != nil {
                    // Not in the store: not found, and the candidate says where it was looked for.
                    #expect(server.frames[s][f].status == .noSymbols)
                    #expect(server.frames[s][f].explanation.allSatisfy { $0.hasPrefix("store ") && $0.hasSuffix(": not found") })
                }
            }
        }
        #expect(compared > 0)
        #expect(tables.count == 1 && tables.contains(stored))
    }

    @Test func anOpenTableOfAnotherBuildIsRefusedByTheEngine() throws {
        let other = try ModuleSymbols(path: ReportFixtures.binaries + "/prog-asan", cache: nil)
        let report = try CrashReport.parse(try ReportFixtures.text("asan-use-after-free.txt"))
        let result = Symbolicator(providers: [OpenTableProvider(table: other)]).symbolicate(report)
        let frame = result.frames[0][0]
        #expect(frame.status == .buildIDMismatch)
        #expect(frame.reason == "memory is for build-id \(hexString(other.table.module.buildID)), the report says \(Self.libraryID)")
        #expect(frame.locations.isEmpty)
        // An open table of the right build answers.
        let right = try ModuleSymbols(path: Self.library, cache: nil)
        let answered = Symbolicator(providers: [OpenTableProvider(table: right)]).symbolicate(report)
        #expect(answered.frames[0][0].status == .ok && answered.frames[0][0].source == "memory")
    }

    @Test func theChainAsksInOrderAndKeepsEveryCandidate() throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let stored = try Self.storedTable(in: directory)
        let report = try CrashReport.parse(try ReportFixtures.text("asan-use-after-free.txt"))
        let empty = TableFileProvider(paths: [:], tables: nil)
        let full = TableFileProvider(paths: [Self.libraryID: stored], tables: nil)
        let result = Symbolicator(providers: [empty, full, SymbolPathProvider(path: directory + "/none")]).symbolicate(report)
        #expect(result.frames[0][0].source == stored)
        let answer = SymbolProviderChain([empty, full]).find(ModuleQuery(buildID: Self.libraryID, name: "libfault-asan.so", path: "/x"))
        #expect(answer.candidates.map(\.outcome) == [.absent, .matched(.table, byName: false)])
        #expect(answer.candidates.map(ReportWriter.describe) == [
            "store \(Self.libraryID): not found", "store \(stored): symbol table, build-id matches",
        ])
    }

    @Test func elfFilesFromAProviderAreConvertedByTheEngine() throws {
        let report = try CrashReport.parse(try ReportFixtures.text("asan-use-after-free.txt"))
        let result = Symbolicator(providers: [ObjectProvider(path: Self.library)]).symbolicate(report)
        let expected = try LLVMSymbolizer.symbolize(object: Self.library, addresses: [0x2237])[0]
        #expect(result.frames[0][0].locations.map(LLVMSymbolizer.Frame.init) == expected)
        #expect(result.frames[0][0].source == Self.library)
        // The same file offered for a module of another build: checked and refused.
        let wrong = Symbolicator(providers: [ObjectProvider(path: ReportFixtures.binaries + "/prog-asan")]).symbolicate(report)
        #expect(wrong.frames[0][0].status == .buildIDMismatch)
    }

    @Test func anUnreadableTableIsACandidateWithItsReason() throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let broken = directory + "/object"
        try Data("CSYM but not a table".utf8).write(to: URL(fileURLWithPath: broken))
        let query = ModuleQuery(buildID: Self.libraryID, name: "libfault-asan.so", path: "/x")
        let answer = query.table(at: broken, source: .init(rawValue: "store"))
        #expect(answer.isEmpty)
        guard case .unreadable(let reason) = try #require(answer.candidates.first).outcome else {
            Issue.record("not unreadable: \(answer.candidates)")
            return
        }
        #expect(reason.contains(broken))
    }
}
