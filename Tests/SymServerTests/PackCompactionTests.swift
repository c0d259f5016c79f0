import Foundation
import SymS3
@testable import SymServer
import Testing

/// Pack compaction on the shared backends (docs/storage.md "Crash packs"): two nodes on one
/// PostgreSQL and one SeaweedFS bucket, both compacting every 0.2 s. The embedded store's tests
/// (the steps at which a compactor may die, over HTTP) are in CrashPackTests.
struct PackCompactionTests {
    @Test("two nodes on PostgreSQL and S3 compact at once: the deleted crashes' bytes leave the bucket, nothing else is left, every other crash reads byte-exact through both")
    func twoNodesCompactAtOnce() async throws {
        try await PostgresCluster.with { cluster in
            // A SeaweedFS of its own: in full runs (never alone) a named pack went missing from
            // the shared one, which every S3 test loads (cause not found yet: see the session
            // notes); alone, this test asks the question of crashsym only.
            let weed = try SeaweedFS()
            let prefix = "t-" + UUID().uuidString.lowercased().prefix(20) + "/"
            let options = ["--object-store", weed.url(bucket: SeaweedFS.bucket, prefix: prefix), "--pack-compaction-seconds", "0.2"]
            let a = try TestServer(arguments: options, database: cluster.url(), environment: weed.environment)
            let b = try TestServer(arguments: options, database: cluster.url(), app: (a.appID, a.key), environment: weed.environment)
            let bodies = ObjectSyncGroupTests.bodies(32)
            let viaA = try CrashPackTests.postTogether(a, Array(bodies[..<16]))
            let viaB = try CrashPackTests.postTogether(b, Array(bodies[16...]))
            var ids: [Int: String] = [:]
            for (index, id) in viaA.ids { ids[index] = id }
            for (index, id) in viaB.ids { ids[16 + index] = id }
            func sql(_ query: String) throws -> [String] {
                try cluster.psql(query).stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            }
            var packOf: [String: String] = [:]
            for line in try sql("SELECT id || ' ' || raw_pack FROM crash") {
                let parts = line.split(separator: " ")
                packOf[String(parts[0])] = String(parts[1])
            }
            #expect(packOf.count == bodies.count)
            // One crash of each pack of several deleted by request, through either node.
            let byPack = Dictionary(grouping: ids.keys, by: { packOf[ids[$0]!]! })
            var erased: [Int] = []
            for (turn, members) in byPack.values.filter({ $0.count >= 2 }).enumerated() {
                let node = turn % 2 == 0 ? a : b
                let index = members.min()!
                #expect(try node.request("DELETE", "/api/v1/apps/\(a.appID)/crashes/\(ids[index]!)").status == 204)
                erased.append(index)
            }
            try #require(!erased.isEmpty, "no pack of several crashes: \(byPack)")

            // The bucket, read as the nodes read it.
            let scratch = a.scratch + "/bucket"
            let bucket = try S3ObjectStore(client: S3Client(location: weed.location(bucket: SeaweedFS.bucket, prefix: prefix),
                                                            credentials: weed.credentials),
                                           scratchDirectory: scratch + "/tmp", cacheDirectory: scratch + "/cache", cacheBytes: 64 << 20)
            // The objects listed, and those named (the packs the rows name, and the packs the
            // crashes were first stored in), each read by its name. SeaweedFS's empty-folder
            // cleaner can leave an object that a write put into a folder it was deleting out of
            // every listing although a GET still reads it (seaweedfs#10779, #10783: our keys
            // spread over 256 folders `objects/sha256/XX/`, so with a few objects most deletes
            // empty a folder): a full run once saw a named pack missing from the listing for
            // minutes. So objects are also read by name, not only found by listing.
            func stored(also names: Set<String>) async throws -> [String: Data] {
                var objects: [String: Data] = [:]
                for sha256 in Set(try await bucket.listAll().map(\.sha256)).union(names) {
                    do {
                        objects[sha256] = Data(try await bucket.read(sha256: sha256, limit: 64 << 20))
                    } catch StoreError.notFound {
                        // Removed by a compactor between the listing and the read, or gone.
                    }
                }
                return objects
            }
            let firstPacks = Set(packOf.values)
            // Polled until the deleted bytes are in no object, every pack the rows name is there
            // and no other object is (no orphan of a compactor that lost a race); the bound only
            // catches a compactor that never finishes.
            let start = ContinuousClock.now
            while true {
                let named = Set(try sql("SELECT DISTINCT raw_pack FROM crash"))
                let objects = try await stored(also: named.union(firstPacks))
                let leftover = erased.filter { index in objects.values.contains { $0.range(of: Data(bodies[index])) != nil } }
                if leftover.isEmpty, Set(objects.keys) == named { break }
                if ContinuousClock.now - start >= .seconds(300) {
                    // What the nodes said (warnings and errors), and whether a named pack missing
                    // from the listing answers a HEAD: for the diagnosis.
                    var missing: [String] = []
                    for pack in named.subtracting(objects.keys).sorted() {
                        missing.append("\(pack) (HEAD: \((try? await bucket.contains(sha256: pack)).map(String.init) ?? "error"))")
                    }
                    var logs = ""
                    for node in [a, b] {
                        for file in (try? FileManager.default.contentsOfDirectory(atPath: node.scratch)) ?? [] where file.hasPrefix("server-") {
                            logs += ((try? String(contentsOfFile: node.scratch + "/" + file, encoding: .utf8)) ?? "").suffix(3000) + "\n"
                        }
                    }
                    Issue.record("""
                        after 300 s: \(leftover.count) deleted crashes still stored; named but not listed: \(missing); \
                        listed but not named: \(Set(objects.keys).subtracting(named).sorted()); logs: \(logs)
                        """)
                    return
                }
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(try sql("SELECT COUNT(*) FROM crash_pack_dead") == ["0"])
            for (index, id) in ids {
                for node in [a, b] {
                    let raw = try node.get("crashes/\(id)/raw")
                    if erased.contains(index) {
                        #expect(raw.status == 404)
                    } else {
                        #expect(raw.status == 200 && raw.body == Data(bodies[index]), "crash \(index): \(raw.status)")
                    }
                }
            }
        }
    }
}
