import Foundation
import GRDB
@testable import SymServer
import Testing

/// Leases and processing outcomes are committed without waiting for the disk (`writeUnsynced`,
/// `synchronous = NORMAL` for that transaction alone); everything else, ingestion first, must
/// stay synced (`FULL`). The writer is one connection: a relaxed setting left on it would make
/// every later ingestion commit undurable while all the other tests still pass.
struct CrashStoreSyncTests {
    /// The writer connection's `synchronous` setting (2: FULL).
    static func synchronous(_ store: CrashStore) async throws -> Int {
        try await store.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }

    @Test func processingCommitsLeaveTheWriterSynced() async throws {
        let directory = try Binary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = CrashStore(symbols: try SymbolStore(dataDirectory: directory + "/data"))
        let app = try await store.createApp(name: "Demo", id: "demo").app.id
        #expect(try await Self.synchronous(store) == 2)

        let crashes = [MetadataStoreConformanceTests.crash(app), MetadataStoreConformanceTests.crash(app, raw: "other")]
        for crash in crashes { _ = try await store.accept(crash) }
        let jobs = try await store.leaseJobs(limit: 10, now: 10_000, lease: 1_000)
        #expect(jobs.count == 2)
        #expect(try await Self.synchronous(store) == 2)

        let missing = [(buildID: "ab01", name: "liba.so"), (buildID: "cd02", name: "libc.so")]
        let groups = try await store.finish(
            [(jobs[0].seq, MetadataStoreConformanceTests.done("sig", missing: missing)),
             (jobs[1].seq, MetadataStoreConformanceTests.done("sig"))], now: 20_000)
        #expect(groups.count == 2 && groups[0] != nil && groups[0] == groups[1])
        #expect(try await Self.synchronous(store) == 2)
        // Processed and committed: the jobs are gone, the missing build-ids kept as JSON.
        #expect(try await store.pendingJobCount() == 0)
        let kept = try await store.read { db in
            try String.fetchAll(db, sql: "SELECT missing_build_ids FROM crash ORDER BY seq")
        }
        #expect(kept == [#"["ab01","cd02"]"#, "[]"])

        // A transaction that fails restores the setting too.
        await #expect(throws: StoreError.self) {
            _ = try await store.writeUnsynced { _ -> Int in throw StoreError.conflict("planted") }
        }
        #expect(try await Self.synchronous(store) == 2)
        // And the relaxed setting is in force inside it.
        #expect(try await store.writeUnsynced { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 } == 1)
        #expect(try await Self.synchronous(store) == 2)
    }

    /// Concurrent crashes share commits (`accept`'s group commit): each still gets its own
    /// answer, an idempotency key repeated inside one group answers the first crash, and every
    /// crash answered is stored with its job.
    @Test func concurrentAcceptsShareCommitsAndKeepTheirAnswers() async throws {
        let directory = try Binary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = CrashStore(symbols: try SymbolStore(dataDirectory: directory + "/data"))
        let app = try await store.createApp(name: "Demo", id: "demo").app.id
        let receipts = try await withThrowingTaskGroup(of: CrashStore.Receipt.self) { group in
            for index in 0..<40 {
                let crash = MetadataStoreConformanceTests.crash(app, key: index < 10 ? "same" : "key-\(index)", raw: "raw-\(index)")
                group.addTask { try await store.accept(crash) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(receipts.count == 40)
        let fresh = receipts.filter { !$0.replayed }
        #expect(fresh.count == 31)
        #expect(Set(fresh.map(\.id)).count == 31)
        let replayed = receipts.filter(\.replayed)
        #expect(replayed.count == 9)
        #expect(Set(replayed.map(\.id)).count == 1 && fresh.contains { $0.id == replayed[0].id })
        #expect(try await store.pendingJobCount() == 31)
        let stored = try await store.read { db in try String.fetchAll(db, sql: "SELECT id FROM crash") }
        #expect(Set(stored) == Set(fresh.map(\.id)))
        #expect(try await Self.synchronous(store) == 2)
    }
}
