import Foundation
import GRDB
import Synchronization
import Testing

/// `crashsym migrate`: an embedded store made by a real server (symbols uploaded, crashes
/// processed and grouped, grouping rules, a webhook with its outbox, console users) moved into a
/// throw-away PostgreSQL 15 and a SeaweedFS bucket; a server on the shared stores then answers as
/// the embedded one did. Interrupted with kill -9 and run again, it finishes and duplicates nothing.
struct MigrateTests {
    static let asan = CrashFixtures.reports + "/asan-use-after-free.txt"
    static let ubsan = CrashFixtures.reports + "/ubsan-overflow.txt"

    /// An embedded server with real data, stopped: symbols, `crashes` crashes of two bugs
    /// (processed), rules, a webhook whose deliveries wait in the outbox, a console user.
    static func embeddedStore(crashes: Int) throws -> TestServer {
        let server = try TestServer()
        let rules = #"{"rules": [{"action": "skip", "function": "no_such_function", "note": "migrate test"}]}"#
        #expect(try server.request("PUT", "/api/v1/apps/\(server.appID)/grouping-rules", json: rules).status == 200)
        // A receiver that is not there: deliveries stay pending in the outbox.
        let created = try server.request("POST", "/api/v1/apps/\(server.appID)/webhooks",
                                         json: #"{"url": "http://127.0.0.1:9/hook", "events": ["group.new"]}"#)
        #expect(created.status == 201, "\(created.text)")
        let tables = server.scratch + "/tables"
        try FileManager.default.createDirectory(atPath: tables, withIntermediateDirectories: true)
        try CrashFixtures.upload(try CrashFixtures.tables(into: tables, programs: ["prog-asan", "libfault-asan.so"]), to: server, version: "1.0")
        let client = server.client
        let failures = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: crashes) { index in
            let answer = try? client.request("POST", "/api/v1/apps/\(client.appID)/crashes?version=1.0&system=Linux%206.1.0-18-amd64%20x86_64",
                                             extra: ["-H", "Content-Type: text/plain", "--data-binary", "@" + (index % 3 == 0 ? ubsan : asan)])
            if answer?.status != 201 { failures.add(1, ordering: .relaxed) }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
        #expect(try CrashFixtures.eventually(within: 120) {
            (try server.get("groups").json["groups"] as? [[String: Any]] ?? []).compactMap { $0["count"] as? Int }.reduce(0, +) == crashes
        })
        let user = try Binary.crashsym(["users", "create", "alice", "--admin", "--data-dir", server.dataDirectory])
        #expect(user.status == 0, "\(user.stderr)")
        #expect(server.terminate() == 0)
        return server
    }

    /// `crashsym migrate` with the S3 credentials.
    static func migrate(_ source: TestServer, _ database: String, _ objects: String, _ extra: [String] = []) throws -> Binary.Output {
        try Binary.crashsym(["migrate", "--from-data-dir", source.dataDirectory, "--database", database, "--object-store", objects] + extra,
                            environment: try SeaweedFS.shared.get().environment)
    }

    static func summary(_ output: Binary.Output) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(output.stdout.utf8))) as? [String: Any] ?? [:]
    }

    /// Rows per table, from a summary.
    static func rows(_ summary: [String: Any], _ field: String) -> [String: Int] {
        var rows: [String: Int] = [:]
        for table in summary["tables"] as? [[String: Any]] ?? [] {
            rows[table["table"] as? String ?? ""] = table[field] as? Int
        }
        return rows
    }

    @Test("migrate: an embedded store into PostgreSQL and S3; a server there answers the same; dry run, conflicts and rerun")
    func sameAnswersAfterMigration() async throws {
        let embedded = try Self.embeddedStore(crashes: 9)
        // What the embedded server answers, taken while it runs again.
        try embedded.start()
        let symbolicated = try embedded.post("symbolicate", file: Self.asan, query: "version=1.0")
        #expect(symbolicated.status == 200 && symbolicated.text.contains("fault_use_after_free"))
        let crashes = try embedded.get("crashes?limit=100").json["crashes"] as? [[String: Any]] ?? []
        let groups = try embedded.get("groups").json["groups"] as? [[String: Any]] ?? []
        let sample = try #require(crashes.first?["id"] as? String)
        let sampleCrash = try embedded.crash(sample)
        #expect(sampleCrash["system"] as? String == "Linux 6.1.0-18-amd64 x86_64")  // compared after the move below
        let raw = try embedded.get("crashes/\(sample)/raw")
        let raws = try crashes.compactMap { $0["id"] as? String }.map { ($0, try embedded.get("crashes/\($0)/raw").body) }
        let webhooks = try embedded.get("webhooks").json["webhooks"] as? [[String: Any]] ?? []
        #expect(crashes.count == 9 && groups.count == 2 && webhooks.count == 1 && raw.status == 200)
        #expect(embedded.terminate() == 0)

        try await PostgresCluster.with { cluster in
            let weed = try SeaweedFS.shared.get()
            let objects = weed.url(bucket: SeaweedFS.bucket, prefix: "t-" + UUID().uuidString.lowercased().prefix(20) + "/")
            func sql(_ query: String) throws -> String { try cluster.psql(query).stdout.trimmingCharacters(in: .whitespacesAndNewlines) }

            // A dry run writes nothing and counts everything.
            let dry = try Self.migrate(embedded, cluster.url(), objects, ["--dry-run", "--format", "json"])
            #expect(dry.status == 0, "\(dry.stderr)")
            let counts = Self.rows(Self.summary(dry), "rows")
            #expect(counts["crash"] == 9 && counts["crash_group"] == 2 && counts["module"] == 2 && counts["webhook"] == 1
                && (counts["webhook_delivery"] ?? 0) >= 2 && counts["console_user"] == 1 && counts["grouping_rules"] == 1, "\(counts)")
            #expect(Self.rows(Self.summary(dry), "inserted") == counts)
            #expect(try sql("SELECT count(*) FROM crash") == "0")

            // A database holding another app under the same id: refused, nothing written; --overwrite replaces it.
            let other = try Binary.crashsym(["apps", "create", "other", "--id", embedded.appID, "--database", cluster.url()])
            #expect(other.status == 0, "\(other.stderr)")
            let refused = try Self.migrate(embedded, cluster.url(), objects)
            #expect(refused.status == 1 && refused.stderr.contains("already holds 1 row(s)") && refused.stderr.contains("--overwrite"),
                    "\(refused.stderr)")
            #expect(try sql("SELECT count(*) FROM crash") == "0")

            let first = try Self.migrate(embedded, cluster.url(), objects, ["--overwrite", "--format", "json"])
            #expect(first.status == 0, "\(first.stderr)")
            let written = Self.summary(first)
            #expect(Self.rows(written, "different")["app"] == 1)
            // The packs holding the nine crashes' raw reports (CrashPack.swift) and two tables.
            let packs = try DatabaseQueue(path: embedded.dataDirectory + "/metadata.sqlite").read { db in
                try Int.fetchOne(db, sql: "SELECT count(DISTINCT raw_pack) FROM crash WHERE raw_pack IS NOT NULL") ?? 0
            }
            #expect(packs >= 1)
            let objectCounts = written["objects"] as? [String: Any] ?? [:]
            #expect(objectCounts["objects"] as? Int == packs + 2 && objectCounts["copied"] as? Int == packs + 2, "\(objectCounts)")
            for (table, count) in counts { #expect(try sql("SELECT count(*) FROM \(table)") == String(count), "\(table)") }
            let text = try Self.migrate(embedded, cluster.url(), objects)
            #expect(text.status == 0 && text.stdout.contains("the target already held everything"), "\(text.stdout)")

            // A node on the shared stores, with a data directory of its own: the objects come from the bucket.
            let shared = try TestServer(arguments: ["--object-store", objects], database: cluster.url(), app: (embedded.appID, embedded.key),
                                        environment: weed.environment)
            let again = try shared.post("symbolicate", file: Self.asan, query: "version=1.0")
            #expect(again.status == 200 && again.text == symbolicated.text)
            let sharedCrashes = try shared.get("crashes?limit=100").json["crashes"] as? [[String: Any]] ?? []
            #expect(sharedCrashes.compactMap { $0["id"] as? String } == crashes.compactMap { $0["id"] as? String })
            let sharedGroups = try shared.get("groups").json["groups"] as? [[String: Any]] ?? []
            func digest(_ groups: [[String: Any]]) -> [String] {
                groups.map { "\($0["id"] ?? "") \($0["count"] ?? "") \($0["title"] ?? "")" }.sorted()
            }
            #expect(digest(sharedGroups) == digest(groups))
            let sharedCrash = try shared.crash(sample)
            let canonical = { (object: Any) in
                String(decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data(), as: UTF8.self)
            }
            #expect(canonical(sharedCrash) == canonical(sampleCrash))
            #expect(try shared.get("crashes/\(sample)/raw").body == raw.body)
            // Every crash's bytes, each a member of a pack moved to the bucket (a ranged GET).
            for (id, body) in raws { #expect(try shared.get("crashes/\(id)/raw").body == body, "crash \(id)") }
            #expect((try shared.get("webhooks").json["webhooks"] as? [[String: Any]] ?? []).map { $0["id"] as? String }
                == webhooks.map { $0["id"] as? String })
            // The key, stored hashed, still works (every request above used it); new crashes get new numbers.
            let posted = try shared.post("crashes", file: Self.ubsan, query: "wait=20&version=1.0")
            #expect(posted.status == 201 && posted.json["state"] as? String == "done", "\(posted.text)")
            #expect(try sql("SELECT count(*) FROM crash") == "10")
            let users = try Binary.crashsym(["users", "list", "--database", cluster.url()])
            #expect(users.stdout.contains("alice (admin)"))
        }
    }

    @Test("migrate killed with -9 again and again, at later and later points, then run again: the job finishes, nothing twice; a further run is a no-op")
    func killedAndResumed() async throws {
        let embedded = try Self.embeddedStore(crashes: 150)
        try await PostgresCluster.with { cluster in
            let weed = try SeaweedFS.shared.get()
            let objects = weed.url(bucket: SeaweedFS.bucket, prefix: "t-" + UUID().uuidString.lowercased().prefix(20) + "/")
            func sql(_ query: String) throws -> String { try cluster.psql(query).stdout.trimmingCharacters(in: .whitespacesAndNewlines) }
            let expected = Self.rows(Self.summary(try Self.migrate(embedded, cluster.url(), objects, ["--dry-run", "--format", "json"])), "rows")
            #expect(expected["crash"] == 150)

            // kill -9 after 0.1 s, then a rerun killed after 0.2 s, and so on, until a run finishes by
            // itself: kills land in every phase (objects, comparison, rows); one row per
            // transaction, so that they land among the rows.
            let sumOfCounts = "SELECT " + expected.keys.sorted().map { "(SELECT count(*) FROM \($0))" }.joined(separator: " + ")
            let total = expected.values.reduce(0, +)
            var partialKills = 0
            var kills = 0
            for attempt in 1...60 {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: Binary.crashsym)
                process.arguments = ["migrate", "--from-data-dir", embedded.dataDirectory, "--database", cluster.url(),
                                     "--object-store", objects, "--batch-rows", "1"]
                process.environment = ProcessInfo.processInfo.environment.merging(weed.environment) { $1 }
                process.standardOutput = FileHandle.nullDevice
                process.standardError = FileHandle.nullDevice
                try process.run()
                usleep(useconds_t(attempt) * 100_000)
                guard process.isRunning else {
                    process.waitUntilExit()
                    break
                }
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                kills += 1
                let rows = Int(try sql(sumOfCounts)) ?? 0
                if rows > 0 && rows < total { partialKills += 1 }
                // Never a row twice, whenever the kill came.
                #expect(try sql("SELECT count(*) - count(DISTINCT id) FROM crash") == "0")
            }
            #expect(partialKills > 0, "\(kills) kills, none while the rows were being copied")
            let atKill = Int(try sql("SELECT count(*) FROM crash")) ?? 0

            let resumed = try Self.migrate(embedded, cluster.url(), objects, ["--format", "json"])
            #expect(resumed.status == 0, "\(resumed.stderr)")
            let summary = Self.summary(resumed)
            #expect(Self.rows(summary, "inserted")["crash"] == 150 - atKill && Self.rows(summary, "identical")["crash"] == atKill,
                    "\(summary)")
            for (table, count) in expected { #expect(try sql("SELECT count(*) FROM \(table)") == String(count), "\(table)") }
            #expect(try sql("SELECT count(DISTINCT id) FROM crash") == "150")
            // The next crash number is past the copied ones.
            #expect(try sql("SELECT nextval('crash_seq_seq') > (SELECT max(seq) FROM crash)") == "t")

            let third = try Self.migrate(embedded, cluster.url(), objects, ["--format", "json"])
            #expect(third.status == 0 && Self.summary(third)["changed"] as? Bool == false, "\(third.stdout)")
            #expect(Self.rows(Self.summary(third), "identical") == expected)
            print("migrate: \(kills) kills (\(partialKills) among the rows); the rerun finished in \(summary["milliseconds"] ?? "?") ms")
        }
    }

    @Test("migrate: usage errors and a directory without a store are one clear line, with exit 2 and 1")
    func usageErrors() throws {
        let directory = try Binary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let noDatabase = try Binary.crashsym(["migrate", "--from-data-dir", directory])
        #expect(noDatabase.status == 2 && noDatabase.stderr.contains("--database postgres://… is required"), "\(noDatabase.stderr)")
        let badURL = try Binary.crashsym(["migrate", "--from-data-dir", directory, "--database", "postgres://u@h/db?sslmode=maybe"])
        #expect(badURL.status == 2 && badURL.stderr.contains("sslmode=maybe is not one of"), "\(badURL.stderr)")
        let noStore = try Binary.crashsym(["migrate", "--from-data-dir", directory, "--database", "postgres://u@127.0.0.1:1/db"])
        #expect(noStore.status == 1 && noStore.stderr.contains("holds no crashsym store"), "\(noStore.stderr)")
        let batch = try Binary.crashsym(["migrate", "--from-data-dir", directory, "--database", "postgres://u@h/db", "--batch-rows", "0"])
        #expect(batch.status == 2 && batch.stderr.contains("--batch-rows"), "\(batch.stderr)")
    }
}
