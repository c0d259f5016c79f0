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
            let weed = try SeaweedFS.shared.get()
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
            func stored() async throws -> [String: Data] {
                var objects: [String: Data] = [:]
                for object in try await bucket.listAll() {
                    do {
                        objects[object.sha256] = Data(try await bucket.read(sha256: object.sha256, limit: 64 << 20))
                    } catch StoreError.notFound {
                        // Removed by a compactor between the listing and the read.
                    }
                }
                return objects
            }
            // Polled until the deleted bytes are in no object and the bucket holds exactly the
            // packs the rows name (no orphan of a compactor that lost a race); the bound only
            // catches a compactor that never finishes.
            let start = ContinuousClock.now
            while true {
                let objects = try await stored()
                let named = Set(try sql("SELECT DISTINCT raw_pack FROM crash"))
                let leftover = erased.filter { index in objects.values.contains { $0.range(of: Data(bodies[index])) != nil } }
                if leftover.isEmpty, Set(objects.keys) == named { break }
                try #require(ContinuousClock.now - start < .seconds(300),
                             "after 300 s: \(leftover.count) deleted crashes still stored; objects \(objects.keys.sorted()), named \(named.sorted())")
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
