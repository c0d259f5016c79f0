import Foundation
import SymReport
import SymTable
@testable import Symbolication
import Testing
import TestSupport

/// `func+0x…` frames (glibc backtraces) placed from a table alone: the entry the table gives a
/// function name is the one `nm` reads from the ELF symbol table.
@Suite struct FunctionEntryTests {
    /// Defined, sized function symbols of `path` as `nm` prints them (`-D`: the dynamic table,
    /// whose names `dladdr` and so `backtrace_symbols` print), by name; names several symbols
    /// share are left out (which one a report means is unknown to `nm` too).
    static func functions(_ path: String, dynamic: Bool) throws -> [String: (value: UInt64, size: UInt64)] {
        let text = try Tool.output("/usr/bin/nm", (dynamic ? ["-D"] : []) + ["--defined-only", "-S", path])
        var result: [String: (value: UInt64, size: UInt64)] = [:]
        var shared = Set<String>()
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 4, ["t", "T", "w", "W"].contains(parts[2]), let value = UInt64(parts[0], radix: 16),
                  let size = UInt64(parts[1], radix: 16), size > 0 else { continue }
            // `nm -D` prints versioned names (`memcpy@@GLIBC_2.14`); dladdr prints the bare name.
            let name = String(parts[3].prefix { $0 != "@" })
            if let known = result[name], known.value != value { shared.insert(name) }
            result[name] = (value, size)
        }
        for name in shared { result[name] = nil }
        return result
    }

    /// Every answer the table gives for a function of `binary` (converted with `debugFile`) is its
    /// `nm` value plus the offset, asked with a pc of the module loaded at a page-aligned bias, and
    /// every function it does not find is an alias the table dropped (another name is the
    /// physical frame's at its address); returns how many of the functions it answered, of how many.
    static func check(_ binary: String, debugFile: String? = nil, dynamic: Bool) throws -> (answered: Int, total: Int) {
        let symbols = try ModuleSymbols(path: binary, locator: DebugFileLocator(
            debugDirectories: [], includeSystemDirectory: debugFile != nil))
        let functions = try functions(binary, dynamic: dynamic)
        var answered = 0
        for (name, function) in functions {
            var answers = 0
            for offset in [0, function.size / 2, function.size - 1] {
                let pc = 0x7f3a_5c21_0000 + function.value + offset
                guard let address = try symbols.table.address(ofFunction: name, offset: offset, loadedAt: pc) else { continue }
                #expect(address == function.value + offset, "\(binary) \(name)+\(offset)")
                answers += 1
            }
            if answers > 0 {
                answered += 1
            } else {
                let physical = try symbols.table.frames(at: function.value).last.map { symbols.table.string($0.function) }
                #expect(physical != name, "\(binary) \(name) at 0x\(String(function.value, radix: 16)) not found")
            }
        }
        return (answered, functions.count)
    }

    @Test("fixture programs: every exported and local function is found at its nm value, but aliases")
    func fixtures() throws {
        for (path, dynamic) in [(ReportFixtures.binaries + "/libfault.so", true), (ReportFixtures.binaries + "/libfault.so", false),
                                (ReportFixtures.binaries + "/prog", false), (Corpus.fixture("gcc-cpp-O2-dwarf5"), false),
                                (Corpus.fixture("clang-cpp-O2-dwarf5"), false)] {
            let (answered, total) = try Self.check(path, dynamic: dynamic)
            #expect(total > 0, "\(path)")
            // gcc-cpp: three D1 destructors, whose D2 twins at the same addresses the table keeps
            // (the DWARF subprogram's linkage name; llvm-symbolizer prints D1).
            #expect(answered >= total - 3, "\(path) dynamic: \(dynamic)")
        }
    }

    @Test("libc with libc6-dbg: exported functions found at their nm -D value, aliases the table drops not found")
    func libc() throws {
        try #require(Corpus.libcDebugFile != nil, "libc6-dbg is installed by scripts/deps")
        let (answered, total) = try Self.check("/lib/x86_64-linux-gnu/libc.so.6", debugFile: Corpus.libcDebugFile, dynamic: true)
        #expect(total > 1500)
        // libc 2.36: 2,099 of 2,507; the rest are aliases (`fgetc` of `getc`, `system` of `__libc_system`).
        #expect(Double(answered) >= 0.8 * Double(total), "\(answered) of \(total)")
    }

    @Test("a glibc backtrace symbolicated from tables alone equals the ELF files' answer and nm's arithmetic")
    func glibcBacktraceFromTables() throws {
        let report = try CrashReport.parse(try ReportFixtures.text("glibc-backtrace.txt"))
        let tables = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: tables) }
        let dumped = try Dumper(configuration: DumpConfiguration(outputDirectory: tables, locator: DebugFileLocator(
            debugDirectories: [], includeSystemDirectory: false), jobs: 1))
            .run(paths: ["libfault.so", "prog"].map { ReportFixtures.binaries + "/" + $0 })
        #expect(dumped.modules.count == 2)
        let fromTables = Symbolicator(sources: ReportFixtures.isolatedSources([tables])).symbolicate(report)
        let fromFiles = Symbolicator(sources: ReportFixtures.isolatedSources()).symbolicate(report)
        let values = try ConversionTests.textSymbols(ReportFixtures.binaries + "/libfault.so")
        var placed = 0
        for (index, frame) in report.stacks[0].frames.enumerated() {
            let resolution = fromTables.frames[0][index]
            #expect(resolution.status == fromFiles.frames[0][index].status)
            #expect(resolution.lookupAddress == fromFiles.frames[0][index].lookupAddress)
            #expect(resolution.locations == fromFiles.frames[0][index].locations)
            guard let symbol = frame.symbol, let offset = frame.moduleOffset, frame.module.map({ report.modules[$0].name }) == "libfault.so" else {
                continue
            }
            #expect(resolution.status == .ok)
            #expect(resolution.lookupAddress == (try #require(values[symbol])) + offset - 1)
            placed += 1
        }
        #expect(placed == 3)
    }
}
