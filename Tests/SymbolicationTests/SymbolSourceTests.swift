import Foundation
import SymBytes
import SymELF
import SymReport
import Testing
@testable import Symbolication
import TestSupport

/// Where symbols are found and what is said when they are not (issue 19, items 2, 3 and 24).
@Suite struct SymbolSourceTests {
    /// Item 3: a glibc backtrace names no build-id; its modules' conversions are cached by their
    /// files' own build-ids and read back by the next run (they were written on every run).
    @Test func theConversionCacheHitsForReportsWithoutBuildIDs() throws {
        let cache = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let report = try CrashReport.parse(try ReportFixtures.text("glibc-backtrace.txt"))
        #expect(report.modules.allSatisfy { $0.buildID == nil })
        let library = try #require(report.modules.firstIndex { $0.name == "libfault.so" })
        let cached = TableCache(directory: cache).path(for: try TableCacheTests.key(ReportFixtures.binaries + "/libfault.so"))

        let first = Symbolicator(sources: ReportFixtures.isolatedSources(cache: cache)).symbolicate(report)
        let frame = try #require(report.stacks[0].frames.firstIndex { $0.module == library })
        #expect(first.frames[0][frame].status == .ok)
        #expect(first.frames[0][frame].moduleFacts?.candidates.last == SymbolCandidate(source: .cache, location: cached, outcome: .stored))
        let second = Symbolicator(sources: ReportFixtures.isolatedSources(cache: cache)).symbolicate(report)
        #expect(second.frames[0][frame].source == cached)
        #expect(second.frames[0][frame].explanation.contains("cache \(cached): symbol table, build-id matches"))
        #expect(!second.frames[0][frame].explanation.contains { $0.hasSuffix(": written") })
        #expect(second.frames[0][frame].locations == first.frames[0][frame].locations)
    }

    /// Item 24: a table found for the module that cannot be read says `corrupt-symbols` with
    /// the reason, not `no-symbols`; an unreadable file of no known module does not.
    @Test func anUnreadableTableFoundForTheModuleIsCorruptSymbols() throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let id = "e3ae0ff073c26f50bba089c0323f76a4f9493774"
        try Data("CSYM broken".utf8).write(to: URL(fileURLWithPath: "\(directory)/\(id).csym"))
        try Data("CSYM broken".utf8).write(to: URL(fileURLWithPath: "\(directory)/libfault-asan.so.csym"))
        try Data("hello".utf8).write(to: URL(fileURLWithPath: "\(directory)/notes.txt"))
        let report = try CrashReport.parse(try ReportFixtures.text("asan-use-after-free.txt"))

        for path in [directory, "\(directory)/libfault-asan.so.csym"] {
            let frame = Symbolicator(sources: ReportFixtures.isolatedSources([path])).symbolicate(report).frames[0][0]
            #expect(frame.status == .corruptSymbols, "--symbols \(path)")
            #expect(frame.reason?.hasPrefix("--symbols \(directory)/") == true && frame.reason?.contains("header") == true,
                    "\(frame.reason ?? "")")
        }
        let other = Symbolicator(sources: ReportFixtures.isolatedSources(["\(directory)/notes.txt"])).symbolicate(report)
        #expect(other.frames[0][0].status == .noSymbols)
        #expect(other.frames[0][0].explanation == ["--symbols \(directory)/notes.txt: neither an ELF file nor a .csym table"])
    }

    /// Item 2: `./bin/app(+0x…)` is resolved under the base directories, and every place tried
    /// is listed when none has it.
    @Test func aRelativeModulePathIsResolvedAgainstTheBaseDirectories() throws {
        let directory = try ReportFixtures.temporaryDirectory(), empty = try ReportFixtures.temporaryDirectory()
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: empty)
        }
        try FileManager.default.createDirectory(atPath: directory + "/bin", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: ReportFixtures.binaries + "/prog", toPath: directory + "/bin/prog")
        let report = try CrashReport.parse("./bin/prog(+0x921)[0x55b4268c9921]\n")
        #expect(report.modules.first?.path == "./bin/prog")

        let missing = Symbolicator(providers: [ModulePathProvider(relativeTo: [empty])]).symbolicate(report).frames[0][0]
        #expect(missing.status == .noSymbols)
        #expect(missing.explanation == ["module path \(empty)/bin/prog: not found"])

        let found = Symbolicator(providers: [ModulePathProvider(relativeTo: [empty, directory])]).symbolicate(report).frames[0][0]
        #expect(found.status == .ok && found.source == directory + "/bin/prog")
        let expected = try LLVMSymbolizer.symbolize(object: ReportFixtures.binaries + "/prog", addresses: [0x920])[0]
        #expect(found.locations.map(LLVMSymbolizer.Frame.init) == expected)
    }
}
