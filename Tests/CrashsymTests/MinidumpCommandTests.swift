import Foundation
import Testing
import TestSupport

/// `crashsym symbolicate crash.dmp` on the real minidump of ../shared/reference/minidump-linux,
/// against what Breakpad's processor reported for it (its README).
@Suite struct MinidumpCommandTests {
    static let directory = CLI.root.appendingPathComponent("../shared/reference/minidump-linux").standardized.path

    static func frames(_ arguments: [String]) throws -> (document: [String: Any], frames: [[String: Any]]) {
        let run = try CLI.run(["symbolicate", directory + "/crash_linux.dmp", "--format", "json", "--no-cache"] + arguments)
        #expect(run.status == 0, "\(run.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        let stacks = try #require(document["stacks"] as? [[String: Any]])
        #expect(stacks.count == 1)
        #expect(stacks.first?["thread"] as? String == "133")
        #expect(stacks.first?["crashed"] as? Bool == true)
        return (document, try #require(stacks.first?["frames"] as? [[String: Any]]))
    }

    static func function(_ frame: [String: Any]) -> String? {
        ((frame["symbolized"] as? [[String: Any]])?.first?["function"] as? String)
    }

    @Test("With crash_linux's CFI: Breakpad's frames, crash() then start() at 0x40207a, SIGSEGV at 0")
    func withCFI() throws {
        let (document, frames) = try Self.frames(["--symbols", Self.directory + "/crash_linux"])
        #expect(document["format"] as? String == "minidump")
        #expect(document["signal"] as? String == "SIGSEGV")
        #expect(document["reason"] as? String == "SIGSEGV /0x00000000 at 0x0")
        let modules = try #require(document["modules"] as? [[String: Any]])
        let module = try #require(modules.first { $0["name"] as? String == "crash_linux" })
        #expect(module["build_id"] as? String == "db4c55d26192c436b9766a086583b9b5a6d2e271")
        #expect(module["load_address"] as? String == "0x400000")
        Self.expectBreakpadFrames(frames)
        #expect(frames.first?["address_kind"] as? String == "exact")
        #expect(frames[1]["address_kind"] as? String == "return-address")
    }

    /// Breakpad's frames with CFI (its README) up to its fifth: crash(), start() at 0x40207a,
    /// main, __libc_start_main, the first found as given, the others by CFI. Breakpad's fifth is
    /// a scanned 0x40207c, which crashsym refuses (the code before it, in the dump and in the
    /// ELF file, ends with no call: SymCoreTests' StackWalkTests); what crashsym scans past it
    /// is marked so.
    static func expectBreakpadFrames(_ frames: [[String: Any]]) {
        #expect(frames.count >= 4)
        guard frames.count >= 4 else { return }
        #expect(Self.function(frames[0]) == "(anonymous namespace)::crash()")
        #expect(frames[1]["address"] as? String == "0x40207a")
        #expect(Self.function(frames[1]) == "(anonymous namespace)::start()")
        #expect(Self.function(frames[2]) == "main")
        #expect(frames[3]["address"] as? String == "0x7fa9d1c0c830")
        #expect(frames.prefix(4).map { $0["found_by"] as? String } == ["context", "cfi", "cfi", "cfi"])
        #expect(!frames.contains { $0["address"] as? String == "0x40207c" })
        #expect(frames.dropFirst(4).allSatisfy { $0["found_by"] as? String == "scan" })
    }

    @Test("A table alone (crashsym dump's, no ELF file on the search path): the same frames by its unwind rules")
    func withTableOnly() throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("crashsym-minidump-table-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let dump = try CLI.run(["dump", Self.directory + "/crash_linux", "-o", output])
        #expect(dump.status == 0, "\(dump.stderr)")
        let (_, frames) = try Self.frames(["--symbols", output, "--no-module-paths"])
        Self.expectBreakpadFrames(frames)
    }

    @Test("Text: each walked frame says how it was found under its line and inlined frames; --input-format minidump forces the reader")
    func textFoundBy() throws {
        let run = try CLI.run(["symbolicate", Self.directory + "/crash_linux.dmp", "--no-cache", "--symbols", Self.directory + "/crash_linux",
                               "--input-format", "minidump"])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let first = try #require(lines.firstIndex { $0.hasPrefix("#0  0x") })
        #expect(lines[first].contains(" in (anonymous namespace)::crash() "))
        #expect(lines[first + 1] == "    Found by: context")
        let second = try #require(lines.firstIndex { $0.hasPrefix("#1  0x000000000040207a in (anonymous namespace)::start() ") })
        #expect(lines[second + 1] == "    Found by: cfi")
        // Every frame line is followed (after its inlined frames) by one such line.
        #expect(lines.filter { $0.hasPrefix("#") }.count == lines.filter { $0.hasPrefix("    Found by: ") }.count)
        // A text file given as a minidump is refused with the reason, not parsed.
        let notDump = try CLI.run(["symbolicate", CLI.root.appendingPathComponent("README.md").path, "--input-format", "minidump"])
        #expect(notDump.status == 1)
        #expect(notDump.stderr.contains("not a minidump"))
    }

    @Test("Without CFI (no ELF file for any module): frame 1 is Breakpad's scanned 0x40207a, every frame in a module")
    func withoutCFI() throws {
        let (_, frames) = try Self.frames(["--no-module-paths"])
        #expect(frames.count > 3)
        #expect(frames[1]["address"] as? String == "0x40207a")
        #expect(frames[1]["found_by"] as? String == "scan")
        #expect(frames.allSatisfy { $0["module"] as? String != nil })
        #expect(frames.allSatisfy { $0["status"] as? String == "no-symbols" })
    }

    @Test("--max-report-frames: a minidump of 100,000 threads is refused once its walks pass the budget (default 100000, as the server's), exit 1 with the reason and nothing printed in part, from a file (text, JSON) and from standard input; under the budget it is walked in full")
    func frameBudget() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let hostile = directory + "/threads.dmp"
        // 100,000 copies of the one thread (the same stack and context): ~5 MB.
        try HostileMinidump.bytes(.threads(100_000), from: Self.directory + "/crash_linux.dmp").write(to: URL(fileURLWithPath: hostile))
        let symbols = ["--no-cache", "--symbols", Self.directory + "/crash_linux"]
        let refused = try CLI.run(["symbolicate", hostile] + symbols)
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("the minidump's 100000 threads walk to more than 100000 frames (--max-report-frames)"), "\(refused.stderr)")
        #expect(refused.stdout.isEmpty, "nothing printed in part")
        let json = try CLI.run(["symbolicate", hostile, "--format", "json"] + symbols)
        #expect(json.status == 1)
        let failure = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect(failure?["source"] as? String == hostile)
        #expect(((failure?["error"] as? [String: Any])?["message"] as? String)?.contains("more than 100000 frames") == true, "\(json.stdout)")
        let input = try Data(contentsOf: URL(fileURLWithPath: hostile))
        let piped = try Tool.run(CLI.binary, ["symbolicate", "-", "--max-report-frames", "5000"] + symbols, input: input, environment: [:], directory: CLI.root)
        #expect(piped.status == 1)
        #expect(piped.stderr.contains("<stdin>") && piped.stderr.contains("walk to more than 5000 frames (--max-report-frames)"), "\(piped.stderr)")

        // Under the budget: every thread, each with the reference's own frames.
        let few = directory + "/few.dmp"
        try HostileMinidump.bytes(.threads(3), from: Self.directory + "/crash_linux.dmp").write(to: URL(fileURLWithPath: few))
        let walked = try CLI.run(["symbolicate", few, "--format", "json"] + symbols)
        #expect(walked.status == 0, "\(walked.stderr)")
        let stacks = (try JSONSerialization.jsonObject(with: Data(walked.stdout.utf8)) as? [String: Any])?["stacks"] as? [[String: Any]]
        #expect(stacks?.count == 3)
        let perThread = (stacks?.first?["frames"] as? [[String: Any]])?.count ?? 0
        for stack in stacks ?? [] { Self.expectBreakpadFrames(stack["frames"] as? [[String: Any]] ?? []) }
        // The budget is the sum over threads: exactly their frames pass, one fewer does not.
        let exact = try CLI.run(["symbolicate", few, "--max-report-frames", String(3 * perThread)] + symbols)
        #expect(exact.status == 0, "\(exact.stderr)")
        let short = try CLI.run(["symbolicate", few, "--max-report-frames", String(3 * perThread - 1)] + symbols)
        #expect(short.status == 1)
        #expect(short.stderr.contains("the minidump's 3 threads walk to more than \(3 * perThread - 1) frames"), "\(short.stderr)")
        let usage = try CLI.run(["symbolicate", few, "--max-report-frames", "0"])
        #expect(usage.status == 2)
        #expect(usage.stderr.contains("--max-report-frames must be at least 1"))
        #expect(try CLI.run(["symbolicate", "--help"]).stdout.contains("--max-report-frames"))
    }
}
