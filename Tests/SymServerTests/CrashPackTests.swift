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
        func listed() async throws -> [StoredObject] { try await objects.listAll() }
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
        // No compaction pass during the test: it checks the pack as ingestion wrote it.
        let server = try TestServer(arguments: ["--pack-compaction-seconds", "86400"])
        let bodies = ObjectSyncGroupTests.bodies(16)
        let (ids, files) = try Self.postTogether(server, bodies)
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

    /// Posts `bodies` to `server` at once (one curl process each, started together: a test
    /// thread waiting on each would send them two at a time); the crash ids and the files sent,
    /// in the bodies' order.
    static func postTogether(_ server: TestServer, _ bodies: [[UInt8]]) throws -> (ids: [Int: String], files: [String]) {
        let client = server.client
        var files: [String] = []
        for (index, body) in bodies.enumerated() {
            files.append(try HostileReportTests.write(server, "report-\(index).txt", body))
        }
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
        return (ids, files)
    }

    /// The files under `directory` (recursively) whose bytes contain `needle`.
    static func files(under directory: String, containing needle: [UInt8]) -> [String] {
        let paths = FileManager.default.enumerator(atPath: directory)?.allObjects.compactMap { $0 as? String } ?? []
        return paths.filter { path in
            guard let data = FileManager.default.contents(atPath: directory + "/" + path) else { return false }
            return data.range(of: Data(needle)) != nil
        }
    }

    @Test("compaction: a crash deleted by request leaves no object; killed after the new pack's put or before the old pack's removal, nothing is lost and the sweeper takes what is left; a reader of the old place reads the row again")
    func compactionErasesDeletedCrashes() async throws {
        let store = try Embedded()
        defer { store.remove() }
        let bodies = ObjectSyncGroupTests.bodies(8)
        let receipts = try await store.ingest(bodies)
        var byPack: [String: [Int]] = [:]
        for (index, receipt) in receipts.enumerated() {
            byPack[try #require(try await store.crashes.rawObject(appID: store.app, id: receipt.id).pack), default: []].append(index)
        }
        let (old, members) = try #require(byPack.first { $0.value.count >= 2 }, "no pack of several crashes: \(byPack)")
        let erased = members[0], kept = Array(members.dropFirst())
        let objectsDirectory = store.directory + "/data/objects"
        #expect(!Self.files(under: objectsDirectory, containing: bodies[erased]).isEmpty)
        #expect(try await store.crashes.deleteCrash(appID: store.app, id: receipts[erased].id) == nil)
        let stale = try await store.crashes.rawObject(appID: store.app, id: receipts[kept[0]].id)
        func checkEveryLiveCrash() async throws {
            for (index, receipt) in receipts.enumerated() where index != erased {
                let raw = try await store.crashes.rawObject(appID: store.app, id: receipt.id)
                #expect(try await store.objects.read(raw: raw, limit: 1 << 20) == bodies[index], "crash \(index)")
            }
        }
        let sweeper = ObjectSweeper(objects: store.objects, crashes: store.crashes, graceSeconds: 0, logger: Logger(label: "test"))
        let logger = Logger(label: "test")
        let start = currentMilliseconds()

        // Stopped after the new pack is durable, before the rows move: the rows still name the
        // old pack; the new one is unreferenced and the sweeper removes it.
        let afterPut = PausingObjectStore(base: store.objects, pauseAfter: .put) { throw StoreError.unavailable("stopped after the put") }
        #expect(try await PackCompactor(objects: afterPut, store: store.crashes, interval: .seconds(60), logger: logger)
            .compact(now: start) == 0)
        #expect(afterPut.paused)
        #expect(try await store.objects.listAll().count == byPack.count + 1)
        try await checkEveryLiveCrash()
        #expect(try await sweeper.sweep(now: Int64(time(nil)) + 5) == 1)
        #expect(Set(try await store.objects.listAll().map(\.sha256)) == Set(byPack.keys))
        try await checkEveryLiveCrash()

        // Stopped after the rows moved, before the old pack's removal (once the lease of the
        // interrupted pass expired): the old pack is unreferenced and the sweeper removes it.
        let beforeRemoval = PausingObjectStore(base: store.objects, pauseAfter: .remove) {}
        let later = start + PackCompactor.leaseMilliseconds
        #expect(try await PackCompactor(objects: beforeRemoval, store: store.crashes, interval: .seconds(60), logger: logger)
            .compact(now: later) == 0)
        #expect(beforeRemoval.paused)
        let moved = try await store.crashes.rawObject(appID: store.app, id: receipts[kept[0]].id)
        let new = try #require(moved.pack)
        #expect(new != old && moved.offset == Int64(CrashPack.headerSize))
        #expect(try await store.objects.contains(sha256: old))
        try await checkEveryLiveCrash()
        #expect(try await sweeper.sweep(now: Int64(time(nil)) + 5) == 1)
        #expect(!(try await store.objects.contains(sha256: old)))
        try await checkEveryLiveCrash()

        // The deleted crash's bytes are in no file of the store; the new pack is well-formed and
        // holds exactly the live members.
        #expect(Self.files(under: objectsDirectory, containing: bodies[erased]).isEmpty)
        for index in kept { #expect(Self.files(under: objectsDirectory, containing: bodies[index]).count == 1) }
        let newBytes = try await store.objects.read(sha256: new, limit: 16 << 20)
        #expect(ObjectStoreConformanceTests.sha256(newBytes) == new)
        #expect(try CrashPack.memberCount(header: Array(newBytes.prefix(CrashPack.headerSize))) == kept.count)
        #expect(newBytes.count == CrashPack.headerSize + kept.reduce(0) { $0 + bodies[$1].count })
        // Nothing is due any more.
        #expect(try await PackCompactor(objects: store.objects, store: store.crashes, interval: .seconds(60), logger: logger)
            .compact(now: later + 2 * PackCompactor.leaseMilliseconds) == 0)

        // A reader that read the row before the move finds the old pack gone, and reads the row again.
        await #expect(throws: StoreError.self) { _ = try await store.objects.read(raw: stale, limit: 1 << 20) }
        let relocated = try await store.objects.read(raw: stale, limit: 1 << 20) {
            try await store.crashes.rawObject(appID: store.app, id: receipts[kept[0]].id)
        }
        #expect(relocated == bodies[kept[0]])
        // Processing reads every live crash from its new pack.
        let jobs = try await store.crashes.leaseJobs(limit: 100, now: currentMilliseconds(), lease: 60_000)
        #expect(jobs.count == bodies.count - 1)
        await store.service.process(jobs)
        let outcomes = try await store.crashes.read { db in
            try Row.fetchAll(db, sql: "SELECT state, failure FROM crash").map { ($0["state"] as String, $0["failure"] as String? ?? "") }
        }
        #expect(outcomes.count == bodies.count - 1)
        for (state, failure) in outcomes { #expect(state != "pending" && !failure.contains("pack"), "\(state): \(failure)") }
    }

    @Test("compaction over HTTP: DELETE of one crash of a pack, and its bytes are in no file of the store after the next pass; the others read byte-exact")
    func compactionOverHTTP() async throws {
        let server = try TestServer(arguments: ["--pack-compaction-seconds", "0.2"])
        let bodies = ObjectSyncGroupTests.bodies(16)
        let (ids, _) = try Self.postTogether(server, bodies)
        let database = try DatabaseQueue(path: server.dataDirectory + "/metadata.sqlite")
        let packOf = try await database.read { db in
            try Dictionary(uniqueKeysWithValues: Row.fetchAll(db, sql: "SELECT id, raw_pack FROM crash").map { ($0["id"] as String, $0["raw_pack"] as String) })
        }
        let byPack = Dictionary(grouping: ids.keys, by: { packOf[ids[$0]!]! })
        let (old, members) = try #require(byPack.first { $0.value.count >= 2 }, "no pack of several crashes")
        let erased = members[0]
        let objects = server.dataDirectory + "/objects"
        #expect(!Self.files(under: objects, containing: bodies[erased]).isEmpty)
        #expect(try server.request("DELETE", "/api/v1/apps/\(server.appID)/crashes/\(ids[erased]!)").status == 204)
        // Gone within a few passes (polled; the bound only catches a compactor that never runs).
        let start = ContinuousClock.now
        while !Self.files(under: objects, containing: bodies[erased]).isEmpty {
            try #require(ContinuousClock.now - start < .seconds(300), "the deleted crash's bytes are still stored")
            try await Task.sleep(for: .milliseconds(100))
        }
        let oldPath = objects + "/sha256/" + old.prefix(2) + "/" + old.dropFirst(2)
        #expect(!FileManager.default.fileExists(atPath: oldPath))
        #expect(try server.get("crashes/\(ids[erased]!)/raw").status == 404)
        for (index, id) in ids where index != erased {
            let raw = try server.get("crashes/\(id)/raw")
            #expect(raw.status == 200 && raw.body == Data(bodies[index]), "crash \(index)")
        }
    }

    @Test("kill -9 while compacting: after restarts every live crash reads byte-exact, the deleted ones' bytes leave every file, and the objects are exactly the packs the rows name")
    func killDuringCompaction() async throws {
        // Compaction every 50 ms and a sweeper grace of under 2 s, so that what a kill leaves
        // (an unreferenced new or old pack) is swept within the test. The kills land at
        // different moments of the passes the DELETEs start; the step-by-step cases are in
        // compactionErasesDeletedCrashes.
        let server = try TestServer(arguments: ["--pack-compaction-seconds", "0.05", "--object-grace-hours", "0.0005"])
        var bodies: [[UInt8]] = []
        var ids: [Int: String] = [:]
        for _ in 0..<4 {
            let wave = ObjectSyncGroupTests.bodies(16)
            let posted = try Self.postTogether(server, wave)
            for (index, id) in posted.ids { ids[bodies.count + index] = id }
            bodies += wave
        }
        let database = try DatabaseQueue(path: server.dataDirectory + "/metadata.sqlite")
        func packs() async throws -> Set<String> {
            try await database.read { db in Set(try String.fetchAll(db, sql: "SELECT DISTINCT raw_pack FROM crash")) }
        }
        #expect(try await packs().count < bodies.count)
        // Every other crash deleted, in three rounds, each ended by a kill -9 and a restart.
        let erased = Array(stride(from: 0, to: bodies.count, by: 2))
        for (round, delay) in [0, 30, 120].enumerated() {
            for index in erased where index % 6 == round * 2 {
                #expect(try server.request("DELETE", "/api/v1/apps/\(server.appID)/crashes/\(ids[index]!)").status == 204)
            }
            try await Task.sleep(for: .milliseconds(delay))
            server.crash()
            try server.start()
        }
        let objects = server.dataDirectory + "/objects/sha256"
        func stored() -> Set<String> {
            Set((FileManager.default.enumerator(atPath: objects)?.allObjects.compactMap { $0 as? String } ?? [])
                .filter { $0.count == 65 }.map { $0.replacingOccurrences(of: "/", with: "") })
        }
        let start = ContinuousClock.now
        while true {
            let leftover = erased.filter { !Self.files(under: objects, containing: bodies[$0]).isEmpty }
            let named = try await packs()
            if leftover.isEmpty, stored() == named { break }
            try #require(ContinuousClock.now - start < .seconds(300),
                         "after 300 s: \(leftover.count) deleted crashes still stored; objects \(stored().sorted()), named \(named.sorted())")
            try await Task.sleep(for: .milliseconds(100))
        }
        for (index, id) in ids {
            let raw = try server.get("crashes/\(id)/raw")
            if erased.contains(index) {
                #expect(raw.status == 404)
            } else {
                #expect(raw.status == 200 && raw.body == Data(bodies[index]), "crash \(index): \(raw.status)")
            }
        }
    }

    @Test("processing from a remote store reads the members of one pack in a batch with one ranged read, each checked")
    func oneReadPerPackInABatch() async throws {
        let store = try Embedded()
        defer { store.remove() }
        let bodies = ObjectSyncGroupTests.bodies(16)
        let receipts = try await store.ingest(bodies)
        var packs = Set<String>()
        for receipt in receipts { packs.insert(try #require(try await store.crashes.rawObject(appID: store.app, id: receipt.id).pack)) }
        try #require(packs.count < bodies.count)
        // One member damaged: it alone fails its check.
        let damaged = try await store.crashes.rawObject(appID: store.app, id: receipts[3].id)
        let path = store.objects.path(sha256: damaged.pack!)
        var bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[Int(damaged.offset) + 1] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let remote = PausingObjectStore(base: store.objects, pauseAfter: .list) {}
        let service = CrashService(metadata: store.crashes, objects: remote, configuration: CrashServiceConfiguration(),
                                   logger: Logger(label: "test"))
        let inputs = try await store.crashes.processingInputs(seqs: try await store.crashes.leaseJobs(limit: 100, now: currentMilliseconds(), lease: 60_000).map(\.seq))
        let ordered = receipts.map { receipt in inputs.values.first { $0.id == receipt.id }! }
        let raws = await service.readRaws(ordered)
        #expect(remote.reads.withLock { $0 } == packs.count)
        for (index, raw) in raws.enumerated() {
            if index == 3 {
                #expect(throws: StoreError.corrupt("crash pack \(damaged.pack!) is corrupt: the \(damaged.size) bytes at offset \(damaged.offset) do not hash to \(damaged.sha256)")) {
                    _ = try raw.get()
                }
            } else {
                #expect(try raw.get() == bodies[index], "crash \(index)")
            }
        }
    }
}
