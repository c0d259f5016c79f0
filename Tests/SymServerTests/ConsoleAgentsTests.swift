import Foundation
import Testing

/// The app page lists the app's agents (`crashsym agent`) as their submissions reported them
/// (the `Crashsym-Agent-Counts` header): host, last seen, queue, drops and storm-suppressed
/// reports, escaped like every other value. Over real HTTP, as a browser would.
@Suite struct ConsoleAgentsTests {
    /// Posts a crash as an agent on `host` with `counts` in its header.
    static func post(_ server: TestServer, marker: Int, host: String, counts: String) throws {
        let answer = try server.request("POST", "/api/v1/apps/\(server.appID)/crashes?host=\(host)", extra: [
            "-H", "Content-Type: text/plain", "-H", "Crashsym-Agent-Counts: \(counts)",
            "--data-binary", "crash \(marker)\n./prog(+0x1189)[0x55d0c0a00189]\n",
        ])
        #expect(answer.status == 201, "\(answer.text)")
    }

    @Test("the app page shows each agent's host, last report, queue, drops and storm-suppressed counts, escaped")
    func agentsOnTheAppPage() throws {
        let server = try TestServer()
        let password = try server.createUser("ops", admin: true)
        let console = ConsoleClient(server)
        #expect(try console.signIn("ops", password).status == 303)
        let empty = try console.get("/apps/\(server.appID)")
        #expect(empty.status == 200)
        #expect(empty.text.contains("No <code>crashsym agent</code> has reported to this app yet"))

        try Self.post(server, marker: 1, host: "web-1", counts: "agent=00000000000000aa; dropped=12; suppressed=340; queue=7")
        // A hostile host label (the query's `host`) is text on the page, never markup.
        try Self.post(server, marker: 2, host: "%3Cscript%3Ealert(1)%3C%2Fscript%3E",
                      counts: "agent=00000000000000bb; dropped=0; suppressed=0")
        let page = try console.get("/apps/\(server.appID)")
        #expect(page.status == 200)
        let html = page.text
        let section = try #require(html.range(of: "<h2 id=\"agents-title\">Agents</h2>").map { String(html[$0.lowerBound...]) })
        #expect(!section.contains("No <code>crashsym agent</code>"))
        #expect(!html.contains("<script>alert"))
        #expect(section.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        // One row per agent, newest report first: the hostile one (no queue given), then web-1.
        let rows = section.components(separatedBy: "<tr class=").dropFirst().map { String($0.prefix { $0 != "\n" }) }
        #expect(rows.count == 2, "\(section)")
        let web = try #require(rows.first { $0.contains("web-1") })
        #expect(web.hasPrefix("\"lossy\""))
        #expect(web.contains("00000000000000aa"))
        #expect(web.contains("<td class=\"num\">7</td><td class=\"num loss\">12</td><td class=\"num\">340</td>"), "\(web)")
        #expect(web.contains("<time datetime=\"20"))
        let hostile = try #require(rows.first { $0.contains("00000000000000bb") })
        #expect(hostile.contains("<td class=\"num\">–</td><td class=\"num loss\">0</td><td class=\"num\">0</td>"), "\(hostile)")
        #expect(!hostile.hasPrefix("\"lossy\""))
        // The API says the same.
        let agents = try server.request("GET", "/api/v1/apps/\(server.appID)/agents").json["agents"] as? [[String: Any]] ?? []
        #expect(agents.first { $0["agent_id"] as? String == "00000000000000aa" }?["queue"] as? Int == 7)
        #expect(agents.first { $0["agent_id"] as? String == "00000000000000bb" }.map { $0["queue"] == nil } == true)
    }
}
