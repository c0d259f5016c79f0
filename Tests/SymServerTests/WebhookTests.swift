import Foundation
import Synchronization
import Testing

/// Notifications over real HTTP: a `crashsym serve` process and a receiver process on 127.0.0.1
/// (docs/webhooks.md).
@Suite(.serialized)
struct WebhookTests {
    @Test("a storm of one new bug sends one group.new, signed; a second bug its own; the payload names the group, crash and link")
    func newGroup() throws {
        let server = try TestServer(arguments: ["--spike-min", "1000", "--public-url", "https://crashes.example.com/"])
        let receiver = try WebhookReceiver(directory: server.scratch, secret: "s3cret value")
        // The secret from a file (its first line, without the newline): the receiver checks each
        // signature with the bare secret.
        let secretFile = server.scratch + "/hook.secret"
        try "s3cret value\nignored second line\n".write(toFile: secretFile, atomically: true, encoding: .utf8)
        let hook = try server.addWebhook(receiver.url("/ok"), ["--secret-file", secretFile])
        let first = try server.submitCrash(in: "parse_header")
        let group = try #require(first["group_id"] as? String)
        // The storm: 24 more at once, processed by two workers.
        let report = server.scratch + "/storm.txt"
        try "/app/prog(parse_header+0x10)[0x5555555551a0]\n/app/prog(main+0x20)[0x555555555200]\n"
            .write(toFile: report, atomically: true, encoding: .utf8)
        let accepted = Mutex(0)
        let client = server.client
        DispatchQueue.concurrentPerform(iterations: 24) { _ in
            let answer = try? client.request("POST", "/api/v1/apps/\(client.appID)/crashes?version=1.0",
                                             extra: ["-H", "Content-Type: text/plain", "--data-binary", "@" + report])
            if answer?.status == 201 { accepted.withLock { $0 += 1 } }
        }
        #expect(accepted.withLock { $0 } == 24)
        #expect(try CrashFixtures.eventually(within: 30) { try server.get("groups/\(group)").json["count"] as? Int == 25 })
        let other = try #require(try server.submitCrash(in: "load_config", version: "1.1")["group_id"] as? String)
        #expect(try CrashFixtures.eventually(within: 60) { receiver.requests().count >= 2 })
        Thread.sleep(forTimeInterval: 1)  // nothing more may come
        let requests = receiver.requests()
        #expect(requests.count == 2)
        #expect(requests.allSatisfy { $0.event == "group.new" && $0.signatureValid == true && $0.path == "/ok" })
        #expect(requests.allSatisfy { $0.headers["content-type"] == "application/json" })
        #expect(Set(requests.compactMap(\.delivery)).count == 2)
        let request = try #require(requests.first { ($0.json["group"] as? [String: Any])?["id"] as? String == group })
        let body = request.json
        #expect(body["event"] as? String == "group.new")
        #expect(body["app"] as? String == server.appID)
        #expect(body["delivery"] as? String == request.delivery)
        #expect(body["version"] as? String == "1.0")
        let summary = try #require(body["group"] as? [String: Any])
        #expect(summary["count"] as? Int == 1)
        #expect(summary["signature"] as? String == "parse_header | main")
        #expect(summary["title"] as? String == "Crash in parse_header")
        #expect(summary["versions"] as? [String] == ["1.0"])
        #expect(summary["first_seen"] is String && summary["last_seen"] is String)
        let crash = try #require(body["crash"] as? [String: Any])
        #expect(crash["id"] as? String == first["id"] as? String)
        #expect(crash["url"] as? String == "https://crashes.example.com/apps/\(server.appID)/crashes/\(first["id"] as? String ?? "")")
        #expect(requests.contains { ($0.json["group"] as? [String: Any])?["id"] as? String == other })

        let deliveries = try server.deliveries(hook)
        #expect(deliveries.count == 2)
        #expect(deliveries.allSatisfy { $0["state"] as? String == "delivered" && $0["attempts"] as? Int == 1 && $0["last_status"] as? Int == 200 })
        #expect(Set(deliveries.compactMap { $0["id"] as? String }) == Set(requests.compactMap(\.delivery)))
    }

    @Test("deliveries to one receiver reuse its connection")
    func connectionReuse() throws {
        let server = try TestServer(arguments: ["--spike-min", "1000"])
        let receiver = try WebhookReceiver(directory: server.scratch)
        _ = try server.addWebhook(receiver.url("/ok"))
        try server.submitCrash(in: "parse_header")
        #expect(try CrashFixtures.eventually(within: 60) { receiver.requests().count == 1 })
        try server.submitCrash(in: "load_config")
        #expect(try CrashFixtures.eventually(within: 60) { receiver.requests().count == 2 })
        let requests = receiver.requests()
        #expect(requests.map(\.event) == ["group.new", "group.new"])
        #expect(requests[0].clientPort != 0 && requests[0].clientPort == requests.last?.clientPort,
                "ports \(requests.map(\.clientPort))")
    }

    @Test("resolve, the same version again: nothing; a newer version: one group.regression")
    func regression() throws {
        let server = try TestServer()
        let receiver = try WebhookReceiver(directory: server.scratch)
        let created = try server.request("POST", "/api/v1/apps/\(server.appID)/webhooks",
                                         json: #"{"url": "\#(receiver.url("/ok"))", "events": ["group.regression"]}"#)
        #expect(created.status == 201)
        let group = try #require(try server.submitCrash(in: "gfx_copy", version: "1.9")["group_id"] as? String)
        let patch = try server.request("PATCH", "/api/v1/apps/\(server.appID)/groups/\(group)", json: #"{"state":"resolved"}"#)
        #expect(patch.status == 200)
        try server.submitCrash(in: "gfx_copy", version: "1.9")
        try server.submitCrash(in: "gfx_copy", version: "1.2")
        Thread.sleep(forTimeInterval: 1)
        #expect(receiver.requests().isEmpty)
        try server.submitCrash(in: "gfx_copy", version: "1.10")
        #expect(try CrashFixtures.eventually(within: 60) { !receiver.requests().isEmpty })
        try server.submitCrash(in: "gfx_copy", version: "1.11")  // already open again: no second notice
        Thread.sleep(forTimeInterval: 1)
        let requests = receiver.requests()
        #expect(requests.count == 1)
        #expect(requests.first?.event == "group.regression")
        #expect(requests.first?.signatureValid == nil)
        #expect(requests.first?.headers["x-crashsym-signature"] == nil)
        let body = try #require(requests.first?.json)
        #expect(body["version"] as? String == "1.10")
        let summary = body["group"] as? [String: Any]
        #expect(summary?["id"] as? String == group)
        #expect(summary?["state"] as? String == "open")
        #expect(summary?["resolved_in"] as? String == "1.9")
        #expect(summary?["reopened_in"] as? String == "1.10")
        #expect(summary?["count"] as? Int == 4)
        #expect((body["crash"] as? [String: Any])?["url"] is NSNull)
    }

    @Test("spike: at --spike-min in the last hour with no history, once an hour; a group whose week averages more needs --spike-factor times it")
    func spike() throws {
        let server = try TestServer(arguments: ["--spike-min", "5", "--spike-factor", "3"])
        let receiver = try WebhookReceiver(directory: server.scratch)
        _ = try server.addWebhook(receiver.url("/ok"), ["--events", "spike"])
        // A group with a history: 3 crashes an hour in the week before the last hour.
        let busy = try #require(try server.submitCrash(in: "busy_path")["group_id"] as? String)
        let now = Int(Date().timeIntervalSince1970 / 60)
        var rows: [String] = []
        for hour in 2...168 { rows.append("('\(busy)', \(now - hour * 60), 3)") }
        let sql = "INSERT INTO crash_group_minute (group_id, minute, count) VALUES \(rows.joined(separator: ","));"
        let inserted = try Binary.run("/usr/bin/sqlite3", [server.dataDirectory + "/metadata.sqlite", ".timeout 5000", sql])
        #expect(inserted.status == 0, "\(inserted.stderr)")
        for _ in 0..<5 { try server.submitCrash(in: "busy_path") }  // 6 in the hour < 3 × 2.98
        for _ in 0..<4 { try server.submitCrash(in: "new_path") }
        Thread.sleep(forTimeInterval: 1)
        #expect(receiver.requests().isEmpty)
        let fresh = try #require(try server.submitCrash(in: "new_path")["group_id"] as? String)  // the 5th
        #expect(try CrashFixtures.eventually(within: 60) { receiver.requests().count == 1 })
        for _ in 0..<6 { try server.submitCrash(in: "new_path") }  // at most one notice an hour
        Thread.sleep(forTimeInterval: 1)
        let requests = receiver.requests()
        #expect(requests.count == 1)
        #expect(requests.first?.event == "group.spike")
        let body = try #require(requests.first?.json)
        #expect((body["group"] as? [String: Any])?["id"] as? String == fresh)
        #expect((body["spike"] as? [String: Any])?["last_hour"] as? Int == 5)
        #expect((body["spike"] as? [String: Any])?["hourly_average"] as? Double == 0)
    }

    @Test("500 twice, then 200: three attempts with one delivery id; 410: one attempt, failed, never again")
    func retries() throws {
        let server = try TestServer(arguments: ["--webhook-retry-base", "0.2", "--spike-min", "1000"])
        let receiver = try WebhookReceiver(directory: server.scratch)
        let flaky = try server.addWebhook(receiver.url("/fail/2/500"), ["--events", "new-group"])
        let gone = try server.addWebhook(receiver.url("/status/410"), ["--events", "new-group"])
        try server.submitCrash(in: "flaky_bug")
        #expect(try CrashFixtures.eventually(within: 60) {
            try server.deliveries(flaky).first?["state"] as? String == "delivered"
        })
        Thread.sleep(forTimeInterval: 1.5)
        let flakyRequests = receiver.requests().filter { $0.path == "/fail/2/500" }
        #expect(flakyRequests.count == 3)
        #expect(Set(flakyRequests.compactMap(\.delivery)).count == 1)
        #expect(Set(flakyRequests.map(\.body)).count == 1)
        let delivered = try #require(try server.deliveries(flaky).first)
        #expect(delivered["attempts"] as? Int == 3)
        #expect(delivered["last_status"] as? Int == 200)
        #expect(delivered["delivered"] is String)
        #expect(delivered["next_attempt"] is NSNull)

        let goneRequests = receiver.requests().filter { $0.path == "/status/410" }
        #expect(goneRequests.count == 1)
        let failed = try #require(try server.deliveries(gone).first)
        #expect(failed["state"] as? String == "failed")
        #expect(failed["attempts"] as? Int == 1)
        #expect(failed["last_status"] as? Int == 410)
        #expect(failed["last_error"] as? String == "HTTP 410")
    }

    @Test("receiver down: connection failures are retried with backoff; once it is back, delivered with the same id")
    func receiverDown() throws {
        let server = try TestServer(arguments: ["--webhook-retry-base", "0.2", "--spike-min", "1000"])
        let gone = try WebhookReceiver(directory: server.scratch)
        let port = gone.port
        gone.stop()
        let hook = try server.addWebhook("http://127.0.0.1:\(port)/ok", ["--events", "new-group"])
        try server.submitCrash(in: "down_bug")
        #expect(try CrashFixtures.eventually(within: 60) { (try server.deliveries(hook).first?["attempts"] as? Int ?? 0) >= 3 })
        let failing = try #require(try server.deliveries(hook).first)
        #expect(failing["state"] as? String == "pending")
        #expect(failing["last_status"] is NSNull)
        let back = try WebhookReceiver(directory: server.scratch, port: port)
        #expect(try CrashFixtures.eventually(within: 60) { try server.deliveries(hook).first?["state"] as? String == "delivered" })
        #expect(back.requests().count == 1)
        #expect(back.requests().first?.delivery == failing["id"] as? String)
        #expect((try server.deliveries(hook).first?["attempts"] as? Int ?? 0) > 3)
    }

    @Test("kill -9 with a delivery in flight, and with the receiver down: after a restart each is delivered with its delivery id")
    func killAndRestart() throws {
        let server = try TestServer(arguments: ["--webhook-retry-base", "0.5", "--webhook-timeout", "60", "--spike-min", "1000"])
        let receiver = try WebhookReceiver(directory: server.scratch)
        let hanging = try server.addWebhook(receiver.url("/hang-once"), ["--events", "new-group"])
        // A port nothing listens on: the receiver that had it is gone.
        let down = try WebhookReceiver(directory: server.scratch)
        let downPort = down.port
        down.stop()
        let later = try server.addWebhook("http://127.0.0.1:\(downPort)/ok", ["--events", "new-group"])
        try server.submitCrash(in: "killed_bug")
        #expect(try CrashFixtures.eventually(within: 60) { receiver.requests().count == 1 })
        #expect(try CrashFixtures.eventually(within: 60) { (try server.deliveries(later).first?["attempts"] as? Int ?? 0) >= 1 })
        let waiting = try #require(try server.deliveries(later).first)
        #expect(waiting["state"] as? String == "pending")
        #expect(waiting["last_status"] is NSNull)
        #expect((waiting["last_error"] as? String)?.isEmpty == false)
        #expect(waiting["next_attempt"] is String)
        server.crash()

        let back = try WebhookReceiver(directory: server.scratch, port: downPort)
        try server.start()
        #expect(try CrashFixtures.eventually(within: 60) { receiver.requests().count == 2 && back.requests().count == 1 })
        let requests = receiver.requests()
        #expect(requests.count == 2)
        #expect(requests[0].delivery != nil && requests[0].delivery == requests[1].delivery)
        #expect(requests[0].body == requests[1].body)
        #expect(back.requests().first?.delivery == waiting["id"] as? String)
        #expect(try server.deliveries(hanging).first?["state"] as? String == "delivered")
        #expect(try server.deliveries(later).first?["state"] as? String == "delivered")
    }

    @Test("slack format posts {\"text\": …} with the title and a link")
    func slack() throws {
        let server = try TestServer(arguments: ["--public-url", "https://crashes.example.com"])
        let receiver = try WebhookReceiver(directory: server.scratch)
        _ = try server.addWebhook(receiver.url("/ok"), ["--format", "slack", "--events", "new-group"])
        let crash = try server.submitCrash(in: "render_frame")
        #expect(try CrashFixtures.eventually(within: 60) { receiver.requests().count == 1 })
        let body = try #require(receiver.requests().first?.json)
        #expect(Array(body.keys) == ["text"])
        let text = try #require(body["text"] as? String)
        #expect(text.hasPrefix("*New crash in \(server.appID) 1.0*\n"))
        #expect(text.contains("Crash in render_frame"))
        #expect(text.contains("<https://crashes.example.com/apps/\(server.appID)/crashes/\(crash["id"] as? String ?? "")|Open crash"))
    }

    @Test("many new groups at once: each delivered once, in order, one at a time per webhook")
    func manyGroups() throws {
        let server = try TestServer(arguments: ["--spike-min", "1000"])
        let receiver = try WebhookReceiver(directory: server.scratch)
        let hook = try server.addWebhook(receiver.url("/slow/20"), ["--events", "new-group"])
        var groups: [String] = []
        for index in 0..<30 { groups.append(try #require(try server.submitCrash(in: "bug_\(index)")["group_id"] as? String)) }
        #expect(try CrashFixtures.eventually(within: 60) { receiver.requests().count >= 30 })
        Thread.sleep(forTimeInterval: 0.5)
        let requests = receiver.requests()
        #expect(requests.count == 30)
        #expect(requests.map { ($0.json["group"] as? [String: Any])?["id"] as? String ?? "" } == groups)
        #expect(requests.map(\.inflight).max() == 1)
        #expect(try server.deliveries(hook).allSatisfy { $0["state"] as? String == "delivered" })
    }

    @Test("routes: app key required; URLs, events and formats validated; secrets never shown; delete")
    func routes() throws {
        let server = try TestServer()
        let path = "/api/v1/apps/\(server.appID)/webhooks"
        #expect(try server.request("GET", path, key: .some(nil)).status == 401)
        #expect(try server.request("GET", path, key: "wrong").status == 401)
        #expect(try server.request("POST", path, key: .some(nil), json: #"{"url": "http://127.0.0.1:9/x"}"#).status == 401)
        func refused(_ json: String, _ message: String) throws {
            let answer = try server.request("POST", path, json: json)
            #expect(answer.status == 400, "\(json)")
            #expect(answer.errorCode == "bad-request")
            #expect(((answer.json["error"] as? [String: Any])?["message"] as? String)?.contains(message) == true, "\(answer.text)")
        }
        try refused(#"{"url": "ftp://127.0.0.1/x"}"#, "http or https")
        try refused(#"{"url": "http://169.254.169.254/latest/meta-data"}"#, "link-local or cloud metadata")
        try refused(#"{"url": "http://[fd00:ec2::254]/"}"#, "link-local or cloud metadata")
        try refused(#"{"url": "http://10.1.2.3/hook"}"#, "--webhook-allow-private")
        try refused(#"{"url": "http://user:pw@127.0.0.1/hook"}"#, "user or password")
        try refused(#"{"url": "not a url"}"#, "not a URL")
        try refused(#"{"url": "http://127.0.0.1/x", "events": ["group.gone"]}"#, "unknown event")
        try refused(#"{"url": "http://127.0.0.1/x", "format": "xml"}"#, "json or slack")
        try refused(#"{"events": []}"#, "the body must be")

        let created = try server.request("POST", path, json: #"{"url": "http://127.0.0.1:9/x", "secret": "hunter2-secret", "format": "slack"}"#)
        #expect(created.status == 201)
        #expect(!created.text.contains("hunter2-secret"))
        #expect(created.json["has_secret"] as? Bool == true)
        #expect(created.json["events"] as? [String] == ["group.new", "group.regression", "group.spike"])
        let id = try #require(created.json["id"] as? String)
        let listed = try server.request("GET", path)
        #expect(!listed.text.contains("hunter2-secret"))
        #expect((listed.json["webhooks"] as? [[String: Any]])?.map { $0["id"] as? String } == [id])
        let cli = try Binary.crashsym(["apps", "webhooks", "list", server.appID, "--data-dir", server.dataDirectory, "--format", "json"])
        #expect(cli.status == 0)
        #expect(cli.stdout.contains(id) && !cli.stdout.contains("hunter2-secret"))
        let both = try Binary.crashsym(["apps", "webhooks", "add", server.appID, "http://127.0.0.1:9/", "--data-dir",
                                        server.dataDirectory, "--secret", "a", "--secret-file", "/dev/null"])
        #expect(both.status == 64 || both.status == 2, "\(both.status) \(both.stderr)")
        #expect(both.stderr.contains("not both"))
        let empty = try Binary.crashsym(["apps", "webhooks", "add", server.appID, "http://127.0.0.1:9/", "--data-dir",
                                         server.dataDirectory, "--secret-file", "/dev/null"])
        #expect(empty.status != 0 && empty.stderr.contains("the first line is empty"), "\(empty.stderr)")
        #expect(try Binary.crashsym(["apps", "webhooks", "add", server.appID, "http://169.254.169.254/", "--data-dir",
                                     server.dataDirectory]).status == 2)
        #expect(try Binary.crashsym(["apps", "webhooks", "add", "no-such-app", "http://127.0.0.1/", "--data-dir",
                                     server.dataDirectory]).status == 1)
        #expect(try server.get("webhooks/\(id)/deliveries").json["deliveries"] as? [Any] != nil)
        #expect(try server.get("webhooks/0123456789abcdef/deliveries").status == 404)
        #expect(try server.get("webhooks/nope/deliveries").status == 400)
        #expect(try server.request("DELETE", path + "/\(id)", key: .some(nil)).status == 401)
        #expect(try server.request("DELETE", path + "/\(id)").status == 204)
        #expect(try server.request("DELETE", path + "/\(id)").status == 404)
        #expect((try server.request("GET", path).json["webhooks"] as? [Any])?.isEmpty == true)
        let removed = try Binary.crashsym(["apps", "webhooks", "remove", server.appID, id, "--data-dir", server.dataDirectory])
        #expect(removed.status == 1)
    }
}
