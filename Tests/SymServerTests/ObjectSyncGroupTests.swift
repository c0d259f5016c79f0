import Foundation
import GRDB
import Logging
@testable import SymServer
import Testing

/// Durability of the embedded stores: the SQLite writer synced on every path that opens a
/// `SymbolStore`, and `DirectoryObjectStore.put(bytes:)`'s group sync (concurrent puts flushed
/// together), whose objects must all be in place and whole once the puts return, and a put that
/// fails must fail alone and leave no row naming its object.
struct ObjectSyncGroupTests {
    /// A `SymbolStore` opened alone (the CLI's `apps`, `upload --data-dir`, `migrate`: no
    /// `CrashStore`): its writer is `synchronous = FULL` (2), not GRDB's WAL default NORMAL (1).
    @Test func symbolStoreAloneCommitsSynced() async throws {
        let directory = try Binary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let created = try SymbolStore(dataDirectory: directory + "/data")
        #expect(try await created.database.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") } == 2)
        _ = try created.createApp(name: "Demo")
        // Reopened without `create`, as the commands that change an existing store do.
        let reopened = try SymbolStore(dataDirectory: directory + "/data", create: false)
        #expect(try await reopened.database.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") } == 2)
    }

    /// Bodies whose objects' fan-out directories (the digest's first two hex digits) differ
    /// from `excluded`'s.
    static func bodies(_ count: Int, avoiding excluded: String? = nil) -> [[UInt8]] {
        var bodies: [[UInt8]] = []
        var index = 0
        while bodies.count < count {
            let body = Array("==\(index)==ERROR: AddressSanitizer: SEGV \(UUID().uuidString)\n".utf8)
            index += 1
            if let excluded, ObjectStoreConformanceTests.sha256(body).prefix(2) == excluded.prefix(2) { continue }
            bodies.append(body)
        }
        return bodies
    }

    @Test func concurrentPutsAreAllInPlaceAndWhole() async throws {
        let directory = try Binary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try DirectoryObjectStore(root: directory + "/data")
        // 48 distinct objects, and one object put 16 times at once.
        let distinct = Self.bodies(48)
        let same = Array("the same report, put by 16 clients at once\n".utf8)
        let all = distinct + Array(repeating: same, count: 16)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for body in all {
                group.addTask { try await store.put(bytes: body, sha256: ObjectStoreConformanceTests.sha256(body)) }
            }
            try await group.waitForAll()
        }
        for body in distinct + [same] {
            let sha256 = ObjectStoreConformanceTests.sha256(body)
            #expect(try await store.read(sha256: sha256) == body)
            // In place under its digest's name, not left under a scratch name.
            #expect(access(store.path(sha256: sha256), R_OK) == 0)
        }
        // No scratch file left behind (the 15 redundant copies of `same` were dropped).
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.scratchDirectory).isEmpty)
        #expect(try await store.listAll().count == 49)
    }

    /// A pack whose object cannot be placed (a file planted where every fan-out directory goes):
    /// the ingests of its crashes fail with a 503-kind error, and no crash row names a missing
    /// object; the next ingest, once the store is writable again, lands.
    @Test func aFailedPackPutFailsItsCrashesAndNamesNothing() async throws {
        let directory = try Binary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let objects = try DirectoryObjectStore(root: directory + "/data")
        let crashes = CrashStore(symbols: try SymbolStore(dataDirectory: directory + "/data", objects: objects))
        let app = try crashes.symbols.createApp(name: "sync").app.id
        let service = CrashService(metadata: crashes, objects: objects, configuration: CrashServiceConfiguration(),
                                   logger: Logger(label: "test"))
        // Pack names are random: every fan-out directory is blocked.
        let fanOut = directory + "/data/objects/sha256/"
        let names = (0..<256).map { String(format: "%02x", $0) }
        for name in names { #expect(FileManager.default.createFile(atPath: fanOut + name, contents: Data("not a directory".utf8))) }
        let bodies = Self.bodies(24)

        let results = await withTaskGroup(of: Result<CrashStore.Receipt, any Error>.self) { group in
            for body in bodies {
                group.addTask {
                    do {
                        return .success(try await service.ingest(appID: app, body: body, submission: .init()))
                    } catch {
                        return .failure(error)
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        for result in results {
            if case .failure(StoreError.unavailable(let message)) = result {
                #expect(message.contains("mkdir") || message.contains("rename"), "\(message)")
            } else {
                Issue.record("expected a StoreError.unavailable, got \(result)")
            }
        }
        #expect(try await crashes.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM crash") } == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: objects.scratchDirectory).isEmpty)

        for name in names { unlink(fanOut + name) }
        let body = bodies[0]
        let receipt = try await service.ingest(appID: app, body: body, submission: .init())
        let raw = try await crashes.rawObject(appID: app, id: receipt.id)
        #expect(try await objects.read(raw: raw, limit: 1 << 20) == body)
    }
}
