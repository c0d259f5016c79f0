import Foundation
import Testing

/// JSON output that names its inputs: `symbolicate --format json` (each document's `source`, a
/// failed report as a document with its `error`) and `dump --format json` (failed files), and
/// eu-stack reports of core files end to end, through the built binary.
@Suite struct ReportJSONCommandTests {
    static func documents(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
    }

    @Test func everyDocumentOfADirectoryNamesItsFileAndAFailedReportIsADocument() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for name in ["asan-use-after-free.txt", "eu-stack-core.txt"] {
            try FileManager.default.copyItem(atPath: SymbolicateCommandTests.report(name), toPath: directory + "/" + name)
        }
        try "this is not\na crash report\n".write(toFile: directory + "/garbage.txt", atomically: true, encoding: .utf8)
        let result = try CLI.run(["symbolicate", directory, "--symbols", SymbolicateCommandTests.binaries, "--format", "json"]
                                 + SymbolicateCommandTests.isolation)
        #expect(result.status == 1)
        let documents = try Self.documents(result.stdout)
        #expect(documents.map { $0["source"] as? String } == ["asan-use-after-free.txt", "eu-stack-core.txt", "garbage.txt"].map { directory + "/" + $0 })
        #expect(documents.map { $0["format"] as? String } == ["sanitizer", "eu-stack", nil])
        let error = try #require(documents[2]["error"] as? [String: Any])
        #expect(error["code"] as? String == "bad-magic")
        #expect(error["message"] as? String == "line 1: not a crash report crashsym knows ('this is not')")
        // The source member comes first; the rest of the document is as documented.
        #expect(result.stdout.hasPrefix(#"{"source":""#))
        #expect(result.stderr == "crashsym: \(directory)/garbage.txt: line 1: not a crash report crashsym knows ('this is not')\n")
    }

    @Test func standardInputIsNamedWithADash() throws {
        let input = try String(contentsOfFile: SymbolicateCommandTests.report("glibc-backtrace.txt"), encoding: .utf8)
        let result = try CLI.run(["symbolicate", "--format", "json"] + SymbolicateCommandTests.isolation, input: input)
        #expect(result.status == 0)
        #expect(try Self.documents(result.stdout).map { $0["source"] as? String } == ["-"])
        let failed = try CLI.run(["symbolicate", "--format", "json"] + SymbolicateCommandTests.isolation, input: "nothing\n")
        #expect(failed.status == 1)
        let document = try #require(try Self.documents(failed.stdout).first)
        #expect(document["source"] as? String == "-")
        #expect((document["error"] as? [String: Any])?["code"] as? String == "bad-magic")
    }

    @Test func dumpReportsFailedFilesInItsJSON() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let broken = directory + "/broken.so"
        let elf = try Data(contentsOf: URL(fileURLWithPath: SymbolicateCommandTests.report("src/core-crash")))
        try elf.prefix(200).write(to: URL(fileURLWithPath: broken))
        let result = try CLI.run(["dump", SymbolicateCommandTests.report("src/core-crash"), broken, directory + "/missing",
                                  "-o", directory + "/out", "--format", "json"])
        #expect(result.status == 1)
        let documents = try Self.documents(result.stdout)
        #expect(documents.count == 3)
        #expect(documents.contains { $0["build_id"] as? String == "5945480ce2db8d8783f6e783313dfae5abae451d" })
        let failures = documents.filter { $0["error"] != nil }
        #expect(Set(failures.compactMap { $0["path"] as? String }) == [broken, directory + "/missing"])
        for failure in failures {
            let error = try #require(failure["error"] as? [String: Any])
            #expect((error["code"] as? String)?.isEmpty == false)
            #expect((error["message"] as? String)?.isEmpty == false)
            // The same failure is said on stderr.
            #expect(result.stderr.contains(failure["path"] as! String))
        }
    }

    /// eu-stack of a core file (C, SIGSEGV inside an inlined helper), detected and symbolicated.
    @Test func anEuStackReportOfACoreFileIsSymbolicated() throws {
        let result = try CLI.run(["symbolicate", SymbolicateCommandTests.report("eu-stack-core.txt"),
                                  "--symbols", SymbolicateCommandTests.binaries] + SymbolicateCommandTests.isolation)
        #expect(result.status == 0)
        #expect(result.stdout.contains(" update in store /fixtures-reports/core-crash.c:6:11\n    inlined into update /fixtures-reports/core-crash.c:11:5\n"))
        #expect(result.stdout.contains(" main in main /fixtures-reports/core-crash.c:15:5\n"))
        let threads = try CLI.run(["symbolicate", SymbolicateCommandTests.report("eu-stack-core-threads.txt"), "--format", "json",
                                   "--symbols", SymbolicateCommandTests.binaries] + SymbolicateCommandTests.isolation)
        let document = try #require(try Self.documents(threads.stdout).first)
        let stacks = try #require(document["stacks"] as? [[String: Any]])
        #expect(stacks.count == 5)
        #expect(stacks.map { $0["crashed"] as? Bool } == [true, false, false, false, false])
        let functions = (stacks[0]["frames"] as? [[String: Any]] ?? []).flatMap { ($0["symbolized"] as? [[String: Any]] ?? []).compactMap { $0["function"] as? String } }
        #expect(functions.contains("fixture::Worker<int>::fail()"))
    }
}
