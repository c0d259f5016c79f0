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
}
