import Dispatch
import Foundation
import SymBytes
import SymELF
import SymReport
import SymTable
import Synchronization
import Testing
@testable import Symbolication

/// The Symbolicator over real reports, checked against llvm-symbolizer on the same module and
/// address, and against the producing tool's own symbolized output.
@Suite struct SymbolicatorTests {
    /// Every frame of `result` in a fixture module, with the address llvm-symbolizer must be
    /// asked for (worked out by the caller from the format's own convention).
    static func compareWithOracle(_ result: SymbolicatedReport,
                                  oracleAddress: (ReportFrame, ReportModule) throws -> UInt64) throws -> Int {
        var compared = 0
        for (s, stack) in result.report.stacks.enumerated() {
            for (f, frame) in stack.frames.enumerated() {
                let module = result.report.modules[try #require(frame.module)]
                let resolution = result.frames[s][f]
                guard ReportFixtures.fixtureModules.contains(module.name) else {
                    // Isolated sources: nothing outside the fixture binaries can resolve.
                    #expect(resolution.status == .noSymbols, "\(module.name) #\(frame.index)")
                    continue
                }
                let address = try oracleAddress(frame, module)
                #expect(resolution.lookupAddress == address, "\(module.name) #\(frame.index)")
                let expected = try LLVMSymbolizer.symbolize(
                    object: ReportFixtures.object(for: module.name), addresses: [address])[0]
                #expect(resolution.status == .ok)
                #expect(resolution.locations.map(LLVMSymbolizer.Frame.init) == expected, "\(module.name) #\(frame.index)")
                compared += 1
            }
        }
        return compared
    }

    /// Sanitizer reports and how many of their frames lie in fixture modules.
    static let sanitizerReports: [(String, Int)] = [
        ("asan-use-after-free.txt", 7), ("ubsan-overflow.txt", 3), ("tsan-data-race.txt", 5), ("lsan-leak.txt", 3),
    ]

    @Test("sanitizer offsets are looked up as printed", arguments: sanitizerReports)
    func sanitizerMatchesLLVMSymbolizer(name: String, fixtureFrames: Int) throws {
        let report = try CrashReport.parse(try ReportFixtures.text(name))
        let result = Symbolicator(sources: ReportFixtures.isolatedSources()).symbolicate(report)
        // Sanitizers print caller addresses already moved into the call: the offset is looked up as is.
        let compared = try Self.compareWithOracle(result) { frame, _ in try #require(frame.moduleOffset) }
        #expect(compared == fixtureFrames)
        if name.hasPrefix("asan") {
            // The access happened in an inlined helper: two frames, innermost first.
            #expect(result.frames[0][0].locations.map(\.function) == ["checksum", "fault_use_after_free"])
        }
    }

    @Test("sanitizer reports match the sanitizer's own symbolized run", arguments: sanitizerReports.map(\.0))
    func sanitizerMatchesItsOwnSymbolization(name: String) throws {
        let report = try CrashReport.parse(try ReportFixtures.text(name))
        let result = Symbolicator(sources: ReportFixtures.isolatedSources()).symbolicate(report)
        // The same run with symbolize=1 (llvm-symbolizer behind the runtime) prints one frame per
        // line, inlined frames included: `#N 0x… in f file:l:c` (TSan: `#N f file:l:c (module+0x…)`).
        let own = try ReportFixtures.text(name.replacingOccurrences(of: ".txt", with: ".symbolized.txt"))
        let regex = try NSRegularExpression(pattern: #"^\s*#\d+ (?:0x[0-9a-f]+ in )?(\S+) (/fixtures-reports/\S+)"#,
                                            options: [.anchorsMatchLines])
        let theirs = regex.matches(in: own, range: NSRange(own.startIndex..., in: own)).map { match in
            (own as NSString).substring(with: match.range(at: 1)) + " " + (own as NSString).substring(with: match.range(at: 2))
        }
        var ours: [String] = []
        for stack in result.frames {
            for resolution in stack {
                for location in resolution.locations where location.file.hasPrefix("/fixtures-reports/") {
                    ours.append("\(location.function) \(location.file):\(location.line):\(location.column)")
                }
            }
        }
        #expect(ours.count >= 3)
        #expect(ours == theirs)
    }

    @Test func glibcBacktraceLooksUpTheCallBeforeEachReturnAddress() throws {
        let report = try CrashReport.parse(try ReportFixtures.text("glibc-backtrace.txt"))
        let result = Symbolicator(sources: ReportFixtures.isolatedSources()).symbolicate(report)
        var symbolCache: [String: [String: UInt64]] = [:]
        let compared = try Self.compareWithOracle(result) { frame, module in
            let offset = try #require(frame.moduleOffset)
            guard let symbol = frame.symbol else { return offset - 1 }
            let file = ReportFixtures.binaries + "/" + module.name
            if symbolCache[file] == nil { symbolCache[file] = try ConversionTests.textSymbols(file) }
            return try #require(symbolCache[file]?[symbol]) + offset - 1
        }
        #expect(compared == 5)
        // glibc names the dynamic symbol of frames in exported functions: the physical function is it.
        for (frame, resolution) in zip(report.stacks[0].frames, result.frames[0]) where frame.symbol != nil && resolution.status == .ok {
            #expect(resolution.locations.last?.mangled == frame.symbol)
        }
        // Frame 0 is inside the inlined print_backtrace; frames 1 and 2 are the recursive calls.
        #expect(result.frames[0][0].locations.map(\.function) == ["print_backtrace", "fault_backtrace"])
    }

    @Test("eu-stack offsets are already adjusted", arguments: ["eu-stack.txt", "eu-stack-nopie.txt"])
    func euStack(name: String) throws {
        let report = try CrashReport.parse(try ReportFixtures.text(name))
        let result = Symbolicator(sources: ReportFixtures.isolatedSources()).symbolicate(report)
        // The printed offset is from the module's start (its first PT_LOAD, page-aligned, as
        // readelf shows it) and already moved into the call: 0 for the PIE prog and libfault.so,
        // 0x400000 for prog-nopie.
        let compared = try Self.compareWithOracle(result) { frame, module in
            try #require(frame.moduleOffset) + (try ReportFixtures.firstLoadAddress(ReportFixtures.object(for: module.name)))
        }
        #expect(compared == 3)
        // eu-stack names the physical function from the symbol table: ours is the same.
        for (frame, resolution) in zip(report.stacks[0].frames, result.frames[0]) where resolution.status == .ok {
            #expect(resolution.locations.last?.mangled == frame.function)
        }
    }

    @Test("Swift backtraces look up pc - 1 for [ra] frames only", arguments: ["swift-backtrace.json", "swift-backtrace.txt"])
    func swiftBacktrace(name: String) throws {
        let report = try CrashReport.parse(try ReportFixtures.text(name))
        let result = Symbolicator(sources: ReportFixtures.isolatedSources()).symbolicate(report)
        let compared = try Self.compareWithOracle(result) { frame, module in
            let offset = try #require(frame.address) - (try #require(module.loadAddress))
            return frame.convention == .returnAddress ? offset - 1 : offset
        }
        #expect(compared == 3)
        // The backtracer's own symbolicated run (symbolicate=full) gives the same file:line:column.
        let own = try ReportFixtures.text("swift-backtrace.symbolized.txt")
        let theirs = own.split(separator: "\n").compactMap { line -> String? in
            guard line.contains(" in crash-swift at "), let at = line.range(of: " at ") else { return nil }
            return String(line[at.upperBound...])
        }
        let ours = result.frames[0].compactMap { resolution -> String? in
            guard let location = resolution.locations.first, location.file.hasPrefix("/fixtures-reports/") else { return nil }
            return "\(location.file):\(location.line):\(location.column)"
        }
        #expect(theirs.count == 3)
        #expect(ours == theirs)
    }

    @Test("tombstones: relative pcs looked up as printed", arguments: ["tombstone-arm64.txt", "logcat-crash.txt"])
    func tombstone(name: String) throws {
        let report = try CrashReport.parse(try ReportFixtures.text(name))
        let sources = ReportFixtures.isolatedSources([Corpus.fixture("libnative-android21-aarch64.so")])
        let result = Symbolicator(sources: sources).symbolicate(report)
        let compared = try Self.compareWithOracle(result) { frame, _ in try #require(frame.moduleOffset) }
        #expect(compared == (name == "logcat-crash.txt" ? 1 : 2))
        // Where the tombstone already names the function, the physical frame agrees.
        for (stack, resolutions) in zip(report.stacks, result.frames) {
            for (frame, resolution) in zip(stack.frames, resolutions) where resolution.status == .ok {
                #expect(resolution.locations.last?.mangled == frame.function)
            }
        }
        // The base.apk!libnative.so frame resolves by build-id to the same library, with its inline chain.
        if name == "tombstone-arm64.txt" {
            #expect(result.frames[1][0].locations.map(\.function) == ["scale", "accumulate", "Java_com_example_fixture_NativeLib_compute"])
        }
    }

    @Test func theSymbolicatedJSONReadsBackAsAReport() throws {
        let report = try CrashReport.parse(try ReportFixtures.text("glibc-backtrace.txt"))
        let symbolicator = Symbolicator(sources: ReportFixtures.isolatedSources())
        let first = symbolicator.symbolicate(report)
        let again = try CrashReport.parse(ReportWriter.json(first))
        #expect(again.format == .crashsymJSON)
        let second = symbolicator.symbolicate(again)
        #expect(second.frames.map { $0.map(\.locations) } == first.frames.map { $0.map(\.locations) })
        #expect(second.frames.map { $0.map(\.status) } == first.frames.map { $0.map(\.status) })
        #expect(second.frames.map { $0.map(\.lookupAddress) } == first.frames.map { $0.map(\.lookupAddress) })
    }

    @Test func theCommittedCrashsymReportSymbolicatesLikeItsSource() throws {
        // Fixtures/reports/crashsym-report.json was written by crashsym from the ASan report: the
        // compatibility fixture of the JSON format.
        let json = try CrashReport.parse(try ReportFixtures.text("crashsym-report.json"))
        let asan = try CrashReport.parse(try ReportFixtures.text("asan-use-after-free.txt"))
        #expect(json.format == .crashsymJSON)
        #expect(json.stacks.map(\.name) == asan.stacks.map(\.name))
        #expect(json.modules.map(\.buildID) == asan.modules.map(\.buildID))
        let symbolicator = Symbolicator(sources: ReportFixtures.isolatedSources())
        let fromJSON = symbolicator.symbolicate(json), fromText = symbolicator.symbolicate(asan)
        #expect(fromJSON.frames.map { $0.map(\.lookupAddress) } == fromText.frames.map { $0.map(\.lookupAddress) })
        // Where the symbols here resolve a frame, they give what the text does; elsewhere (the
        // host's libc) the JSON keeps the chain its writer resolved, marked as the sender's.
        var kept = 0
        for (s, frames) in fromText.frames.enumerated() {
            for (f, text) in frames.enumerated() {
                let fromSender = json.stacks[s].frames[f].senderLocations
                if text.status == .ok {
                    #expect(fromJSON.frames[s][f].locations == text.locations)
                    #expect(!fromJSON.frames[s][f].bySender)
                } else {
                    #expect(fromJSON.frames[s][f].locations == fromSender)
                    #expect(fromJSON.frames[s][f].bySender == !fromSender.isEmpty)
                    if !fromSender.isEmpty { kept += 1 }
                }
            }
        }
        #expect(kept == 0 || fromJSON.unresolvedCount < fromText.unresolvedCount)
    }

    /// A report the sender symbolicated (an agent's `--symbols`) keeps the sender's frames for the
    /// modules the symbolicator has no symbols for, marked as the sender's, and the symbolicator's
    /// own tables win over the sender's chain wherever it has them.
    @Test func theSendersFramesAreKeptOnlyWhereThereAreNoSymbols() throws {
        let json = try CrashReport.parse(try ReportFixtures.text("crashsym-report.json"))
        let truth = Symbolicator(sources: ReportFixtures.isolatedSources()).symbolicate(json)
        let empty = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let alone = Symbolicator(sources: ReportFixtures.isolatedSources([empty])).symbolicate(json)
        #expect(alone.frames[0][0].status == .ok)
        #expect(alone.frames[0][0].bySender)
        #expect(alone.frames[0][0].locations.map(\.function) == ["checksum", "fault_use_after_free"])
        #expect(alone.frames[0][0].locations.map(\.line) == [12, 20])
        #expect(ReportWriter.json(alone).contains(#""status":"ok","reason":null,"symbolized_by":"sender","symbolized":[{"function":"checksum""#))
        // Frames the sender could not resolve stay unresolved, with the symbolicator's reason.
        #expect(alone.frames[1][0].status == .noSymbols)
        #expect(!alone.frames[1][0].bySender)

        // A sender that lies: its chain is used only where the symbolicator has no table.
        var forged = json
        for s in forged.stacks.indices {
            for f in forged.stacks[s].frames.indices {
                forged.stacks[s].frames[f].senderLocations = [SourceLocation(function: "forged", mangled: "forged", file: "", line: 1, column: 0)]
            }
        }
        let checked = Symbolicator(sources: ReportFixtures.isolatedSources()).symbolicate(forged)
        var ownTables = 0
        for (s, frames) in truth.frames.enumerated() {
            for (f, own) in frames.enumerated() where own.status == .ok && !own.bySender {
                #expect(checked.frames[s][f].locations == own.locations)
                #expect(!checked.frames[s][f].bySender)
                ownTables += 1
            }
        }
        #expect(ownTables >= 6)
        #expect(!ReportWriter.json(checked).contains(#""function":"forged","mangled":"forged","file":"/fixtures-reports"#))
    }

    @Test func aRebuiltModuleIsFlaggedNeverUsed() throws {
        // The report of another build of libfault-asan.so: same path, another build-id.
        let text = try ReportFixtures.text("asan-use-after-free.txt")
            .replacingOccurrences(of: "e3ae0ff073c26f50bba089c0323f76a4f9493774", with: "0123456789abcdef0123456789abcdef01234567")
        let result = Symbolicator(sources: ReportFixtures.isolatedSources()).symbolicate(try CrashReport.parse(text))
        let access = result.frames[0]
        #expect(access[0].status == .buildIDMismatch)
        #expect(access[0].locations.isEmpty)
        #expect(access[0].reason?.contains("libfault-asan.so has build-id e3ae0ff0") == true)
        #expect(access[1].status == .ok)  // prog-asan is unchanged
    }

    @Test func missingSymbolsAreFlaggedWithWhatWasTried() throws {
        let report = try CrashReport.parse(try ReportFixtures.text("asan-use-after-free.txt"))
        let empty = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let result = Symbolicator(sources: ReportFixtures.isolatedSources([empty])).symbolicate(report)
        #expect(result.unresolvedCount == report.frameCount)
        let first = result.frames[0][0]
        #expect(first.status == .noSymbols)
        #expect(first.reason == "no symbols found for libfault-asan.so (build-id e3ae0ff073c26f50bba089c0323f76a4f9493774)")
        #expect(first.explanation.contains { $0.hasPrefix("--symbols \(empty): no file with build-id e3ae0ff0") })
    }

    @Test func aSeparateDebugFileIsFoundByBuildID() throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let id = "e3ae0ff073c26f50bba089c0323f76a4f9493774"
        let library = ReportFixtures.binaries + "/libfault-asan.so"
        try FileManager.default.createDirectory(atPath: directory + "/bin", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory + "/debug/.build-id/e3", withIntermediateDirectories: true)
        let debugFile = directory + "/debug/.build-id/e3/" + id.dropFirst(2) + ".debug"
        try #require(try ReportFixtures.run("/usr/bin/objcopy", ["--only-keep-debug", library, debugFile]) == 0)
        try #require(try ReportFixtures.run("/usr/bin/objcopy", ["--strip-all", library, directory + "/bin/libfault-asan.so"]) == 0)

        let report = try CrashReport.parse(try ReportFixtures.text("asan-use-after-free.txt"))
        let stripped = Symbolicator(sources: ReportFixtures.isolatedSources([directory + "/bin"])).symbolicate(report)
        // Stripped, the library still exports the function in .dynsym: a name without file:line.
        #expect(stripped.frames[0][0].locations.map(\.function) == ["fault_use_after_free"])
        #expect(stripped.frames[0][0].locations.first?.line == 0)

        let sources = ReportFixtures.isolatedSources([directory + "/bin"], debugDirectories: [directory + "/debug"])
        let result = Symbolicator(sources: sources).symbolicate(report)
        #expect(result.frames[0][0].source == debugFile)
        let expected = try LLVMSymbolizer.symbolize(object: library, addresses: [0x2237])[0]
        #expect(result.frames[0][0].locations.map(LLVMSymbolizer.Frame.init) == expected)
        #expect(expected.count == 2)
    }

    @Test func convertedTablesAreCachedByBuildIDAndReused() throws {
        let cache = try ReportFixtures.temporaryDirectory() + "/nested/cache"
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let report = try CrashReport.parse(try ReportFixtures.text("asan-use-after-free.txt"))
        let first = Symbolicator(sources: ReportFixtures.isolatedSources(cache: cache)).symbolicate(report)
        let files = try FileManager.default.contentsOfDirectory(atPath: cache).sorted()
        let tables = TableCache(directory: cache)
        #expect(files == [try TableCacheTests.key(ReportFixtures.binaries + "/prog-asan"), try TableCacheTests.key(ReportFixtures.binaries + "/libfault-asan.so")].map {
            ReportModule.fileName(of: tables.path(for: $0))
        })

        // The next run reads the cache instead of converting, with the same frames.
        let second = Symbolicator(sources: ReportFixtures.isolatedSources(cache: cache)).symbolicate(report)
        #expect(second.frames[0][0].source == tables.path(for: try TableCacheTests.key(ReportFixtures.binaries + "/libfault-asan.so")))
        #expect(second.frames.map { $0.map(\.locations) } == first.frames.map { $0.map(\.locations) })

        // The cache is a conversion cache: it answers for the files it converted, never alone
        // (a table cached for a build-id cannot say which file it came from).
        let empty = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let alone = Symbolicator(sources: ReportFixtures.isolatedSources([empty], cache: cache)).symbolicate(report)
        #expect(alone.frames[0][0].status == .noSymbols)
    }

    @Test func wrongAddressesAreFlaggedNotTrusted() throws {
        let text = """
            ==1==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000
                #0 0x7fcda185a237  (/tmp/crashsym-reports/libfault-asan.so+0xfffff00) (BuildId: e3ae0ff073c26f50bba089c0323f76a4f9493774)
                #1 0x56269a441404  (/tmp/crashsym-reports/prog-asan+0x24
                #2 0x56269a441404  (/tmp/crashsym-reports/prog-asan+0x0) (BuildId: 4be26ceb3a483e56ab3cec1084cf06ee74f72c74)
            """
        let result = Symbolicator(sources: ReportFixtures.isolatedSources()).symbolicate(try CrashReport.parse(text))
        #expect(result.frames[0].map(\.status) == [.notInFunction, .malformed, .notInFunction])
    }

    @Test func aCorruptCachedTableIsReplacedNotTrusted() throws {
        let cache = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let cached = TableCache(directory: cache).path(for: try TableCacheTests.key(ReportFixtures.binaries + "/libfault-asan.so"))
        try Data("CSYM but not really a table".utf8).write(to: URL(fileURLWithPath: cached))
        let report = try CrashReport.parse(try ReportFixtures.text("asan-use-after-free.txt"))
        let result = Symbolicator(sources: ReportFixtures.isolatedSources(cache: cache)).symbolicate(report)
        #expect(result.frames[0][0].status == .ok)
        #expect(result.frames[0][0].explanation.contains { $0.hasPrefix("cache \(cached): ") && !$0.contains("symbol table") })
        // Converted again and written over the bad file: the next run reads it from the cache.
        let again = Symbolicator(sources: ReportFixtures.isolatedSources(cache: cache)).symbolicate(report)
        #expect(again.frames[0][0].source == cached)
        #expect(again.frames[0][0].locations == result.frames[0][0].locations)
    }

    @Test func oneSymbolicatorServesManyThreadsAlike() throws {
        let names = ["asan-use-after-free.txt", "glibc-backtrace.txt", "tsan-data-race.txt", "eu-stack.txt", "swift-backtrace.json"]
        let reports = try names.map { try CrashReport.parse(try ReportFixtures.text($0)) }
        let serial = reports.map { ReportWriter.json(Symbolicator(sources: ReportFixtures.isolatedSources()).symbolicate($0)) }
        let shared = Symbolicator(sources: ReportFixtures.isolatedSources())
        let outputs = Mutex<[Int: String]>([:])
        DispatchQueue.concurrentPerform(iterations: 40) { iteration in
            let index = iteration % reports.count
            let text = ReportWriter.json(shared.symbolicate(reports[index]))
            outputs.withLock { $0[iteration] = text }
        }
        let collected = outputs.withLock { $0 }
        for iteration in 0..<40 { #expect(collected[iteration] == serial[iteration % reports.count]) }
    }

    @Test func filesAreSymbolicatedInOrderWithTheirErrors() throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "garbage\n".write(toFile: directory + "/bad.txt", atomically: true, encoding: .utf8)
        let paths = [ReportFixtures.path("glibc-backtrace.txt"), directory + "/bad.txt", directory + "/missing.txt",
                     ReportFixtures.path("asan-use-after-free.txt")]
        let emitted = Mutex<(seen: [Int], outcomes: [Result<[UInt8], FormatError>])>(([], []))
        Symbolicator(sources: ReportFixtures.isolatedSources()).symbolicateFiles(
            paths, jobs: 2, render: { Array(ReportWriter.json($0).utf8) }) { index, outcome in
            emitted.withLock {
                $0.seen.append(index)
                $0.outcomes.append(outcome)
            }
        }
        let (seen, outcomes) = emitted.withLock { $0 }
        #expect(seen == [0, 1, 2, 3])
        #expect((try? outcomes[0].get()).map { String(decoding: $0, as: UTF8.self).contains("\"format\":\"glibc\"") } == true)
        if case .failure(let error) = outcomes[1] { #expect(error.path == directory + "/bad.txt" && error.message.hasPrefix("line 1:")) }
        else { Issue.record("garbage was accepted") }
        if case .failure(let error) = outcomes[2] { #expect(error.code == .io) } else { Issue.record("a missing file was read") }
        #expect((try? outcomes[3].get()) != nil)
    }

    /// More reports than the workers may run ahead of the printing (256 per job), a slow one
    /// among them: every report is emitted once, in input order, as a serial run renders it.
    @Test func manyFilesAreEmittedOnceInOrderWhateverTheThreads() throws {
        let names = ["asan-use-after-free.txt", "glibc-backtrace.txt", "tsan-data-race.txt", "eu-stack.txt", "swift-backtrace.json"]
        let serial = try names.map { name in
            ReportWriter.json(Symbolicator(sources: ReportFixtures.isolatedSources()).symbolicate(
                try CrashReport.parse(try ReportFixtures.text(name))))
        }
        let paths = (0..<1_500).map { $0 % 97 == 13 ? "/nonexistent/report-\($0).txt" : ReportFixtures.path(names[$0 % names.count]) }
        for jobs in [1, 2, 3] {
            let emitted = Mutex<[(index: Int, text: String?)]>([])
            Symbolicator(sources: ReportFixtures.isolatedSources()).symbolicateFiles(
                paths, jobs: jobs, render: { Array(ReportWriter.json($0).utf8) }) { index, outcome in
                let text = (try? outcome.get()).map { String(decoding: $0, as: UTF8.self) }
                emitted.withLock { $0.append((index, text)) }
            }
            let seen = emitted.withLock { $0 }
            #expect(seen.map(\.index) == Array(paths.indices), "jobs \(jobs)")
            for (index, text) in seen {
                #expect(text == (index % 97 == 13 ? nil : serial[index % names.count]), "jobs \(jobs), report \(index)")
            }
        }
    }

    @Test func aReportNamingThousandsOfModulesIsHandledInOnePass() throws {
        // Hostile but well-formed: every frame in its own missing module.
        var text = "==1==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000\n"
        for index in 0..<20_000 {
            text += "    #\(index) 0x\(String(0x1000 + index, radix: 16))  (/no/such/lib\(index).so+0x\(String(index, radix: 16))) (BuildId: \(String(format: "%040x", index)))\n"
        }
        let report = try CrashReport.parse(text)
        #expect(report.modules.count == 20_000)
        let empty = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let result = Symbolicator(sources: ReportFixtures.isolatedSources([empty])).symbolicate(report)
        #expect(result.unresolvedCount == 20_000)
        #expect(Set(result.frames[0].map(\.status)) == [.noSymbols])
    }

    @Test func aTableFoundAloneTakesItsLoadBiasFromTheELFFileOfTheSameBuild() throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let binary = try ELFFile(path: ReportFixtures.binaries + "/prog-nopie")
        let id = try #require(binary.buildIDHex)
        // A table as written before .csym v3: no layout record.
        var model = try ModuleConverter.model(binary: binary)
        model.module.layout = nil
        try FileManager.default.createDirectory(atPath: directory + "/tables", withIntermediateDirectories: true)
        try Data(try SymbolTableWriter.write(model)).write(to: URL(fileURLWithPath: directory + "/tables/\(id).csym"))
        let report = try CrashReport.parse(try ReportFixtures.text("eu-stack-nopie.txt"))
        let dispatch = try #require(report.stacks[0].frames.firstIndex { $0.function == "dispatch" })

        // The table alone: offsets from the module start cannot be placed (first PT_LOAD unknown):
        // flagged, never answered from the wrong place.
        let alone = Symbolicator(sources: ReportFixtures.isolatedSources([directory + "/tables"])).symbolicate(report)
        #expect(alone.frames[0][dispatch].status == .notInFunction)

        // With the ELF file of the same build in another --symbols directory, the table answers.
        let sources = ReportFixtures.isolatedSources([directory + "/tables", ReportFixtures.binaries])
        let result = Symbolicator(sources: sources).symbolicate(report)
        #expect(result.frames[0][dispatch].source == directory + "/tables/\(id).csym")
        #expect(result.frames[0][dispatch].lookupAddress == 0x400000 + (report.stacks[0].frames[dispatch].moduleOffset ?? 0))
        #expect(result.frames[0][dispatch].locations.last?.function == "dispatch")
    }

    /// A table records its module's layout (.csym v3): alone, with no ELF file anywhere, it places
    /// mapping-relative offsets and absolute pcs of a module linked at 0x400000 as the ELF file does.
    @Test func aTableAlonePlacesAddressesByItsLayoutRecord() throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let binary = try ELFFile(path: ReportFixtures.binaries + "/prog-nopie")
        let id = try #require(binary.buildIDHex)
        let stored = directory + "/objects/" + id  // no .csym suffix, as in a server's store
        try FileManager.default.createDirectory(atPath: directory + "/objects", withIntermediateDirectories: true)
        try Data(try ModuleConverter.table(binary: binary)).write(to: URL(fileURLWithPath: stored))
        let table = try ModuleSymbols(tableAt: stored)
        #expect(table.table.module.layout?.mappingBase == 0x400000)
        #expect(table.table.module.layout == ModuleLayout(binary))

        struct Store: SymbolProvider {
            let path: String
            func find(_ module: ModuleQuery) -> SymbolAnswer { module.table(at: path, source: .init(rawValue: "store")) }
        }
        let withELF = Symbolicator(sources: ReportFixtures.isolatedSources())
        let tableOnly = Symbolicator(providers: [Store(path: stored)])
        // eu-stack: mapping-relative offsets.
        let report = try CrashReport.parse(try ReportFixtures.text("eu-stack-nopie.txt"))
        let module = try #require(report.modules.firstIndex { $0.buildID == id })
        let expected = withELF.symbolicate(report), actual = tableOnly.symbolicate(report)
        var compared = 0
        for (f, frame) in report.stacks[0].frames.enumerated() where frame.module == module {
            #expect(actual.frames[0][f].status == .ok)
            #expect(actual.frames[0][f].lookupAddress == expected.frames[0][f].lookupAddress)
            #expect(actual.frames[0][f].locations == expected.frames[0][f].locations)
            compared += 1
        }
        #expect(compared >= 2)
        // Absolute pcs with the module's load address (a glibc-style report of the executable).
        let dispatch = try #require(report.stacks[0].frames.first { $0.function == "dispatch" && $0.module == module })
        let pc = try #require(dispatch.address)
        let absolute = try CrashReport.parse("""
            PID 1 - process module memory map
            0x0000000000400000-0x0000000000403000 prog-nopie
              [\(id)]
              /nowhere/prog-nopie
              -
            TID 1:
            #0  0x\(String(pc, radix: 16))
            """)
        let placed = tableOnly.symbolicate(absolute).frames[0][0]
        #expect(placed.lookupAddress == pc)
        #expect(placed.locations.last?.function == "dispatch")
    }
}

/// A long-running Symbolicator (the agent's, a server's) meeting crashes of many builds.
@Suite struct ModuleSlotsTests {
    /// A report with one frame in each of the modules `builds` (build-ids no provider knows).
    static func report(_ builds: some Sequence<Int>) -> CrashReport {
        let modules = builds.map { ReportModule(path: "/lib/m\($0).so", buildID: String(repeating: "0", count: 32) + hex8($0),
                                                loadAddress: 0x10000) }
        let frames = modules.indices.map { ReportFrame(index: $0, address: 0x10100, module: $0) }
        return CrashReport(format: .glibc, modules: modules, stacks: [ReportStack(frames: frames)])
    }

    static func hex8(_ value: Int) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }

    static func key(_ build: Int) -> Symbolicator.ModuleSlots.Key { .buildID(String(repeating: "0", count: 32) + hex8(build)) }

    @Test("the modules kept are bounded: the least recently used dropped past ModuleSlots.capacity, one in use kept")
    func boundedLeastRecentlyUsed() {
        let symbolicator = Symbolicator(providers: [], conversion: ConversionSettings(tableCache: nil))
        let capacity = Symbolicator.ModuleSlots.capacity
        // Build 0 is in every crash (the agent's own libc); the others each in one batch.
        var next = 1
        while next < capacity * 3 {
            let result = symbolicator.symbolicate(Self.report([0] + Array(next..<next + 100)))
            #expect(result.frames[0].allSatisfy { $0.status == .noSymbols })
            next += 100
        }
        #expect(symbolicator.modules.withLock(\.count) == capacity)
        #expect(symbolicator.modules.withLock { $0.contains(Self.key(0)) }, "a module in every crash stays")
        #expect(symbolicator.modules.withLock { $0.contains(Self.key(next - 1)) }, "the last met stays")
        #expect(!symbolicator.modules.withLock { $0.contains(Self.key(1)) }, "the first batch's were dropped")
        // A dropped module that comes back is resolved again.
        let again = symbolicator.symbolicate(Self.report([1]))
        #expect(again.frames[0][0].status == .noSymbols)
        #expect(symbolicator.modules.withLock { $0.contains(Self.key(1)) })
        #expect(symbolicator.modules.withLock(\.count) == capacity)
    }
}
