import Foundation
import GRDB
import Logging
@testable import SymServer
import Testing

/// Crash packs (CrashPack.swift, docs/storage.md "Crash packs"): the raw bytes of crashes
/// ingested together are one object; each member reads back byte-exact and checked; a corrupt or
/// truncated pack is a clear error; the sweeper and deletion keep a pack while a member lives.
struct CrashPackTests {
    /// An embedded crash service over a fresh data directory.
    struct Embedded {
        let directory: String
        let objects: DirectoryObjectStore
        let crashes: CrashStore
        let service: CrashService
        let app: String

        init() throws {
            directory = try Binary.temporaryDirectory()
            objects = try DirectoryObjectStore(root: directory + "/data")
            crashes = CrashStore(symbols: try SymbolStore(dataDirectory: directory + "/data", objects: objects))
            app = try crashes.symbols.createApp(name: "packs").app.id
            service = CrashService(metadata: crashes, objects: objects, configuration: CrashServiceConfiguration(),
                                   logger: Logger(label: "test"))
        }

        func remove() { try? FileManager.default.removeItem(atPath: directory) }

        /// Ingests `bodies` at once; the receipts in the bodies' order.
        func ingest(_ bodies: [[UInt8]]) async throws -> [CrashStore.Receipt] {
            let service = service, app = app
            return try await withThrowingTaskGroup(of: (Int, CrashStore.Receipt).self) { group in
                for (index, body) in bodies.enumerated() {
                    group.addTask { (index, try await service.ingest(appID: app, body: body, submission: .init())) }
                }
                let byIndex = try await group.reduce(into: [Int: CrashStore.Receipt]()) { $0[$1.0] = $1.1 }
                return bodies.indices.map { byIndex[$0]! }
            }
        }

        /// Every object in the store.
        func listed() async throws -> [StoredObject] {
            var all: [StoredObject] = []
            var token: String?
            repeat {
                let page = try await objects.list(after: token)
                all += page.objects
                token = page.next
            } while token != nil
            return all
        }
    }

    @Test("concurrent ingests share packs: far fewer objects than crashes, every member byte-exact, every pack well-formed")
    func concurrentIngestsSharePacks() async throws {
        let store = try Embedded()
        defer { store.remove() }
        let bodies = ObjectSyncGroupTests.bodies(64)
        let receipts = try await store.ingest(bodies)
        var packs: [String: Int] = [:]
        for (body, receipt) in zip(bodies, receipts) {
            let raw = try await store.crashes.rawObject(appID: store.app, id: receipt.id)
            let pack = try #require(raw.pack, "crash \(receipt.id) is not in a pack")
            packs[pack, default: 0] += 1
            #expect(raw.sha256 == ObjectStoreConformanceTests.sha256(body) && raw.size == body.count)
            #expect(try await store.objects.read(raw: raw, limit: 1 << 20) == body)
            #expect(try store.objects.readNow(raw: raw, limit: 1 << 20) == body)
        }
        let objects = try await store.listed()
        // One object per pack, and packs hold several crashes each (64 ingests at once).
        #expect(Set(objects.map(\.sha256)) == Set(packs.keys))
        #expect(objects.count <= bodies.count / 4, "\(objects.count) objects for \(bodies.count) crashes")
        for (pack, members) in packs {
            let bytes = try await store.objects.read(sha256: pack, limit: 16 << 20)
            #expect(ObjectStoreConformanceTests.sha256(bytes) == pack)
            #expect(try CrashPack.memberCount(header: Array(bytes.prefix(CrashPack.headerSize))) == members)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.objects.scratchDirectory).isEmpty)
        // Processing reads its member from the pack.
        let jobs = try await store.crashes.leaseJobs(limit: 100, now: currentMilliseconds(), lease: 60_000)
        await store.service.process(jobs)
        // Each crash was read and parsed (these one-line bodies are not whole reports: failed, with
        // the parser's reason); none is left pending by a read of its pack that failed.
        let outcomes = try await store.crashes.read { db in
            try Row.fetchAll(db, sql: "SELECT state, failure FROM crash").map { ($0["state"] as String, $0["failure"] as String? ?? "") }
        }
        #expect(outcomes.count == bodies.count)
        for (state, failure) in outcomes {
            #expect(state == "failed" && failure.contains("cannot read the report") && !failure.contains("pack"), "\(state): \(failure)")
        }
    }

    @Test("a corrupt or truncated pack is a clear error naming the pack, never a trap or other bytes")
    func corruptAndTruncatedPacks() async throws {
        let store = try Embedded()
        defer { store.remove() }
        let bodies = ObjectSyncGroupTests.bodies(3)
        let receipts = try await store.ingest(bodies)
        let raw = try await store.crashes.rawObject(appID: store.app, id: receipts[1].id)
        let pack = try #require(raw.pack)
        let path = store.objects.path(sha256: pack)
        let original = try Array(Data(contentsOf: URL(fileURLWithPath: path)))

        // One byte of the member changed.
        var damaged = original
        damaged[Int(raw.offset) + raw.size / 2] ^= 0x20
        try Data(damaged).write(to: URL(fileURLWithPath: path))
        await #expect(throws: StoreError.corrupt("crash pack \(pack) is corrupt: the \(raw.size) bytes at offset \(raw.offset) do not hash to \(raw.sha256)")) {
            _ = try await store.objects.read(raw: raw, limit: 1 << 20)
        }
        #expect(throws: StoreError.corrupt("crash pack \(pack) is corrupt: the \(raw.size) bytes at offset \(raw.offset) do not hash to \(raw.sha256)")) {
            _ = try store.objects.readNow(raw: raw, limit: 1 << 20)
        }

        // Cut inside the member, then before it.
        for length in [Int(raw.offset) + raw.size - 1, 10] {
            try Data(original.prefix(length)).write(to: URL(fileURLWithPath: path))
            let kept = max(0, length - Int(raw.offset))
            await #expect(throws: StoreError.corrupt("crash pack \(pack) is truncated: \(kept) of the \(raw.size) bytes at offset \(raw.offset) are there")) {
                _ = try await store.objects.read(raw: raw, limit: 1 << 20)
            }
        }
        // Processing marks nothing done from bad bytes: the job fails (and is retried).
        let jobs = try await store.crashes.leaseJobs(limit: 10, now: currentMilliseconds(), lease: 60_000)
        #expect(jobs.count == bodies.count)  // the damaged crash's job among them: processing did run it
        await store.service.process(jobs)
        let state = try await store.crashes.crash(appID: store.app, id: receipts[1].id).summary.state
        #expect(state == .pending)

        // A location out of bounds is refused before any read.
        var hostile = raw
        hostile.offset = -5
        await #expect(throws: StoreError.corrupt("crash pack \(pack): a member of \(raw.size) bytes at offset -5 is out of bounds")) {
            _ = try await store.objects.read(raw: hostile, limit: 1 << 20)
        }
        hostile = raw
        hostile.size = 2 << 20
        await #expect(throws: StoreError.corrupt("crash pack \(pack): a member of \(2 << 20) bytes at offset \(raw.offset) is out of bounds")) {
            _ = try await store.objects.read(raw: hostile, limit: 1 << 20)
        }

        // The header: not a pack, another version, too short.
        #expect(throws: StoreError.corrupt("not a crash pack: 5 bytes, shorter than the 32-byte header")) {
            _ = try CrashPack.memberCount(header: Array("short".utf8))
        }
        #expect(throws: StoreError.corrupt("not a crash pack: the magic is not CSYMPACK")) {
            _ = try CrashPack.memberCount(header: [UInt8](repeating: 0x41, count: 32))
        }
        var future = original
        future[8] = 9
        #expect(throws: StoreError.corrupt("crash pack version 9 is not supported (this crashsym reads version 1)")) {
            _ = try CrashPack.memberCount(header: Array(future.prefix(32)))
        }
    }

    @Test("the sweeper keeps a pack while any crash names it and removes one whose crashes are all gone")
    func sweeperAndPacks() async throws {
        let store = try Embedded()
        defer { store.remove() }
        // Two packs of several crashes each: ingested in two waves.
        let first = try await store.ingest(ObjectSyncGroupTests.bodies(6))
        let second = try await store.ingest(ObjectSyncGroupTests.bodies(6))
        func pack(_ receipt: CrashStore.Receipt) async throws -> String {
            try #require(try await store.crashes.rawObject(appID: store.app, id: receipt.id).pack)
        }
        let live = try await pack(first[0]), dead = try await pack(second[0])
        #expect(live != dead)
        var liveMembers: [CrashStore.Receipt] = [], deadMembers: [CrashStore.Receipt] = []
        for receipt in first + second {
            let named = try await pack(receipt)
            if named == live { liveMembers.append(receipt) } else if named == dead { deadMembers.append(receipt) }
        }
        try #require(liveMembers.count >= 2, "the first wave's crashes did not share a pack")
        // All of `dead`'s rows go, but nothing removes the object (a process killed after the commit);
        // all of `live`'s rows but one go.
        for receipt in deadMembers { _ = try await store.crashes.deleteCrash(appID: store.app, id: receipt.id) }
        for receipt in liveMembers.dropFirst() {
            #expect(try await store.crashes.deleteCrash(appID: store.app, id: receipt.id) == nil)
        }
        let sweeper = ObjectSweeper(objects: store.objects, crashes: store.crashes, graceSeconds: 0, logger: Logger(label: "test"))
        _ = try await sweeper.sweep(now: Int64(time(nil)) + 5)
        #expect(try await store.objects.contains(sha256: live))
        #expect(!(try await store.objects.contains(sha256: dead)))
        let kept = try await store.crashes.rawObject(appID: store.app, id: liveMembers[0].id)
        #expect(try await store.objects.read(raw: kept, limit: 1 << 20).count == kept.size)
        // The last member's deletion hands the pack back for removal.
        #expect(try await store.crashes.deleteCrash(appID: store.app, id: liveMembers[0].id) == live)
    }

    @Test("over HTTP: concurrent crashes share a pack; DELETE stops serving a member (the pack goes with its last); a damaged pack is a clear 5xx")
    func packsOverHTTP() async throws {
        let server = try TestServer()
        let client = server.client
        var files: [String] = []
        for (index, body) in ObjectSyncGroupTests.bodies(16).enumerated() {
            files.append(try HostileReportTests.write(server, "report-\(index).txt", body))
        }
        // Sixteen curl processes started together (a test thread waiting on each would send them
        // two at a time).
        var posts: [Process] = []
        for file in files {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            process.arguments = ["-sS", "-o", "\(file).answer", "-H", "Authorization: Bearer \(client.key)",
                                 "-H", "Content-Type: text/plain", "--data-binary", "@" + file, "--max-time", "60",
                                 "\(client.base)/api/v1/apps/\(client.appID)/crashes"]
            try process.run()
            posts.append(process)
        }
        var ids: [Int: String] = [:]
        for (index, process) in posts.enumerated() {
            process.waitUntilExit()
            let answer = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: files[index] + ".answer")))
            ids[index] = try #require((answer as? [String: Any])?["id"] as? String, "\(answer)")
        }
        let database = try DatabaseQueue(path: server.dataDirectory + "/metadata.sqlite")
        let rows = try await database.read { db in
            try Row.fetchAll(db, sql: "SELECT id, raw_pack FROM crash").map { ($0["id"] as String, $0["raw_pack"] as String?) }
        }
        let packOf = Dictionary(uniqueKeysWithValues: rows.map { ($0.0, $0.1) })
        #expect(packOf.count == 16 && packOf.values.allSatisfy { $0 != nil })
        let objectFiles = FileManager.default.enumerator(atPath: server.dataDirectory + "/objects/sha256")?.allObjects
            .compactMap { $0 as? String }.filter { $0.contains("/") } ?? []
        #expect(objectFiles.count == Set(packOf.values.compactMap { $0 }).count)
        #expect(objectFiles.count < 16, "16 concurrent crashes made \(objectFiles.count) objects")
        for (index, file) in files.enumerated() {
            let raw = try server.get("crashes/\(ids[index]!)/raw")
            let sent = try Data(contentsOf: URL(fileURLWithPath: file))
            #expect(raw.status == 200 && raw.body == sent)
        }

        // A pack with several members: DELETE one, it is no longer served, the others are.
        let byPack = Dictionary(grouping: ids.values, by: { packOf[$0]!! })
        let (shared, members) = try #require(byPack.first { $0.value.count >= 2 })
        let packPath = server.dataDirectory + "/objects/sha256/" + shared.prefix(2) + "/" + shared.dropFirst(2)
        #expect(try server.request("DELETE", "/api/v1/apps/\(server.appID)/crashes/\(members[0])").status == 204)
        #expect(try server.get("crashes/\(members[0])/raw").status == 404)
        #expect(try server.get("crashes/\(members[1])/raw").status == 200)
        // Its bytes stay in the pack file until the pack's last crash goes.
        #expect(FileManager.default.fileExists(atPath: packPath))
        for id in members.dropFirst(2) { #expect(try server.request("DELETE", "/api/v1/apps/\(server.appID)/crashes/\(id)").status == 204) }

        // The remaining member's bytes damaged on disk: a clear error, and the server answers on.
        let offset = try #require(try await database.read { db in
            try Int.fetchOne(db, sql: "SELECT raw_offset FROM crash WHERE id = ?", arguments: [members[1]])
        })
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: packPath)))
        bytes[offset + 3] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: packPath))
        let damaged = try server.get("crashes/\(members[1])/raw")
        #expect(damaged.status >= 500 && damaged.text.contains("crash pack \(shared)"), "\(damaged.status) \(damaged.text)")
        #expect(try server.get("crashes").status == 200)

        // The last member's DELETE removes the pack.
        #expect(try server.request("DELETE", "/api/v1/apps/\(server.appID)/crashes/\(members[1])").status == 204)
        #expect(!FileManager.default.fileExists(atPath: packPath))
    }
}
