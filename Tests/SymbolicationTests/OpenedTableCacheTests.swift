import Dispatch
import Foundation
import SymBytes
import SymELF
import Synchronization
import Testing
@testable import Symbolication

/// The bounded cache of opened tables the server's provider keeps.
@Suite struct OpenedTableCacheTests {
    /// Three tables of fixture modules written to `directory`, with their sizes.
    static func tables(in directory: String) throws -> [(path: String, size: Int)] {
        try ["prog", "libfault.so", "prog-asan"].map { name in
            let bytes = try ModuleConverter.table(binary: try ELFFile(path: ReportFixtures.binaries + "/" + name))
            let path = directory + "/" + name
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            return (path, bytes.count)
        }
    }

    @Test func theLeastRecentlyUsedTablesGoFirstWithinTheBudget() throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let files = try Self.tables(in: directory)
        let (a, b, c) = (files[0], files[1], files[2])
        let cache = OpenedTableCache(budget: a.size + b.size + c.size - 1)
        _ = try cache.table(at: a.path)
        _ = try cache.table(at: b.path)
        _ = try cache.table(at: a.path)  // a is now more recent than b
        #expect(cache.count == 2 && cache.byteCount == a.size + b.size)
        _ = try cache.table(at: c.path)
        #expect(cache.contains(a.path) && !cache.contains(b.path) && cache.contains(c.path))
        #expect(cache.byteCount == a.size + c.size)

        // One table larger than the budget is kept alone.
        let small = OpenedTableCache(budget: 1)
        _ = try small.table(at: a.path)
        _ = try small.table(at: b.path)
        #expect(small.count == 1 && small.contains(b.path))
        small.remove(b.path)
        #expect(small.count == 0 && small.byteCount == 0)
    }

    @Test func aTableIsOpenedOnceHoweverManyThreadsAskAtOnce() throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = try Self.tables(in: directory)[0].path
        let cache = OpenedTableCache(budget: 1 << 30)
        let opens = Atomic<Int>(0)
        let tables = Mutex<[ObjectIdentifier]>([])
        DispatchQueue.concurrentPerform(iterations: 32) { _ in
            let table = try? cache.table(for: "key") { () throws(FormatError) in
                opens.wrappingAdd(1, ordering: .relaxed)
                usleep(50_000)  // long enough for every thread to arrive while it opens
                return try ModuleSymbols(tableAt: path)
            }
            if let table { tables.withLock { $0.append(ObjectIdentifier(table)) } }
        }
        #expect(opens.load(ordering: .relaxed) == 1)
        let seen = tables.withLock { $0 }
        #expect(seen.count == 32 && Set(seen).count == 1)
    }

    @Test func aFailureIsNotKept() throws {
        let directory = try ReportFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/late"
        let cache = OpenedTableCache(budget: 1 << 30)
        #expect(throws: FormatError.self) { try cache.table(at: path) }
        #expect(cache.count == 0)
        try FileManager.default.copyItem(atPath: try Self.tables(in: directory)[0].path, toPath: path)
        #expect(try cache.table(at: path).table.byteCount > 0)
        #expect(cache.count == 1)
    }
}
