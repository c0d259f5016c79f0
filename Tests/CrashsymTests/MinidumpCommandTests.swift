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

    @Test("With crash_linux's CFI: Breakpad's 5 frames, crash() then start() at 0x40207a, SIGSEGV at 0")
    func withCFI() throws {
        let (document, frames) = try Self.frames(["--symbols", Self.directory + "/crash_linux"])
        #expect(document["signal"] as? String == "SIGSEGV")
        #expect(document["reason"] as? String == "SIGSEGV /0x00000000 at 0x0")
        let modules = try #require(document["modules"] as? [[String: Any]])
        let module = try #require(modules.first { $0["name"] as? String == "crash_linux" })
        #expect(module["build_id"] as? String == "db4c55d26192c436b9766a086583b9b5a6d2e271")
        #expect(module["load_address"] as? String == "0x400000")
        #expect(frames.count == 5)
        #expect(frames.first?["address_kind"] as? String == "exact")
        #expect(Self.function(frames[0]) == "(anonymous namespace)::crash()")
        #expect(frames[1]["address"] as? String == "0x40207a")
        #expect(frames[1]["address_kind"] as? String == "return-address")
        #expect(Self.function(frames[1]) == "(anonymous namespace)::start()")
        #expect(Self.function(frames[2]) == "main")
    }

    @Test("A table alone (crashsym dump's, no ELF file on the search path): the same 5 frames by its unwind rules")
    func withTableOnly() throws {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("crashsym-minidump-table-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let dump = try CLI.run(["dump", Self.directory + "/crash_linux", "-o", output])
        #expect(dump.status == 0, "\(dump.stderr)")
        let (_, frames) = try Self.frames(["--symbols", output, "--no-module-paths"])
        #expect(frames.count == 5)
        #expect(Self.function(frames[0]) == "(anonymous namespace)::crash()")
        #expect(frames[1]["address"] as? String == "0x40207a")
        #expect(Self.function(frames[1]) == "(anonymous namespace)::start()")
        #expect(Self.function(frames[2]) == "main")
    }

    @Test("Without CFI (no ELF file for any module): frame 1 is Breakpad's scanned 0x40207a, every frame in a module")
    func withoutCFI() throws {
        let (_, frames) = try Self.frames(["--no-module-paths"])
        #expect(frames.count > 5)
        #expect(frames[1]["address"] as? String == "0x40207a")
        #expect(frames.allSatisfy { $0["module"] as? String != nil })
        #expect(frames.allSatisfy { $0["status"] as? String == "no-symbols" })
    }
}
