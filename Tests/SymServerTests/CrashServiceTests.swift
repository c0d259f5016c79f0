import Foundation
import GRDB
import Synchronization
import Testing

/// The crash service over real HTTP: ingestion, processing, paging, deletion, idempotency,
/// limits, groups, late symbols and retention.
struct CrashServiceTests {
    static let asan = CrashFixtures.reports + "/asan-use-after-free.txt"
    static let ubsan = CrashFixtures.reports + "/ubsan-overflow.txt"

    @Test("a crash is stored, processed in the background, listed, read back raw, deleted")
    func lifecycle() throws {
        let server = try TestServer()
        let posted = try server.post("crashes", file: Self.asan,
                                     query: "version=1.4.2&host=web-1&system=Linux%206.1.0-18-amd64%20x86_64&environment=prod")
        #expect(posted.status == 201)
        guard let id = posted.json["id"] as? String else { throw TestFailure("no id: \(posted.text)") }
        #expect(["pending", "done"].contains(posted.json["state"] as? String))
        #expect(posted.json.keys.contains("group_id"))
        #expect(try CrashFixtures.eventually(within: 30) { try server.crash(id)["state"] as? String == "done" })
        let crash = try server.crash(id)
        #expect(crash["version"] as? String == "1.4.2")
        #expect(crash["host"] as? String == "web-1")
        #expect(crash["system"] as? String == "Linux 6.1.0-18-amd64 x86_64")
        #expect(crash["environment"] as? String == "prod")
        #expect(crash["format"] as? String == "sanitizer")
        #expect(crash["signal"] as? String == "heap-use-after-free")
        #expect(crash["group_id"] is String)
        #expect(crash["last_symbolicated"] is String)
        #expect((crash["signature"] as? String)?.isEmpty == false)
        let report = crash["report"] as? [String: Any]
        #expect(report?["format"] as? String == "sanitizer")
        #expect((report?["stacks"] as? [Any])?.count == 3)

        let raw = try server.get("crashes/\(id)/raw")
        #expect(raw.status == 200)
        #expect(raw.body == (try Data(contentsOf: URL(fileURLWithPath: Self.asan))))

        // A system label that is not printable text is refused, and nothing is stored.
        let refused = try server.post("crashes", file: Self.asan, query: "system=Linux%0A6.1")
        #expect(refused.status == 400)
        #expect(refused.text.contains("system must be 1 to 255 printable characters"))
        #expect(try server.post("crashes", file: Self.asan, query: "system=").status == 400)

        let list = try server.get("crashes")
        #expect((list.json["crashes"] as? [[String: Any]])?.map { $0["id"] as? String } == [id])
        #expect((list.json["crashes"] as? [[String: Any]])?.first?["system"] as? String == "Linux 6.1.0-18-amd64 x86_64")
        #expect(list.json["next_cursor"] is NSNull)

        let deleted = try server.request("DELETE", "/api/v1/apps/\(server.appID)/crashes/\(id)")
        #expect(deleted.status == 204)
        #expect(try server.get("crashes/\(id)").status == 404)
        #expect(try server.get("crashes/\(id)/raw").status == 404)
        #expect(try server.request("DELETE", "/api/v1/apps/\(server.appID)/crashes/\(id)").status == 404)
        #expect(try server.get("crashes/not-an-id").status == 400)
        #expect(try server.request("GET", "/api/v1/apps/\(server.appID)/crashes", key: .some(nil)).status == 401)
    }

    @Test("?wait= answers once processing is done, with the group")
    func wait() throws {
        let server = try TestServer()
        let posted = try server.post("crashes", file: Self.asan, query: "wait=20")
        #expect(posted.status == 201)
        #expect(posted.json["state"] as? String == "done")
        #expect(posted.json["group_id"] is String)
        #expect(try server.post("crashes", file: Self.asan, query: "wait=31").status == 400)
    }

    @Test("an unreadable report is stored as failed with the reason; bytes that are not text get a 400 and are not stored")
    func unreadable() throws {
        let server = try TestServer()
        let text = server.scratch + "/notes.txt"
        try "just some notes\nnothing to see\n".write(toFile: text, atomically: true, encoding: .utf8)
        let posted = try server.post("crashes", file: text, query: "wait=20")
        #expect(posted.status == 201)
        #expect(posted.json["state"] as? String == "failed")
        let id = try #require(posted.json["id"] as? String)
        let crash = try server.crash(id)
        #expect((crash["failure"] as? String)?.contains("line 1") == true, "\(crash)")
        #expect(crash["report"] is NSNull)
        #expect(try server.get("crashes/\(id)/raw").text == "just some notes\nnothing to see\n")

        let binary = server.scratch + "/garbage.bin"
        var generator = SystemRandomNumberGenerator()
        try Data((0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) } + [0]).write(to: URL(fileURLWithPath: binary))
        let refused = try server.post("crashes", file: binary)
        #expect(refused.status == 400)
        #expect(refused.errorCode == "bad-request")
        #expect((try server.get("crashes").json["crashes"] as? [Any])?.count == 1)
    }

    @Test("the same Idempotency-Key answers the first crash and stores nothing")
    func idempotency() throws {
        let server = try TestServer()
        let first = try server.post("crashes", file: Self.asan, headers: ["Idempotency-Key: agent-7-crash-1"])
        let again = try server.post("crashes", file: Self.asan, headers: ["Idempotency-Key: agent-7-crash-1"])
        let other = try server.post("crashes", file: Self.asan, headers: ["Idempotency-Key: agent-7-crash-2"])
        #expect(first.status == 201)
        #expect(again.status == 201)
        #expect(again.json["id"] as? String == first.json["id"] as? String)
        #expect(other.json["id"] as? String != first.json["id"] as? String)
        #expect((try server.get("crashes").json["crashes"] as? [Any])?.count == 2)
    }

    @Test("per-app rate limit: 429 with Retry-After; body limit: 413")
    func limits() throws {
        let server = try TestServer(arguments: ["--max-crashes-per-minute", "3", "--max-report-bytes", "4000"])
        #expect(try server.post("crashes", file: Self.asan, headers: ["Idempotency-Key: limit-1"]).status == 201)
        #expect(try server.post("crashes", file: Self.asan).status == 201)
        // Requests that keep no crash do not count: refused ones (a bad version, a body that is
        // not text, one over the size limit) and a replay of a stored crash.
        let binary = server.scratch + "/binary.bin"
        try Data([0x7f, 0x45, 0x4c, 0x46, 0, 1, 2]).write(to: URL(fileURLWithPath: binary))
        for _ in 0..<2 {
            #expect(try server.post("crashes", file: Self.asan, query: "version=not%20a%20version").status == 400)
            #expect(try server.post("crashes", file: binary).status == 400)
            #expect(try server.post("crashes", file: Self.asan, headers: ["Idempotency-Key: limit-1"]).status == 201)
        }
        #expect(try server.post("crashes", file: Self.asan).status == 201)
        let limited = try server.post("crashes", file: Self.asan)
        #expect(limited.status == 429)
        #expect(limited.errorCode == "too-many-requests")
        #expect(Int(limited.headers["retry-after"] ?? "") ?? 0 >= 1)
        let big = server.scratch + "/big.txt"
        try String(repeating: "x", count: 5000).write(toFile: big, atomically: true, encoding: .utf8)
        // 413 is checked before the rate limit would matter: use the symbolicate route, not limited.
        let tooLarge = try server.post("symbolicate", file: big)
        #expect(tooLarge.status == 413)
        #expect(tooLarge.errorCode == "too-large")
    }

    @Test("cursor paging: newest first, every crash once, next_cursor null on the last page; filters")
    func paging() throws {
        let server = try TestServer()
        var ids: [String] = []
        for index in 0..<5 {
            let answer = try server.post("crashes", file: Self.asan, query: "version=\(index < 2 ? "1.0" : "2.0")")
            ids.append(try #require(answer.json["id"] as? String))
        }
        var seen: [String] = []
        var cursor: String?
        var pages = 0
        repeat {
            let page = try server.get("crashes?limit=2" + (cursor.map { "&cursor=\($0)" } ?? ""))
            #expect(page.status == 200)
            seen += (page.json["crashes"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
            cursor = page.json["next_cursor"] as? String
            pages += 1
        } while cursor != nil && pages < 10
        #expect(pages == 3)
        #expect(seen == ids.reversed())
        let old = try server.get("crashes?version=1.0")
        #expect((old.json["crashes"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ids[0..<2].reversed())
        #expect(try server.get("crashes?limit=0").status == 400)
        #expect(try server.get("crashes?cursor=abc").status == 400)
        #expect((try server.get("crashes?since=2999-01-01T00:00:00Z").json["crashes"] as? [Any])?.count == 0)
    }

    @Test("late symbols: a crash stored before its symbols resolves and moves group with no request")
    func lateSymbols() throws {
        let server = try TestServer()
        let posted = try server.post("crashes", file: Self.asan, query: "wait=20&version=1.0")
        let id = try #require(posted.json["id"] as? String)
        let before = try server.crash(id)
        let firstGroup = try #require(before["group_id"] as? String)
        let missing = try #require(before["missing_build_ids"] as? [String])
        let tables = server.scratch + "/tables"
        try FileManager.default.createDirectory(atPath: tables, withIntermediateDirectories: true)
        let modules = try CrashFixtures.tables(into: tables, programs: ["prog-asan", "libfault-asan.so"])
        for module in modules { #expect(missing.contains(module.buildID)) }
        let seen = try server.get("symbols/missing-seen").json["missing"] as? [[String: Any]] ?? []
        #expect(Set(seen.compactMap { $0["build_id"] as? String }).isSuperset(of: modules.map(\.buildID)))
        #expect(seen.first { $0["name"] as? String == "prog-asan" }?["crashes"] as? Int == 1)

        try CrashFixtures.upload(modules, to: server, version: "1.0")
        // Nothing but reads from here: the upload alone queues the crash again.
        #expect(try CrashFixtures.eventually(within: 30) {
            try (server.crash(id)["missing_build_ids"] as? [String]).map { Set($0).isDisjoint(with: modules.map(\.buildID)) } ?? false
        })
        let after = try server.crash(id)
        let secondGroup = try #require(after["group_id"] as? String)
        #expect(secondGroup != firstGroup)
        #expect((after["signature"] as? String)?.contains("fault_use_after_free") == true, "\(after["signature"] ?? "")")
        #expect(after["last_symbolicated"] as? String != before["last_symbolicated"] as? String)
        let report = try JSONSerialization.data(withJSONObject: after["report"] ?? [:])
        #expect(String(decoding: report, as: UTF8.self).contains("fault_use_after_free"))
        let groups = try server.get("groups").json["groups"] as? [[String: Any]] ?? []
        #expect(groups.map { $0["id"] as? String } == [secondGroup])
        #expect(groups.first?["count"] as? Int == 1)
        let stillMissing = try server.get("symbols/missing-seen").json["missing"] as? [[String: Any]] ?? []
        #expect(Set(stillMissing.compactMap { $0["build_id"] as? String }).isDisjoint(with: modules.map(\.buildID)))
    }

    @Test("a build-id named by two paths in one report is listed as missing once")
    func missingBuildIDOnce() throws {
        let server = try TestServer()
        let text = try String(contentsOfFile: Self.asan, encoding: .utf8)
        let copied = text.replacingOccurrences(of: "(/tmp/crashsym-reports/prog-asan+0xf90)", with: "(/opt/copy/prog-asan+0xf90)")
        #expect(copied != text)
        let path = server.scratch + "/two-paths.txt"
        try copied.write(toFile: path, atomically: true, encoding: .utf8)
        let posted = try server.post("crashes", file: path, query: "wait=20")
        let id = try #require(posted.json["id"] as? String)
        let missing = try #require(try server.crash(id)["missing_build_ids"] as? [String])
        #expect(missing.contains("4be26ceb3a483e56ab3cec1084cf06ee74f72c74"))
        #expect(missing.count == Set(missing).count, "\(missing)")
    }

    @Test("groups: same bug together, another bug apart; resolve, and a newer version reopens")
    func groups() throws {
        let server = try TestServer()
        let tables = server.scratch + "/tables"
        try FileManager.default.createDirectory(atPath: tables, withIntermediateDirectories: true)
        try CrashFixtures.upload(try CrashFixtures.tables(into: tables, programs: ["prog-asan", "libfault-asan.so", "sanitizers-ubsan"]),
                                 to: server, version: "1.0")
        let a = try server.post("crashes", file: Self.asan, query: "wait=20&version=1.0&host=a").json
        let b = try server.post("crashes", file: Self.asan, query: "wait=20&version=1.0&host=b").json
        let c = try server.post("crashes", file: Self.ubsan, query: "wait=20&version=1.0&host=a").json
        let group = try #require(a["group_id"] as? String)
        #expect(b["group_id"] as? String == group)
        #expect(c["group_id"] as? String != group)
        var listed = try server.get("groups").json["groups"] as? [[String: Any]] ?? []
        #expect(listed.count == 2)
        #expect(listed.first?["id"] as? String == group)
        #expect(listed.first?["count"] as? Int == 2)
        #expect(listed.first?["hosts"] as? Int == 2)
        #expect(listed.first?["versions"] as? [String] == ["1.0"])
        #expect((listed.first?["title"] as? String)?.hasPrefix("heap-use-after-free") == true)
        #expect(listed.first?["state"] as? String == "open")

        let patch = try server.request("PATCH", "/api/v1/apps/\(server.appID)/groups/\(group)", json: #"{"state":"resolved"}"#)
        #expect(patch.status == 200)
        #expect(patch.json["state"] as? String == "resolved")
        #expect(patch.json["resolved_in"] as? String == "1.0")
        _ = try server.post("crashes", file: Self.asan, query: "wait=20&version=1.0")
        #expect(try server.get("groups/\(group)").json["state"] as? String == "resolved")
        _ = try server.post("crashes", file: Self.asan, query: "wait=20&version=1.10")
        let reopened = try server.get("groups/\(group)").json
        #expect(reopened["state"] as? String == "open")
        #expect(reopened["reopened_in"] as? String == "1.10")
        #expect(reopened["count"] as? Int == 4)

        listed = try server.get("groups?version=1.10").json["groups"] as? [[String: Any]] ?? []
        #expect(listed.map { $0["id"] as? String } == [group])
        #expect(try server.get("groups?sort=last_seen").status == 200)
        #expect(try server.get("groups?sort=size").status == 400)
        #expect(try server.request("PATCH", "/api/v1/apps/\(server.appID)/groups/\(group)", json: #"{"state":"gone"}"#).status == 400)
        #expect(try server.request("PATCH", "/api/v1/apps/\(server.appID)/groups/0000", json: #"{"state":"open"}"#).status == 404)
    }

    @Test("grouping rules are validated, stored per app in canonical form and read back")
    func groupingRules() throws {
        let server = try TestServer()
        #expect(try server.get("grouping-rules").text == "{}")
        let rules = #"{"rules": [{"action": "skip", "function": "my_abort_wrapper*", "note": "our logger aborts"}], "app_frames": 3}"#
        let put = try server.request("PUT", "/api/v1/apps/\(server.appID)/grouping-rules", json: rules)
        #expect(put.status == 200, "\(put.text)")
        let stored = try server.get("grouping-rules")
        #expect(stored.text == put.text)
        #expect(stored.text.contains("my_abort_wrapper*"))
        #expect(stored.json["app_frames"] as? Int == 3)
        for bad in ["[1,2]", "{", #"{"rules": [{"action": "explode"}]}"#, #"{"colour": 1}"#] {
            let refused = try server.request("PUT", "/api/v1/apps/\(server.appID)/grouping-rules", json: bad)
            #expect(refused.status == 400, "\(bad)")
            #expect(refused.errorCode == "bad-request")
        }
        #expect(try server.get("grouping-rules").text == stored.text)
    }

    @Test("retention removes old crashes and their raw bytes in the background; group counts stay")
    func retention() throws {
        // 0.00005 days = 4.3 s.
        let server = try TestServer(arguments: ["--retention-days", "0.00005"])
        let posted = try server.post("crashes", file: Self.asan, query: "wait=20")
        let id = try #require(posted.json["id"] as? String)
        let group = try #require(posted.json["group_id"] as? String)
        let objects = server.dataDirectory + "/objects/sha256"
        let before = FileManager.default.enumerator(atPath: objects)?.allObjects.count ?? 0
        #expect(try CrashFixtures.eventually(within: 30) { try server.get("crashes/\(id)").status == 404 })
        let after = FileManager.default.enumerator(atPath: objects)?.allObjects.count ?? 0
        #expect(after < before)
        let kept = try server.get("groups/\(group)")
        #expect(kept.status == 200)
        #expect(kept.json["count"] as? Int == 1)
    }

    @Test("kill -9 during 32 concurrent ingests: after a restart every acknowledged crash exists and is processed")
    func killDuringIngest() async throws {
        let server = try TestServer()
        let client = server.client
        // Reports of 15,000 frames: processing lags behind ingestion, so that the kill finds
        // crashes queued and jobs leased, not only finished work; under 1 MiB (about 800 KB), so
        // that their bytes are packed (CrashPack.memberLimit), several to a pack.
        let body = try HostileReportTests.write(server, "deep.txt", HostileReportTests.frames(15_000))
        #expect(try Data(contentsOf: URL(fileURLWithPath: body)).count <= 1 << 20)
        let deadline = Date().addingTimeInterval(2)
        // The kill waits for a few acknowledgements (a loaded machine answers the first ones
        // late), so that there is acknowledged work for the restart to keep.
        let acknowledged = AcknowledgementCount()
        let accepted = try await withThrowingTaskGroup(of: [String].self) { group in
            for index in 0..<32 {
                group.addTask {
                    var ids: [String] = []
                    var count = 0
                    while Date() < deadline || count == 0 {
                        count += 1
                        guard let answer = try? client.request(
                            "POST", "/api/v1/apps/\(client.appID)/crashes?host=client-\(index)",
                            extra: ["-H", "Content-Type: text/plain", "--data-binary", "@" + body, "--max-time", "10"]) else { break }
                        guard answer.status == 201 else { break }
                        if let id = answer.json["id"] as? String {
                            ids.append(id)
                            acknowledged.add()
                        }
                    }
                    return ids
                }
            }
            try await Task.sleep(for: .milliseconds(1200))
            let patience = Date().addingTimeInterval(60)
            while acknowledged.value < 8 && Date() < patience { try await Task.sleep(for: .milliseconds(50)) }
            server.crash()
            var all: [String] = []
            for try await ids in group { all += ids }
            return all
        }
        #expect(accepted.count >= 8, "only \(accepted.count) crashes were accepted before the kill")
        try server.start()
        for id in Set(accepted) {
            #expect(try server.get("crashes/\(id)").status == 200, "crash \(id) acknowledged with 201 is missing after the restart")
        }
        var listed: [[String: Any]] = []
        let processed = try CrashFixtures.eventually(within: 60) {
            listed = try server.get("crashes?limit=1000").json["crashes"] as? [[String: Any]] ?? []
            let done = Set(listed.filter { $0["state"] as? String == "done" }.compactMap { $0["id"] as? String })
            return done.isSuperset(of: accepted)
        }
        #expect(processed, "pending work was not resumed after the restart")
        // Nothing half-written: every listed crash reads back whole.
        for crash in listed {
            let id = try #require(crash["id"] as? String)
            #expect(try server.get("crashes/\(id)/raw").body == (try Data(contentsOf: URL(fileURLWithPath: body))))
        }
        // Their bytes were packed (how many to a pack depends on how many requests this test's
        // two threads have in flight: CrashPackTests counts the sharing).
        let packs = try await DatabaseQueue(path: server.dataDirectory + "/metadata.sqlite").read { db in
            try Row.fetchOne(db, sql: "SELECT count(*) AS crashes, count(raw_pack) AS packed FROM crash")
        }
        #expect((packs?["crashes"] as Int? ?? 0) > 0 && packs?["crashes"] == packs?["packed"] as Int?)
    }
}

/// Grouping end to end: the grouping fixtures (five bugs of one program crashed for real in
/// seven builds: gcc and clang, -O0 to -O2, PIE and not, with and without ASan, two versions
/// where the code moved) posted to a server holding each build's tables.
struct CrashGroupingTests {
    static let root = Binary.root.appendingPathComponent("Fixtures/grouping").path

    @Test("the same bug lands in one group across builds, versions and runs; different bugs never share one")
    func bothDirections() throws {
        let server = try TestServer()
        let builds = try FileManager.default.contentsOfDirectory(atPath: Self.root)
            .filter { $0.hasPrefix("v") && !$0.hasSuffix(".md") }.sorted()
        #expect(builds.count >= 7)
        for build in builds {
            let directory = server.scratch + "/tables-" + build
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let files = try FileManager.default.contentsOfDirectory(atPath: Self.root + "/" + build).sorted()
            let modules = try files.map { try CrashFixtures.dump(Self.root + "/" + build + "/" + $0, into: directory) }
            try CrashFixtures.upload(modules, to: server, version: build)
        }
        var groupsByBug: [String: Set<String>] = [:]
        var bugsByGroup: [String: Set<String>] = [:]
        let reports = try FileManager.default.contentsOfDirectory(atPath: Self.root + "/reports").filter { $0.hasSuffix(".txt") }.sorted()
        #expect(reports.count >= 30)
        for report in reports {
            guard let build = builds.filter({ report.hasPrefix($0 + "-") }).max(by: { $0.count < $1.count }) else {
                Issue.record("no build for \(report)")
                continue
            }
            let bug = String(report.dropFirst(build.count + 1).dropLast(4)).replacingOccurrences(of: "-run2", with: "")
            let answer = try server.post("crashes", file: Self.root + "/reports/" + report, query: "version=\(build)&wait=25")
            #expect(answer.json["state"] as? String == "done", "\(report): \(answer.text)")
            guard let group = answer.json["group_id"] as? String else { continue }
            groupsByBug[bug, default: []].insert(group)
            bugsByGroup[group, default: []].insert(bug)
        }
        #expect(groupsByBug.count == 5)
        for (bug, groups) in groupsByBug {
            let signatures = try describe(groups, server)
            #expect(groups.count == 1, "bug \(bug) split into \(groups.count) groups: \(signatures)")
        }
        for (group, bugs) in bugsByGroup {
            #expect(bugs.count == 1, "group \(group) mixes \(bugs.sorted())")
        }
    }

    private func describe(_ groups: Set<String>, _ server: TestServer) throws -> String {
        try groups.map { try server.get("groups/\($0)").json["signature"] as? String ?? "?" }.joined(separator: " / ")
    }
}

/// How many 201s the clients of `killDuringIngest` have seen so far.
final class AcknowledgementCount: Sendable {
    private let count = Mutex(0)

    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
