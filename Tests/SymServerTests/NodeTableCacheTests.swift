import Foundation
@testable import SymServer
import Synchronization
import Testing

/// The node's disk copy of remote tables (`--table-cache-dir`, bounded by `--table-cache-dir-mb`):
/// least recently used files go first, within the budget in bytes, and a restarted node takes in
/// what the previous run left, in the order of its use.
struct NodeTableCacheTests {
    /// A fetch that writes `size` bytes of `byte` where the cache asks, and counts its calls.
    final class Fetcher: Sendable {
        let calls = Mutex<[String]>([])

        func fetch(_ name: String, size: Int) -> (String) throws -> UInt64 {
            { path in
                self.calls.withLock { $0.append(name) }
                try Data(repeating: UInt8(ascii: "x"), count: size).write(to: URL(fileURLWithPath: path))
                return UInt64(size)
            }
        }
    }

    static func name(_ letter: Character) -> String { String(repeating: letter, count: 64) }

    static func files(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    @Test func leastRecentlyUsedFilesGoFirstWithinTheBudgetInBytes() throws {
        let directory = try Binary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (a, b, c, d) = (Self.name("a"), Self.name("b"), Self.name("c"), Self.name("d"))
        let fetcher = Fetcher()
        let cache = try NodeTableCache(directory: directory, budget: 3_000)
        for name in [a, b, c] { _ = try cache.file(sha256: name, fetch: fetcher.fetch(name, size: 1_000)) }
        #expect(Self.files(directory) == [a, b, c])
        // a is used again (no fetch), so b is now the least recently used and goes for d.
        #expect(try cache.file(sha256: a, fetch: fetcher.fetch(a, size: 1_000)) == directory + "/" + a)
        _ = try cache.file(sha256: d, fetch: fetcher.fetch(d, size: 1_000))
        #expect(Self.files(directory) == [a, c, d])
        #expect(fetcher.calls.withLock { $0 } == [a, b, c, d])
        #expect(cache.counts.hits == 1 && cache.counts.misses == 4)
        // Counted in bytes: one file of 2,500 bytes leaves room for none of the others but the newest use.
        let big = Self.name("e")
        _ = try cache.file(sha256: big, fetch: fetcher.fetch(big, size: 2_500))
        #expect(Self.files(directory) == [big])
        // A file larger than the whole budget is still fetched, and kept alone.
        let huge = Self.name("f")
        #expect(try cache.file(sha256: huge, fetch: fetcher.fetch(huge, size: 5_000)) == directory + "/" + huge)
        #expect(Self.files(directory) == [huge])
        // A file removed behind the cache's back is fetched again.
        _ = try cache.file(sha256: a, fetch: fetcher.fetch(a, size: 1_000))
        #expect(Self.files(directory) == [a])
        unlink(directory + "/" + a)
        _ = try cache.file(sha256: a, fetch: fetcher.fetch(a, size: 1_000))
        #expect(fetcher.calls.withLock { $0.filter { $0 == a }.count } == 3)
    }

    @Test func aRestartedNodeEvictsInTheOrderOfUseNotOfFetching() throws {
        let directory = try Binary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (a, b, c) = (Self.name("a"), Self.name("b"), Self.name("c"))
        let fetcher = Fetcher()
        do {
            // Every use sets the file's time (the server does so at most once a minute).
            let cache = try NodeTableCache(directory: directory, budget: 10_000, touchInterval: 0)
            for name in [a, b, c] { _ = try cache.file(sha256: name, fetch: fetcher.fetch(name, size: 1_000)) }
            // Fetched 30, 20 and 10 s ago; then a, fetched first, is used again.
            let now = Date()
            for (name, age) in [(a, 30.0), (b, 20.0), (c, 10.0)] {
                try FileManager.default.setAttributes([.modificationDate: now.addingTimeInterval(-age)], ofItemAtPath: directory + "/" + name)
            }
            _ = try cache.file(sha256: a, fetch: fetcher.fetch(a, size: 1_000))
        }
        let cache = try NodeTableCache(directory: directory, budget: 2_000)
        #expect(Self.files(directory) == [a, c], "b, the least recently used, goes first")
        _ = try cache.file(sha256: a, fetch: fetcher.fetch(a, size: 1_000))
        #expect(fetcher.calls.withLock { $0 } == [a, b, c])
    }

    @Test func aRestartedNodeTakesInItsFilesAndDropsPartialOnes() throws {
        let directory = try Binary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (a, b, c) = (Self.name("a"), Self.name("b"), Self.name("c"))
        let fetcher = Fetcher()
        do {
            let cache = try NodeTableCache(directory: directory, budget: 10_000)
            for name in [a, b, c] { _ = try cache.file(sha256: name, fetch: fetcher.fetch(name, size: 1_000)) }
        }
        // Files of a run that stopped: b used last (its time the newest), a partial download left.
        let now = Date()
        for (name, age) in [(a, 30.0), (b, 10.0), (c, 20.0)] {
            try FileManager.default.setAttributes([.modificationDate: now.addingTimeInterval(-age)], ofItemAtPath: directory + "/" + name)
        }
        FileManager.default.createFile(atPath: directory + "/" + a + ".part-1", contents: Data([1, 2, 3]))
        FileManager.default.createFile(atPath: directory + "/unrelated", contents: Data([1]))
        // Restarted with room for two: the oldest use (a) goes, the partial download too.
        let cache = try NodeTableCache(directory: directory, budget: 2_000)
        #expect(Self.files(directory) == [b, c, "unrelated"])
        _ = try cache.file(sha256: b, fetch: fetcher.fetch(b, size: 1_000))
        #expect(fetcher.calls.withLock { $0.count } == 3, "b was taken in, not fetched again")
    }
}
