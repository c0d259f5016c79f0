import Foundation
import SymBytes
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Objects of a remote store (S3) copied to this node's disk so that the engine can map them:
/// one file per SHA-256 under `--table-cache-dir`, bounded by `--table-cache-dir-mb`, least
/// recently used removed first. Files are written durably (scratch, fsync, rename), so a file
/// under its final name is always whole; an open mapping of a removed file stays valid.
final class NodeTableCache: Sendable {
    /// The cache directory.
    let directory: String
    /// The most bytes kept; one object larger than this is still fetched (and is alone).
    let budget: UInt64
    /// How often a used file's time is set again (seconds): it orders the next start's evictions,
    /// and a minute's precision spares a metadata write per request.
    let touchInterval: Int64

    private struct Entry {
        var size: UInt64
        var lastUse: UInt64
        /// When the file's time was last set to its use (seconds of the monotonic clock).
        var touched: Int64 = 0
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var total: UInt64 = 0
        var clock: UInt64 = 0
        var hits = 0
        var misses = 0
    }

    private let state = Mutex(State())

    /// Opens the cache in `directory` (created as needed), taking in the files a previous run
    /// left (oldest use first, by modification time) and removing partial downloads.
    init(directory: String, budget: UInt64, touchInterval: Int64 = 60) throws {
        self.directory = directory
        self.budget = budget
        self.touchInterval = touchInterval
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw StoreError.unavailable("cannot create the table cache \(directory): \(error.localizedDescription)")
        }
        var found: [(sha256: String, size: UInt64, modified: Int)] = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            let path = directory + "/" + name
            guard isSHA256(name) else {
                if name.contains(".part-") { unlink(path) }
                continue
            }
            var status = stat()
            guard stat(path, &status) == 0 else { continue }
            // Nanoseconds: files used within the same second keep their order.
            found.append((name, UInt64(status.st_size), status.st_mtim.tv_sec * 1_000_000_000 + status.st_mtim.tv_nsec))
        }
        state.withLock { state in
            for item in found.sorted(by: { $0.modified < $1.modified }) {
                state.clock += 1
                state.entries[item.sha256] = Entry(size: item.size, lastUse: state.clock)
                state.total += item.size
            }
        }
        evict()
    }

    /// Hits and misses since start.
    var counts: (hits: Int, misses: Int) { state.withLock { ($0.hits, $0.misses) } }

    /// The path of object `sha256`, fetched with `fetch(path)` (which must write it durably)
    /// when this node has no copy yet.
    func file(sha256: String, fetch: (String) throws -> UInt64) throws -> String {
        let path = directory + "/" + sha256
        let now = Self.seconds()
        let (cached, touch) = state.withLock { state -> (Bool, Bool) in
            state.clock += 1
            guard state.entries[sha256] != nil else { return (false, false) }
            state.entries[sha256]!.lastUse = state.clock
            state.hits += 1
            let touch = now - state.entries[sha256]!.touched >= touchInterval
            if touch { state.entries[sha256]!.touched = now }
            return (true, touch)
        }
        // A use moves the file's time too (at most once per `touchInterval`), so that the next
        // start evicts in the order of use, not of fetching.
        if cached && (touch ? utimensat(AT_FDCWD, path, nil, 0) : access(path, F_OK)) == 0 { return path }
        // Two requests may fetch the same object at once: each writes its own scratch file and
        // the second rename replaces the first with the same bytes.
        let size = try fetch(path)
        state.withLock { state in
            state.misses += 1
            state.clock += 1
            if let old = state.entries[sha256] { state.total -= old.size }
            state.entries[sha256] = Entry(size: size, lastUse: state.clock, touched: now)
            state.total += size
        }
        // Keeps the file's time in step with its use, for the next start's order.
        _ = utimensat(AT_FDCWD, path, nil, 0)
        evict(keeping: sha256)
        return path
    }

    private static func seconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec)
    }

    /// Drops the copy of `sha256` (the object was removed from the store).
    func remove(sha256: String) {
        state.withLock { state in
            if let entry = state.entries.removeValue(forKey: sha256) { state.total -= entry.size }
        }
        unlink(directory + "/" + sha256)
    }

    /// Removes least recently used files until the total is within the budget.
    private func evict(keeping kept: String? = nil) {
        let victims = state.withLock { state -> [String] in
            guard state.total > budget else { return [] }
            var victims: [String] = []
            for (sha256, entry) in state.entries.sorted(by: { $0.value.lastUse < $1.value.lastUse }) where sha256 != kept {
                guard state.total > budget else { break }
                state.entries[sha256] = nil
                state.total -= entry.size
                victims.append(sha256)
            }
            return victims
        }
        for sha256 in victims { unlink(directory + "/" + sha256) }
    }
}
