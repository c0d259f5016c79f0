import Foundation
import Synchronization
import Testing

/// `crashsym serve --database postgres://…` over real HTTP, on a throw-away PostgreSQL 15: the
/// same answers as the embedded store, and several nodes sharing the work of one database (and,
/// in `twoNodesAndAKill`, one SeaweedFS bucket).
struct SharedDatabaseTests {
    static let asan = CrashFixtures.reports + "/asan-use-after-free.txt"
    static let ubsan = CrashFixtures.reports + "/ubsan-overflow.txt"

    /// A crash and its late symbols through a PostgreSQL node give the report and group the
    /// embedded store gives for the same inputs.
    @Test("a PostgreSQL node symbolicates, groups and requeues late symbols as the embedded store does")
    func sameAnswersAsSQLite() async throws {
        try await PostgresCluster.with { cluster in
            let shared = try TestServer(database: cluster.url())
            let embedded = try TestServer()
            var reports: [String] = []
            for server in [shared, embedded] {
                let posted = try server.post("crashes", file: Self.asan, query: "wait=20&version=1.0")
                #expect(posted.status == 201 && posted.json["state"] as? String == "done", "\(posted.text)")
                let id = try #require(posted.json["id"] as? String)
                let tables = server.scratch + "/tables"
                try FileManager.default.createDirectory(atPath: tables, withIntermediateDirectories: true)
                let modules = try CrashFixtures.tables(into: tables, programs: ["prog-asan", "libfault-asan.so"])
                try CrashFixtures.upload(modules, to: server, version: "1.0")
                #expect(try CrashFixtures.eventually(within: 30) {
                    try (server.crash(id)["missing_build_ids"] as? [String]).map { Set($0).isDisjoint(with: modules.map(\.buildID)) } ?? false
                })
                let crash = try server.crash(id)
                #expect((crash["signature"] as? String)?.contains("fault_use_after_free") == true)
                let report = try JSONSerialization.data(withJSONObject: crash["report"] ?? [:], options: [.sortedKeys])
                reports.append(String(decoding: report, as: UTF8.self))
                let groups = try server.get("groups").json["groups"] as? [[String: Any]] ?? []
                #expect(groups.count == 1 && groups.first?["count"] as? Int == 1 && groups.first?["id"] as? String == crash["group_id"] as? String)
                let symbolicated = try server.post("symbolicate", file: Self.asan, query: "version=1.0")
                #expect(symbolicated.status == 200 && symbolicated.text.contains("fault_use_after_free"))
                let versions = try server.get("versions").json["versions"] as? [[String: Any]] ?? []
                #expect(versions.map { $0["version"] as? String } == ["1.0"])
            }
            #expect(reports[0] == reports[1])
            // The app and its key live in PostgreSQL: `apps list --database` sees them.
            let listed = try Binary.crashsym(["apps", "list", "--database", cluster.url(), "--format", "json"])
            #expect(listed.status == 0 && listed.stdout.contains("\"id\":\"\(shared.appID)\""), "\(listed.stderr)")
        }
    }

    /// Two nodes sharing one PostgreSQL and one SeaweedFS bucket, each with a data directory of
    /// its own (nothing shared on disk): symbols uploaded through A serve B; 1,000 crashes
    /// ingested through both; node A, stopped (SIGSTOP) while it alone holds leased jobs, is
    /// killed (-9), and B processes A's jobs once their lease has ended; every crash is processed
    /// and counted once.
    @Test("two nodes share PostgreSQL and S3; 1,000 crashes over both; a node killed with leased jobs loses none of them")
    func twoNodesAndAKill() async throws {
        try await PostgresCluster.with { cluster in
            let weed = try SeaweedFS.shared.get()
            let objects = weed.url(bucket: SeaweedFS.bucket, prefix: "t-" + UUID().uuidString.lowercased().prefix(20) + "/")
            let leaseSeconds = 3
            let options = ["--job-lease-seconds", String(leaseSeconds), "--crash-workers", "2", "--object-store", objects]
            let a = try TestServer(arguments: options, database: cluster.url(), environment: weed.environment)
            let b = try TestServer(arguments: options, database: cluster.url(), app: (a.appID, a.key), environment: weed.environment)
            #expect(a.dataDirectory != b.dataDirectory)
            let tables = a.scratch + "/tables"
            try FileManager.default.createDirectory(atPath: tables, withIntermediateDirectories: true)
            try CrashFixtures.upload(try CrashFixtures.tables(into: tables, programs: ["prog-asan", "libfault-asan.so"]), to: a, version: "1.0")
            // B has never seen the table: it fetches it from the bucket.
            let viaB = try b.post("symbolicate", file: Self.asan, query: "version=1.0")
            #expect(viaB.status == 200 && viaB.text.contains("fault_use_after_free"))
            func sql(_ query: String) throws -> String {
                try cluster.psql(query).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            func ingest(_ servers: [TestServer], _ count: Int) -> Int {
                let clients = servers.map(\.client)
                let failures = Atomic<Int>(0)
                DispatchQueue.concurrentPerform(iterations: count) { index in
                    let client = clients[index % clients.count]
                    let answer = try? client.request("POST", "/api/v1/apps/\(client.appID)/crashes?version=1.0",
                                                     extra: ["-H", "Content-Type: text/plain", "--data-binary", "@" + (index % 3 == 0 ? Self.ubsan : Self.asan)])
                    if answer?.status != 201 { failures.add(1, ordering: .relaxed) }
                }
                return failures.load(ordering: .relaxed)
            }
            let total = 1_000
            // Most of them through both nodes, processed by both.
            #expect(ingest([a, b], 700) == 0)
            var ingested = 700
            #expect(try CrashFixtures.eventually(within: 300) { try sql("SELECT count(*) FROM crash_job") == "0" })
            #expect(try sql("SELECT count(*) FROM crash WHERE state = 'done'") == "700")
            // B idle and frozen (it holds no lease); A alone, frozen in the middle of its work while it holds leases.
            let pidA = try #require(a.process?.processIdentifier), pidB = try #require(b.process?.processIdentifier)
            kill(pidB, SIGSTOP)
            var held: [String] = []
            var leaseEnd: Int64 = 0
            for _ in 0..<4 where held.isEmpty {
                #expect(ingest([a], 60) == 0)
                ingested += 60
                kill(pidA, SIGSTOP)
                let stoppedAt = Int64(Date().timeIntervalSince1970 * 1000)
                held = try sql("SELECT crash_seq FROM crash_job WHERE lease_until_ms > \(stoppedAt) ORDER BY crash_seq")
                    .split(separator: "\n").map(String.init)
                if held.isEmpty { kill(pidA, SIGCONT) } else {
                    leaseEnd = Int64(try sql("SELECT min(lease_until_ms) FROM crash_job WHERE crash_seq IN (\(held.joined(separator: ",")))")) ?? 0
                }
            }
            try #require(!held.isEmpty, "node A never held a lease")
            a.crash()
            kill(pidB, SIGCONT)
            #expect(ingest([b], total - ingested) == 0)
            #expect(try CrashFixtures.eventually(within: 300) { try sql("SELECT count(*) FROM crash WHERE state = 'done'") == String(total) })
            #expect(try sql("SELECT count(*) FROM crash_job") == "0")
            // A's jobs were done by B, after their lease ended.
            let late = try sql("SELECT count(*) FROM crash WHERE seq IN (\(held.joined(separator: ","))) AND symbolicated_ms >= \(leaseEnd)")
            #expect(late == String(held.count), "\(held.count) jobs held by A, \(late) processed after the lease")
            // Each crash counted once in its group; B serves A's crashes' raw bytes from the bucket.
            #expect(try sql("SELECT sum(count) FROM crash_group") == String(total))
            let groups = try b.get("groups").json["groups"] as? [[String: Any]] ?? []
            #expect(groups.compactMap { $0["count"] as? Int }.reduce(0, +) == total && groups.count == 2)
            let first = try sql("SELECT id FROM crash ORDER BY seq LIMIT 1")
            #expect(try b.get("crashes/\(first)/raw").status == 200)
            print("node A killed holding \(held.count) leased jobs; B processed them after the lease; \(total) crashes in all")
        }
    }

    /// PostgreSQL down: requests answer 503 with `Retry-After` (after the connection wait), and
    /// the node reconnects by itself once it is back; an unreachable database at start is one line.
    @Test("PostgreSQL down: 503 with Retry-After, then the node reconnects; unreachable at start: a clear error")
    func outageAndReconnect() async throws {
        try await PostgresCluster.with { cluster in
            let server = try TestServer(database: cluster.url())
            #expect(try server.get("versions").status == 200)
            cluster.stopServer()
            let down = try server.get("versions")
            #expect(down.status == 503 && down.errorCode == "unavailable" && down.headers["retry-after"] == "5", "\(down.status) \(down.text)")
            try cluster.restartServer()
            #expect(try CrashFixtures.eventually(within: 60) { try server.get("versions").status == 200 })
            let posted = try server.post("crashes", file: Self.asan, query: "wait=20")
            #expect(posted.status == 201 && posted.json["state"] as? String == "done")
        }
        try SeaweedFS.withRefusingPort { port in
            let refused = try Binary.crashsym(["apps", "list", "--database", "postgres://crashsym@127.0.0.1:\(port)/none"])
            #expect(refused.status == 1 && refused.stderr.contains("cannot connect to PostgreSQL at 127.0.0.1:\(port)"), "\(refused.stderr)")
        }
        let wrong = try Binary.crashsym(["apps", "list", "--database", "mysql://u@h/db"])
        #expect(wrong.status == 2 && wrong.stderr.contains("not a postgres://user@host/database URL"))
    }

    /// Two nodes read one outbox: each delivery reaches the receiver once (the claim), whichever
    /// node processed the crash.
    @Test("two nodes on one outbox: each webhook delivery is sent once")
    func webhooksOnceAcrossNodes() async throws {
        try await PostgresCluster.with { cluster in
            let a = try TestServer(database: cluster.url())
            let b = try TestServer(database: cluster.url(), dataDirectory: a.dataDirectory, app: (a.appID, a.key))
            let receiver = try WebhookReceiver(directory: a.scratch)
            let created = try a.request("POST", "/api/v1/apps/\(a.appID)/webhooks",
                                        json: #"{"url": "\#(receiver.url("/ok"))", "events": ["group.new"]}"#)
            #expect(created.status == 201)
            for index in 0..<12 { try (index % 2 == 0 ? a : b).submitCrash(in: "bug_\(index)") }
            #expect(CrashFixtures.eventually(within: 60) { receiver.requests().count >= 12 })
            try await Task.sleep(for: .seconds(2))  // time for a second copy to arrive, were one sent
            let ids = receiver.requests().compactMap(\.delivery)
            #expect(ids.count == 12 && Set(ids).count == 12, "\(ids.count) requests, \(Set(ids).count) deliveries")
        }
    }
}
