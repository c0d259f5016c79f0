import Foundation
import Testing
import TestSupport

/// `crashsym agent --metrics-port`: the counters of `status` as Prometheus text on 127.0.0.1.
@Suite(.serialized) struct AgentMetricsTests {
    @Test func metricsCountDeliveriesAndTheQueue() throws {
        let server = try AgentTestServer()
        let (spool, state) = try AgentTests.directories(server)
        let agent = try AgentProcess(AgentTests.flags(server, spool: spool, state: state, ["--metrics-port", "0"]),
                                     key: server.key, scratch: server.scratch)
        let logged = try #require(agent.log.firstMatch(of: /metrics on http:\/\/127\.0\.0\.1:(\d+)\/metrics/), "\(agent.log)")
        let base = "http://127.0.0.1:\(logged.1)"
        func scrape(_ path: String = "/metrics") throws -> (status: Int32, text: String) {
            let run = try Tool.run("/usr/bin/curl", ["-sS", "--max-time", "10", "-w", "\n%{http_code}", base + path])
            return (run.status, run.text)
        }
        let empty = try scrape()
        #expect(empty.status == 0)
        #expect(empty.text.contains("# TYPE crashsym_agent_delivered_total counter\ncrashsym_agent_delivered_total 0\n"), "\(empty.text)")
        #expect(!empty.text.contains("crashsym_agent_last_success_timestamp_seconds"))
        #expect(empty.text.hasSuffix("\n200"))
        for marker in 0..<3 {
            try AgentTest.write(AgentTest.glibcReport(marker), to: spool + "/.r\(marker)")
            #expect(rename(spool + "/.r\(marker)", spool + "/r\(marker).txt") == 0)
        }
        #expect(try AgentTest.eventually { try server.crashes().count == 3 }, "\(agent.log)")
        #expect(try AgentTest.eventually { try scrape().text.contains("crashsym_agent_delivered_total 3\n") }, "\(agent.log)")
        let text = try scrape().text
        #expect(text.contains("crashsym_agent_queue_reports 0\n"))
        #expect(text.contains("crashsym_agent_rejected_total 0\n"))
        let last = try #require(text.firstMatch(of: /crashsym_agent_last_success_timestamp_seconds (\d+)\.\d{3}\n/))
        #expect(abs((Double(last.1) ?? 0) - Date().timeIntervalSince1970) < 600)
        let other = try scrape("/")
        #expect(other.text.hasSuffix("\n404"))
        #expect(agent.terminate() == 0, "\(agent.log)")
    }

    /// A port that is taken is a failure naming it.
    @Test func aTakenPortIsAFailureNamingIt() throws {
        let server = try AgentTestServer()
        let (spool, state) = try AgentTests.directories(server)
        let run = try AgentTests.agent(AgentTests.flags(server, spool: spool, state: state, ["--metrics-port", String(server.port)]),
                                       key: server.key)
        #expect(run.status == 1)
        #expect(run.stderr.contains("cannot listen on 127.0.0.1:\(server.port)"), "\(run.stderr)")
    }
}
