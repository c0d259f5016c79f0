import Foundation
import NIOPosix
import SymBytes
import Synchronization
import CSyncfs
#if canImport(Glibc)
import Glibc
#endif

/// The embedded object store: a content-addressed directory, `<root>/objects/sha256/ab/cdef…`,
/// plus a scratch directory `<root>/tmp` on the same file system so that finished files are
/// renamed into place.
///
/// A file enters the store in three durable steps: its bytes are fsynced, it is renamed to its
/// digest's path (atomic), and the directory holding it is fsynced. A crash at any point leaves
/// either nothing or a complete object; an object with no metadata row is harmless (a retry
/// renames the same bytes over it, the sweeper removes it after its grace period).
///
/// `put(bytes:)` (crash ingestion's raw reports, and other small objects) makes the puts waiting
/// at the same time durable together (group sync, `WaitingGroup`): each writes its scratch file
/// unsynced, then one thread-pool job flushes the file system (syncfs(2): every scratch file's
/// data), renames each into place and flushes the file system again (the new names). Two syncs a
/// group instead of two fsyncs and a rename a put: 1.3x the accepted crashes per second and 28 %
/// less CPU per crash (median, docs/BENCHMARKS.md). A put still returns only once its own
/// object is durable, so a row committed after it never names an object a power loss could take.
public struct DirectoryObjectStore: ObjectStore, LocalObjectReader {
    /// The data directory.
    public let root: String

    /// The `put(bytes:)` calls waiting to be made durable (shared by copies of the store).
    let syncGroup = WaitingGroup<PendingPut>()

    /// Opens (creating as needed) the store under `root`.
    public init(root: String) throws {
        self.root = root
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        for directory in [root + "/objects", root + "/objects/sha256", scratchDirectory] {
            try Self.makeDirectory(directory)
        }
    }

    public var scratchDirectory: String { root + "/tmp" }

    public func removeLeftovers() throws {
        try Self.removeContents(of: scratchDirectory)
    }

    /// Path of the object with this SHA-256 (lowercase hex).
    public func path(sha256: String) -> String {
        let digest = Substring(sha256)
        return root + "/objects/sha256/" + digest.prefix(2) + "/" + digest.dropFirst(2)
    }

    public func put(fileAt source: String, sha256: String) async throws {
        try Self.checkName(sha256)
        try await NIOThreadPool.singleton.runIfActive { try insert(fileAt: source, sha256: sha256) }
    }

    public func put(bytes: [UInt8], sha256: String) async throws {
        try Self.checkName(sha256)
        let scratch = scratchDirectory + "/put-" + CrashStore.randomHex(bytes: 12)
        // Written (not synced) on the thread pool: the group's sync flushes it.
        let descriptor = try await NIOThreadPool.singleton.runIfActive { try Self.writeUnsynced(bytes, to: scratch) }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let pending = PendingPut(descriptor: descriptor, scratch: scratch, sha256: sha256, continuation: continuation)
            if syncGroup.add(pending) {
                Task { await syncWaiting() }
            }
        }
    }

    /// Makes the waiting puts durable a group at a time until none waits.
    private func syncWaiting() async {
        while let group = syncGroup.next() {
            let results: [Result<Void, any Error>]
            do {
                results = try await NIOThreadPool.singleton.runIfActive { self.syncNow(group) }
            } catch {
                for pending in group {
                    close(pending.descriptor)
                    unlink(pending.scratch)
                }
                results = group.map { _ in Result<Void, any Error>.failure(error) }
            }
            for (pending, result) in zip(group, results) { pending.continuation.resume(with: result) }
        }
    }

    /// One group made durable: every scratch file's data flushed (syncfs of the store's file
    /// system: the scratch directory is on it), each renamed into place (or dropped when its
    /// object is already there, its time refreshed as `insert` does), then the file system flushed
    /// again for the new directory entries. A put whose rename fails fails alone (its scratch file
    /// removed); a failed flush fails the whole group (syncfs reports writeback errors of the
    /// file system since Linux 5.8, not of one file).
    func syncNow(_ group: [PendingPut]) -> [Result<Void, any Error>] {
        var results = [Result<Void, any Error>](repeating: .success(()), count: group.count)
        let flushed = syncfs(group[0].descriptor) == 0 ? 0 : errno
        for (index, pending) in group.enumerated() {
            close(pending.descriptor)
            if flushed != 0 {
                unlink(pending.scratch)
                results[index] = .failure(Self.posixError("syncfs \(pending.scratch)", flushed))
            }
        }
        // The puts in place, flushed even when the object was already there, since the put that
        // renamed it may still be waiting for its flush (in the group before).
        var placed: [Int] = []
        for (index, pending) in group.enumerated() where (try? results[index].get()) != nil {
            let destination = path(sha256: pending.sha256)
            let directory = FileIO.directory(of: destination)
            do {
                if utimensat(AT_FDCWD, destination, nil, 0) == 0 {
                    unlink(pending.scratch)
                } else {
                    try Self.makeDirectory(directory)
                    guard rename(pending.scratch, destination) == 0 else {
                        let error = Self.posixError("rename \(pending.scratch) to \(destination)")
                        unlink(pending.scratch)
                        throw error
                    }
                }
                placed.append(index)
            } catch {
                results[index] = .failure(error)
            }
        }
        if !placed.isEmpty {
            let descriptor = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            let synced = descriptor >= 0 && syncfs(descriptor) == 0 ? 0 : errno
            if descriptor >= 0 { close(descriptor) }
            if synced != 0 {
                for index in placed { results[index] = .failure(Self.posixError("syncfs \(root)", synced)) }
            }
        }
        return results
    }

    /// A `put(bytes:)` call waiting for its group's sync.
    struct PendingPut: Sendable {
        /// The scratch file, still open until its data is flushed.
        var descriptor: Int32
        var scratch: String
        var sha256: String
        var continuation: CheckedContinuation<Void, any Error>
    }

    public func contains(sha256: String) async throws -> Bool {
        isSHA256(sha256) && access(path(sha256: sha256), F_OK) == 0
    }

    public func size(sha256: String) async throws -> UInt64? {
        guard isSHA256(sha256) else { return nil }
        var status = stat()
        guard stat(path(sha256: sha256), &status) == 0 else {
            if errno == ENOENT { return nil }
            throw Self.posixError("stat \(path(sha256: sha256))")
        }
        return UInt64(status.st_size)
    }

    public func read(sha256: String, range: Range<UInt64>?, limit: Int) async throws -> [UInt8] {
        try Self.checkName(sha256)
        return try await NIOThreadPool.singleton.runIfActive { try self.readNow(sha256: sha256, range: range, limit: limit) }
    }

    public var localReader: (any LocalObjectReader)? { self }

    public func readNow(sha256: String, range: Range<UInt64>?, limit: Int) throws -> [UInt8] {
        try Self.checkName(sha256)
        let path = path(sha256: sha256)
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { throw StoreError.notFound("no object \(sha256)") }
            throw Self.posixError("open \(path)")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw Self.posixError("stat \(path)") }
        let size = UInt64(status.st_size)
        let wanted = range.map { $0.clamped(to: 0..<size) } ?? 0..<size
        guard wanted.count <= UInt64(limit) else {
            throw StoreError.conflict("object \(sha256) is \(wanted.count) bytes, over the limit of \(limit)")
        }
        let bytes: [UInt8]
        do throws(FileIO.ReadFailure) {
            bytes = try FileIO.readAll(descriptor, count: Int(wanted.count), at: wanted.lowerBound)
        } catch {
            throw Self.posixError("read \(path)", error.code)
        }
        guard bytes.count == wanted.count else { throw StoreError.corrupt("object \(sha256) ended early at \(bytes.count) bytes") }
        return bytes
    }

    public func file(sha256: String) async throws -> ObjectFile {
        guard let size = try await size(sha256: sha256) else { throw StoreError.notFound("no object \(sha256)") }
        return ObjectFile(path: path(sha256: sha256), size: size, temporary: false)
    }

    public func copy(sha256: String, to destination: String) async throws {
        try Self.checkName(sha256)
        let source = path(sha256: sha256)
        try await NIOThreadPool.singleton.runIfActive {
            guard access(source, F_OK) == 0 else { throw StoreError.notFound("no object \(sha256)") }
            let scratch = destination + ".part-" + CrashStore.randomHex(bytes: 6)
            do {
                try FileManager.default.copyItem(atPath: source, toPath: scratch)
            } catch {
                throw StoreError.unavailable("cannot copy \(source) to \(scratch): \(error.localizedDescription)")
            }
            if let failure = FileIO.moveDurably(scratch, to: destination) {
                unlink(scratch)
                throw Self.posixError("write \(destination)", failure.code)
            }
        }
    }

    /// The object itself: the engine maps it where it lies.
    public func localFile(sha256: String) throws -> String {
        try Self.checkName(sha256)
        return path(sha256: sha256)
    }

    /// With a cutoff the object is first renamed aside (atomic), so that its time is read from a
    /// file no put can touch any more: a put before the rename refreshed it (it goes back), a
    /// put after it finds no object and renames its own file into place.
    public func remove(sha256: String, unlessWrittenAfter cutoff: Int64?) throws -> Bool {
        guard isSHA256(sha256) else { return true }
        let path = path(sha256: sha256)
        guard let cutoff else {
            guard unlink(path) == 0 || errno == ENOENT else { throw Self.posixError("unlink \(path)") }
            return true
        }
        let aside = scratchDirectory + "/remove-" + sha256 + "-" + CrashStore.randomHex(bytes: 6)
        guard rename(path, aside) == 0 else {
            if errno == ENOENT { return true }
            throw Self.posixError("rename \(path) to \(aside)")
        }
        var status = stat()
        if stat(aside, &status) == 0 && Int64(status.st_mtim.tv_sec) > cutoff {
            // Written after the cutoff: back into place (a put meanwhile wrote the same bytes).
            guard rename(aside, path) == 0 else { throw Self.posixError("rename \(aside) to \(path)") }
            return false
        }
        unlink(aside)
        return true
    }

    /// A page per fan-out directory (`objects/sha256/ab`); the token is the next one's name.
    public func list(after token: String?) async throws -> ObjectPage {
        let base = root + "/objects/sha256"
        return try await NIOThreadPool.singleton.runIfActive {
            let directories = ((try? FileManager.default.contentsOfDirectory(atPath: base)) ?? [])
                .filter { $0.utf8.count == 2 && isSHA256($0 + String(repeating: "0", count: 62)) }.sorted()
            guard let current = directories.first(where: { token == nil || $0 >= token! }) else {
                return ObjectPage(objects: [], next: nil)
            }
            var objects: [StoredObject] = []
            for name in (try? FileManager.default.contentsOfDirectory(atPath: base + "/" + current)) ?? [] {
                let sha256 = current + name
                guard isSHA256(sha256) else { continue }
                var status = stat()
                guard stat(base + "/" + current + "/" + name, &status) == 0 else { continue }
                objects.append(StoredObject(sha256: sha256, size: UInt64(status.st_size), modified: Int64(status.st_mtim.tv_sec)))
            }
            let next = directories.first { $0 > current }
            return ObjectPage(objects: objects.sorted { $0.sha256 < $1.sha256 }, next: next)
        }
    }

    /// Moves the file at `source` into the store durably; when the object is already there the
    /// source is removed instead, and the object's time refreshed (the sweeper's grace period
    /// starts again, so a row committed after this put never names a swept object). The refresh
    /// is the test of presence: an object renamed aside by `remove` meanwhile is not refreshed,
    /// and the source takes its place.
    func insert(fileAt source: String, sha256: String) throws {
        let destination = path(sha256: sha256)
        let directory = String(destination[..<destination.lastIndex(of: "/")!])
        if utimensat(AT_FDCWD, destination, nil, 0) == 0 {
            try? FileManager.default.removeItem(atPath: source)
            return
        }
        try Self.makeDirectory(directory)
        if let failure = FileIO.moveDurably(source, to: destination) {
            switch failure.step {
            case .rename: throw Self.posixError("rename \(source) to \(destination)", failure.code)
            case .syncDirectory: throw Self.posixError("fsync \(directory)", failure.code)
            default: throw Self.posixError("fsync \(source)", failure.code)
            }
        }
    }

    /// Writes `bytes` to a new file and returns it open, its data not yet flushed (`syncNow`).
    static func writeUnsynced(_ bytes: [UInt8], to path: String) throws -> Int32 {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw posixError("open \(path)") }
        let failure = bytes.withUnsafeBytes { FileIO.writeAll(descriptor, $0) }
        guard failure == 0 else {
            close(descriptor)
            unlink(path)
            throw posixError("write \(path)", failure)
        }
        return descriptor
    }

    static func checkName(_ sha256: String) throws {
        guard isSHA256(sha256) else { throw StoreError.notFound("\"\(sha256.prefix(80))\" is not an object name (SHA-256 in hex)") }
    }

    static func removeContents(of directory: String) throws {
        let fileManager = FileManager.default
        for name in try fileManager.contentsOfDirectory(atPath: directory) {
            try fileManager.removeItem(atPath: directory + "/" + name)
        }
    }

    static func makeDirectory(_ path: String) throws {
        if mkdir(path, 0o755) == 0 {
            // Make the new directory entry itself durable.
            let parent = FileIO.directory(of: path)
            let synced = FileIO.sync(path: parent, directory: true)
            guard synced == 0 else { throw posixError("fsync \(parent)", synced) }
            return
        }
        guard errno == EEXIST else { throw posixError("mkdir \(path)") }
    }

    /// A local file operation that failed: the store cannot be written now (a full or failing
    /// disk), so the API answers 503 and the client retries.
    static func posixError(_ what: String, _ code: Int32 = errno) -> StoreError {
        .unavailable("\(what): \(String(cString: strerror(code)))")
    }
}
