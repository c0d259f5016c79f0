import Foundation
import Testing
import TestSupport

/// `crashsym symbolicate` through the built binary.
@Suite struct SymbolicateCommandTests {
    static func report(_ name: String) -> String { CLI.root.appendingPathComponent("Fixtures/reports/" + name).path }
    static var binaries: String { report("src") }
    /// Keeps tests independent of this machine's files and of the user's cache.
    static let isolation = ["--no-module-paths", "--no-cache"]

    @Test func asanReportIsReprintedLineForLineWithFramesCompleted() throws {
        let input = try String(contentsOfFile: Self.report("asan-use-after-free.txt"), encoding: .utf8)
        let result = try CLI.run(["symbolicate", Self.report("asan-use-after-free.txt"), "--symbols", Self.binaries] + Self.isolation)
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        let inputLines = input.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        let outputLines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        // Every input line is there, in order, unchanged or completed; the rest are inline frames.
        var position = 0
        for line in outputLines where position < inputLines.count && line.hasPrefix(inputLines[inputLines.startIndex + position]) {
            position += 1
        }
        #expect(position == inputLines.count)
        #expect(outputLines.count == inputLines.count + 4)  // one inlined caller on frames #0 and three prog frames
        #expect(result.stdout.contains("(BuildId: e3ae0ff073c26f50bba089c0323f76a4f9493774) in checksum /fixtures-reports/fault.c:12:44\n"
                                       + "        inlined into fault_use_after_free /fixtures-reports/fault.c:20:12\n"))
        // The sanitizer runtime's frames name no build-id and its path is not read here.
        #expect(result.stdout.contains("(/opt/swift/usr/lib/clang/21/lib/linux/libclang_rt.asan-x86_64.so+0x121776)  [crashsym: no-symbols: no symbols found for libclang_rt.asan-x86_64.so]\n"))
    }

    @Test func jsonOutputFollowsTheDocumentedShape() throws {
        let result = try CLI.run(["symbolicate", Self.report("asan-use-after-free.txt"), "--symbols", Self.binaries,
                                  "--format", "json"] + Self.isolation)
        #expect(result.status == 0)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect(json["format"] as? String == "sanitizer")
        let stacks = try #require(json["stacks"] as? [[String: Any]])
        #expect(stacks.count == 3)
        #expect(stacks.map { $0["crashed"] as? Bool } == [true, false, false])
        let frame = try #require((stacks[0]["frames"] as? [[String: Any]])?.first)
        #expect(frame["index"] as? Int == 0)
        #expect(frame["module"] as? String == "libfault-asan.so")
        #expect(frame["build_id"] as? String == "e3ae0ff073c26f50bba089c0323f76a4f9493774")
        #expect(frame["module_offset"] as? String == "0x2237")
        #expect(frame["status"] as? String == "ok")
        let symbolized = try #require(frame["symbolized"] as? [[String: Any]])
        #expect(symbolized.map { $0["function"] as? String } == ["checksum", "fault_use_after_free"])
        #expect(symbolized.map { $0["line"] as? Int } == [12, 20])
    }

    @Test func explainSaysWhatWasTried() throws {
        let empty = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let result = try CLI.run(["symbolicate", Self.report("glibc-backtrace.txt"), "--symbols", empty, "--explain"] + Self.isolation)
        #expect(result.status == 0)
        #expect(result.stdout.contains("[crashsym: no-symbols: no symbols found for libfault.so]"))
        #expect(result.stdout.contains("    tried: --symbols \(empty): no file with name libfault.so\n"))
    }

    @Test("files of two builds bearing a module's name, no build-id in the report: ambiguous, not the first guessed")
    func ambiguousNamesAreNotGuessed() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Two builds named libfault.so (the plain one and the ASan one), in two directories.
        for (folder, program) in [("a", "libfault.so"), ("b", "libfault-asan.so")] {
            try FileManager.default.createDirectory(atPath: directory + "/" + folder, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: Self.binaries + "/" + program, toPath: directory + "/\(folder)/libfault.so")
        }
        let reason = "[crashsym: no-symbols: ambiguous: 2 symbol files named libfault.so and the report gives no build-id to tell them apart; not guessed]"
        // One --symbols directory holding both, and the two files given one by one.
        for symbols in [[directory], [directory + "/a/libfault.so", directory + "/b/libfault.so"]] {
            let result = try CLI.run(["symbolicate", Self.report("glibc-backtrace.txt"), "--explain"]
                                     + (symbols + [Self.binaries + "/prog"]).flatMap { ["--symbols", $0] } + Self.isolation)
            #expect(result.status == 0)
            let first = try #require(result.stdout.split(separator: "\n").first)
            #expect(first == "/tmp/crashsym-reports/libfault.so(fault_backtrace+0x2d)[0x7f7d10b228dd]  " + reason)
            for folder in ["a", "b"] {
                #expect(result.stdout.contains("    tried: --symbols \(directory)/\(folder)/libfault.so: one of 2 files named libfault.so: ambiguous without a build-id, not used\n"),
                        "\(result.stdout)")
            }
            // The other modules still resolve.
            #expect(result.stdout.contains("/tmp/crashsym-reports/prog(+0x921)[0x55b4268c9921] in run /fixtures-reports/prog.c:8:43"))
        }
        // Files of one build (the library and its table) are one answer, not an ambiguity.
        let table = directory + "/c"
        try FileManager.default.createDirectory(atPath: table, withIntermediateDirectories: true)
        #expect(try CLI.run(["dump", directory + "/a/libfault.so", "-o", table]).status == 0)
        let one = try CLI.run(["symbolicate", Self.report("glibc-backtrace.txt"), "--symbols", directory + "/a", "--symbols", table]
                              + Self.isolation)
        #expect(one.status == 0)
        #expect(one.stdout.hasPrefix("/tmp/crashsym-reports/libfault.so(fault_backtrace+0x2d)[0x7f7d10b228dd] in print_backtrace "))
    }

    @Test func standardInputIsRead() throws {
        let input = try String(contentsOfFile: Self.report("glibc-backtrace.txt"), encoding: .utf8)
        let result = try CLI.run(["symbolicate", "--symbols", Self.binaries] + Self.isolation, input: input)
        #expect(result.status == 0)
        let completed = result.stdout.split(separator: "\n").filter { $0.hasPrefix("/tmp/crashsym-reports/prog(+0x921)[0x") }
        #expect(completed.count == 1)
        #expect(completed.first?.hasSuffix("] in run /fixtures-reports/prog.c:8:43") == true)
    }

    @Test func unreadableReportsFailNamingTheLine() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let garbage = directory + "/garbage.txt"
        try "this is not\na crash report\n".write(toFile: garbage, atomically: true, encoding: .utf8)
        let result = try CLI.run(["symbolicate", garbage] + Self.isolation)
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == "crashsym: \(garbage): line 1: not a crash report crashsym knows ('this is not')\n")

        let missing = try CLI.run(["symbolicate", directory + "/missing.txt"] + Self.isolation)
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("cannot open"))

        let usage = try CLI.run(["symbolicate", "--input-format", "nonsense", garbage])
        #expect(usage.status == 2)
    }

    @Test func aDirectoryOfReportsIsSymbolicatedReportByReport() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for name in ["asan-use-after-free.txt", "glibc-backtrace.txt"] {
            try FileManager.default.copyItem(atPath: Self.report(name), toPath: directory + "/" + name)
        }
        let result = try CLI.run(["symbolicate", directory, "--symbols", Self.binaries, "--format", "json"] + Self.isolation)
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        let formats = try lines.map { (try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["format"] as? String }
        #expect(formats == ["sanitizer", "glibc"])
    }

    @Test func aForcedFormatThatDoesNotFitIsAnError() throws {
        let result = try CLI.run(["symbolicate", Self.report("glibc-backtrace.txt"), "--input-format", "sanitizer"] + Self.isolation)
        #expect(result.status == 1)
        #expect(result.stderr == "crashsym: \(Self.report("glibc-backtrace.txt")): no stack frames found in the sanitizer report\n")
    }

    @Test func swiftJSONAndTombstonesPrintTheirModels() throws {
        let swift = try CLI.run(["symbolicate", Self.report("swift-backtrace.json"), "--symbols", Self.binaries] + Self.isolation)
        #expect(swift.status == 0)
        // A JSON input has no lines to reprint: its stacks are listed.
        #expect(swift.stdout.hasPrefix("crash-swift (crashed):\n    #0 0x"))
        #expect(swift.stdout.contains(" (crash-swift) in crash.lookUp(_: Swift.String, in: [Swift.String : Swift.Int]) -> Swift.Int /fixtures-reports/crash.swift:5:15\n"))

        let tombstone = try CLI.run(["symbolicate", Self.report("tombstone-arm64.txt"), "--symbols",
                                     CLI.fixture("libnative-android21-aarch64.so"), "--format", "json"] + Self.isolation)
        #expect(tombstone.status == 0)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(tombstone.stdout.utf8)) as? [String: Any])
        #expect(json["signal"] as? String == "SIGSEGV")
        let stacks = try #require(json["stacks"] as? [[String: Any]])
        #expect(stacks.map { $0["thread"] as? String } == ["4242", "4261"])
        let apk = try #require((stacks[1]["frames"] as? [[String: Any]])?.first)
        #expect(apk["module_offset"] as? String == "0x3d4")
        #expect((apk["symbolized"] as? [[String: Any]])?.map { $0["function"] as? String }
                == ["scale", "accumulate", "Java_com_example_fixture_NativeLib_compute"])
    }

    /// `--swift-names simplified` spells every Swift frame, inlined ones included, in both writers
    /// as `swift-demangle --simplified` spells its mangled name (`Shape.name.getter`), and `full`,
    /// the default, as `swift-demangle` does.
    @Test func swiftNamesChooseHowFramesAreSpelled() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Return addresses in swift-O: stdlib specialisations inlined into main, closures, a
        // protocol witness and a value witness.
        let report = directory + "/swift-O.txt"
        let lines = [0x3f01, 0x4001, 0x4101, 0x3f41, 0x1e55, 0x3ca5].map { offset in
            "/tmp/x/swift-O(+0x\(String(offset, radix: 16)))[0x\(String(0x5555_5555_0000 + offset, radix: 16))]\n"
        }
        try lines.joined().write(toFile: report, atomically: true, encoding: .utf8)
        var spellings: [String: [String]] = [:]
        for style in ["full", "simplified"] {
            let arguments = ["symbolicate", report, "--symbols", CLI.fixture("swift-O"), "--swift-names", style] + Self.isolation
            let json = try CLI.run(arguments + ["--format", "json"])
            #expect(json.status == 0)
            let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            let frames = (document["stacks"] as? [[String: Any]] ?? []).flatMap { $0["frames"] as? [[String: Any]] ?? [] }
            let symbolized = frames.flatMap { $0["symbolized"] as? [[String: Any]] ?? [] }
                .compactMap { frame in (frame["function"] as? String).map { ($0, frame["mangled"] as? String ?? "") } }
                .filter { $0.1.hasPrefix("$s") }
            #expect(symbolized.count >= 12)
            let mangled = symbolized.map(\.1)
            let theirs = try Tool.run(DemangleCommandTests.toolchainBinary("swift-demangle"),
                                      (style == "simplified" ? ["--simplified"] : []) + ["--compact"] + mangled).text
                .split(separator: "\n").map(String.init)
            #expect(symbolized.map(\.0) == theirs)
            spellings[style] = theirs
            // The text writer prints the same names.
            let text = try CLI.run(arguments)
            #expect(text.status == 0)
            for name in theirs { #expect(text.stdout.contains(" \(name) /"), "\(name)") }
        }
        #expect(spellings["simplified"]?.contains("protocol witness for Shape.name.getter in conformance Circle") == true)
        #expect(spellings["full"] != spellings["simplified"])
    }
}
