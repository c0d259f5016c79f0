import Foundation
import Testing

/// A group's sample crash (`sample_crash_id` of the API, the console's link) always names a crash
/// that exists: another crash of the group once it is deleted or expired, else null.
@Suite(.serialized)
struct ConsoleGroupSampleTests {
    static let asan = CrashFixtures.reports + "/asan-use-after-free.txt"

    @Test("deleting the sample crash names another crash of the group; deleting the last one leaves null")
    func deleteSample() throws {
        let server = try TestServer()
        let first = try server.postProcessed(Self.asan, query: "version=1.0&host=a")
        let second = try server.postProcessed(Self.asan, query: "version=1.0&host=b")
        let third = try server.postProcessed(Self.asan, query: "version=1.0&host=c")
        #expect(Set([first.group, second.group, third.group]).count == 1)
        #expect(try server.get("groups/\(first.group)").json["sample_crash_id"] as? String == first.crash)
        // Deleting a crash that is not the sample keeps the sample.
        #expect(try server.request("DELETE", "/api/v1/apps/\(server.appID)/crashes/\(second.crash)").status == 204)
        #expect(try server.get("groups/\(first.group)").json["sample_crash_id"] as? String == first.crash)
        #expect(try server.request("DELETE", "/api/v1/apps/\(server.appID)/crashes/\(first.crash)").status == 204)
        let moved = try server.get("groups/\(first.group)").json["sample_crash_id"] as? String
        #expect(moved == third.crash)
        #expect(try server.get("crashes/\(moved ?? "none")").status == 200)
        #expect(try server.request("DELETE", "/api/v1/apps/\(server.appID)/crashes/\(third.crash)").status == 204)
        let empty = try server.get("groups/\(first.group)")
        #expect(empty.status == 200)
        #expect(empty.json["sample_crash_id"] is NSNull)
    }

    @Test("retention expiring the sample crash leaves no sample that names it")
    func expiredSample() throws {
        // 0.00005 days = 4.3 s.
        let server = try TestServer(arguments: ["--retention-days", "0.00005"])
        let crash = try server.postProcessed(Self.asan)
        #expect(try server.get("groups/\(crash.group)").json["sample_crash_id"] as? String == crash.crash)
        #expect(try CrashFixtures.eventually(within: 30) { try server.get("crashes/\(crash.crash)").status == 404 })
        let group = try server.get("groups/\(crash.group)")
        #expect(group.json["count"] as? Int == 1)
        #expect(group.json["sample_crash_id"] is NSNull)
    }

    @Test("crashes that move to another group (new rules, re-signed in the background) leave no sample behind")
    func movedSample() throws {
        let server = try TestServer()
        let first = try server.submitCrash(in: "log_and_abort")
        let second = try server.submitCrash(in: "log_and_abort")
        let firstID = try #require(first["id"] as? String), secondID = try #require(second["id"] as? String)
        let group = try #require(first["group_id"] as? String)
        #expect(second["group_id"] as? String == group)
        #expect(try server.get("groups/\(group)").json["sample_crash_id"] as? String == firstID)
        let rules = #"{"rules": [{"action": "skip", "function": "log_and_abort", "note": "our logger aborts"}]}"#
        #expect(try server.request("PUT", "/api/v1/apps/\(server.appID)/grouping-rules", json: rules).status == 200)
        // The rules change moves both crashes (in the background): the old group keeps no sample.
        var moved: String?
        #expect(try CrashFixtures.eventually(within: 30) {
            let groups = try [firstID, secondID].map { try server.get("crashes/\($0)").json["group_id"] as? String }
            moved = groups[0]
            return groups[0] != nil && groups[0] != group && groups[1] == groups[0]
        })
        let old = try server.get("groups/\(group)").json
        #expect(old["sample_crash_id"] is NSNull)
        #expect(old["count"] as? Int == 0)
        let new = try server.get("groups/\(try #require(moved))").json
        #expect([firstID, secondID].contains(new["sample_crash_id"] as? String ?? ""))
        // Its sample deleted, the new group names the other crash.
        let sample = try #require(new["sample_crash_id"] as? String)
        #expect(try server.request("DELETE", "/api/v1/apps/\(server.appID)/crashes/\(sample)").status == 204)
        #expect(try server.get("groups/\(try #require(moved))").json["sample_crash_id"] as? String == (sample == firstID ? secondID : firstID))
    }
}
