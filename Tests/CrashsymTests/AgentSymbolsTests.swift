import Foundation
import Testing
import TestSupport

/// `crashsym agent --symbols`: reports symbolicated on the host, for a server that has no symbols.
@Suite(.serialized) struct AgentSymbolsTests {
    /// A real AddressSanitizer report (symbolize=0) whose binaries are in Fixtures/reports/src
    /// reaches a server without symbols already symbolicated: the body stored is crashsym JSON
    /// with the frames' functions and lines, read as crashsym-json, and the crash the server shows
    /// keeps them (marked as the sender's). Without --symbols the same report arrives as taken,
    /// unresolved.
    @Test func aReportIsSymbolicatedOnTheHostBeforeItIsSent() throws {
        let server = try AgentTestServer()
        let (spool, state) = try AgentTests.directories(server)
        let report = try String(contentsOf: CLI.root.appendingPathComponent("Fixtures/reports/asan-use-after-free.txt"), encoding: .utf8)
        try AgentTest.write(report, to: spool + "/asan.13658", age: 5)
        let symbols = CLI.root.appendingPathComponent("Fixtures/reports/src").path
        let run = try AgentTests.agent(AgentTests.flags(server, spool: spool, state: state, ["--once", "--symbols", symbols]),
                                       key: server.key)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("taken 1, delivered 1"), "\(run.stdout)")
        let crash = try #require(try server.crashes().first)
        let id = try #require(crash["id"] as? String)
        let raw = try JSONSerialization.jsonObject(with: try server.raw(id)) as? [String: Any] ?? [:]
        let stacks = raw["stacks"] as? [[String: Any]] ?? []
        let first = try #require(stacks.first?["frames"] as? [[String: Any]])
        let names = first.flatMap { ($0["symbolized"] as? [[String: Any]] ?? []).compactMap { $0["function"] as? String } }
        // As `crashsym symbolicate` completes it (Fixtures/reports/asan-use-after-free.symbolized.txt).
        #expect(names.starts(with: ["checksum", "fault_use_after_free", "run", "dispatch"]), "\(names)")
        let lines = first.flatMap { ($0["symbolized"] as? [[String: Any]] ?? []).compactMap { $0["line"] as? Int } }
        #expect(lines.starts(with: [12, 20, 7, 15]), "\(lines)")
        // The server has no symbols of its own for these modules: the crash it shows keeps the
        // agent's functions, each frame marked as symbolicated by the sender.
        var shown: [[String: Any]] = []
        #expect(try AgentTest.eventually {
            let object = try JSONSerialization.jsonObject(with: try server.get("/api/v1/apps/\(server.appID)/crashes/\(id)")) as? [String: Any]
            guard let report = object?["report"] as? [String: Any], report["format"] as? String == "crashsym-json" else { return false }
            shown = ((report["stacks"] as? [[String: Any]])?.first?["frames"] as? [[String: Any]]) ?? []
            return true
        })
        let shownNames = shown.flatMap { ($0["symbolized"] as? [[String: Any]] ?? []).compactMap { $0["function"] as? String } }
        #expect(shownNames.starts(with: ["checksum", "fault_use_after_free", "run", "dispatch"]), "\(shownNames)")
        #expect(shown.first?["status"] as? String == "ok")
        #expect(shown.first?["symbolized_by"] as? String == "sender", "\(shown.first ?? [:])")

        // The same report without --symbols: sent as taken, nothing resolved by the server.
        let plain = try AgentTestServer()
        let (plainSpool, plainState) = try AgentTests.directories(plain)
        try AgentTest.write(report, to: plainSpool + "/asan.13658", age: 5)
        let second = try AgentTests.agent(AgentTests.flags(plain, spool: plainSpool, state: plainState, ["--once"]), key: plain.key)
        #expect(second.status == 0, "\(second.stderr)")
        let plainID = try #require(try plain.crashes().first?["id"] as? String)
        #expect(String(decoding: try plain.raw(plainID), as: UTF8.self) == report)
    }

    /// A --symbols path that does not exist is a usage error naming it.
    @Test func aMissingSymbolsPathIsAUsageError() throws {
        let run = try AgentTests.agent(["--server", "http://127.0.0.1:9", "--app-id", "a", "--spool", "/tmp",
                                        "--state-dir", "/tmp/crashsym-agent-symbols-test", "--symbols", "/nonexistent/symbols", "--once"],
                                       key: "k")
        #expect(run.status == 2)
        #expect(run.stderr.contains("/nonexistent/symbols does not exist"), "\(run.stderr)")
    }
}
