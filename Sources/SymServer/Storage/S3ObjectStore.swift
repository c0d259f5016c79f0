import Foundation
import NIOPosix
import SymS3
#if canImport(Glibc)
import Glibc
#endif

/// The shared object store: an S3-compatible bucket (AWS S3, SeaweedFS, MinIO, Ceph), keys
/// `<prefix>objects/sha256/ab/cdef…` (the directory store's layout, so a data directory's
/// objects copy over one to one). The blocking `S3Client` runs on the thread pool; tables the
/// engine maps are copied to this node's disk first (`NodeTableCache`).
public struct S3ObjectStore: ObjectStore {
    /// The S3 client (bucket, prefix, endpoint, credentials).
    public let client: S3Client
    public let scratchDirectory: String
    let cache: NodeTableCache

    /// A store over `client`, with scratch files in `scratchDirectory` and fetched tables cached
    /// in `cacheDirectory` up to `cacheBytes`.
    public init(client: S3Client, scratchDirectory: String, cacheDirectory: String, cacheBytes: UInt64) throws {
        self.client = client
        self.scratchDirectory = scratchDirectory
        do {
            try FileManager.default.createDirectory(atPath: scratchDirectory, withIntermediateDirectories: true)
        } catch {
            throw StoreError.unavailable("cannot create the scratch directory \(scratchDirectory): \(error.localizedDescription)")
        }
        cache = try NodeTableCache(directory: cacheDirectory, budget: cacheBytes)
    }

    /// Puts an empty `.keep` object in each of the 256 folders `objects/sha256/XX/` (once per
    /// bucket and prefix: a marker says it is done), so that no folder ever becomes empty.
    /// SeaweedFS deletes empty folders, and its cleaner races with a write into the folder it is
    /// deleting: the write, acknowledged, is lost or kept out of every listing (seaweedfs#10779,
    /// #10783). With few objects most deletes empty a folder; a two-node test lost a pack a
    /// compactor had just written and confirmed. Listings skip these keys (no SHA-256 name);
    /// on AWS S3, which has no folders, they are 256 empty objects.
    static func keepFolders(_ client: S3Client) throws(S3Error) {
        let marker = "objects/sha256/.folders-kept"
        guard try client.size(of: marker) == nil else { return }
        let digits = Array("0123456789abcdef")
        for high in digits {
            for low in digits { try client.put(bytes: [], key: "objects/sha256/\(high)\(low)/.keep") }
        }
        try client.put(bytes: [], key: marker)
    }

    /// The key of an object.
    static func key(_ sha256: String) -> String {
        let digest = Substring(sha256)
        return "objects/sha256/" + digest.prefix(2) + "/" + digest.dropFirst(2)
    }

    public func removeLeftovers() throws {
        try DirectoryObjectStore.removeContents(of: scratchDirectory)
    }

    public func put(fileAt path: String, sha256: String) async throws {
        try DirectoryObjectStore.checkName(sha256)
        // Always written, even when present: the write refreshes the object's time, so the
        // sweeper's grace period covers the row about to name it.
        try await run {
            defer { unlink(path) }
            try client.put(fileAt: path, key: Self.key(sha256), sha256: sha256)
        }
    }

    public func put(bytes: [UInt8], sha256: String) async throws {
        try DirectoryObjectStore.checkName(sha256)
        try await run { try client.put(bytes: bytes, key: Self.key(sha256), sha256: sha256) }
    }

    public func contains(sha256: String) async throws -> Bool {
        try await size(sha256: sha256) != nil
    }

    public func size(sha256: String) async throws -> UInt64? {
        guard isSHA256(sha256) else { return nil }
        return try await run { try client.size(of: Self.key(sha256)) }
    }

    public func read(sha256: String, range: Range<UInt64>?, limit: Int) async throws -> [UInt8] {
        try DirectoryObjectStore.checkName(sha256)
        return try await run { try client.get(Self.key(sha256), range: range, limit: limit) }
    }

    public func file(sha256: String) async throws -> ObjectFile {
        try DirectoryObjectStore.checkName(sha256)
        let path = scratchDirectory + "/get-" + CrashStore.randomHex(bytes: 12)
        let size = try await run { try client.download(Self.key(sha256), to: path) }
        return ObjectFile(path: path, size: size, temporary: true)
    }

    public func copy(sha256: String, to path: String) async throws {
        try DirectoryObjectStore.checkName(sha256)
        try await run { _ = try client.download(Self.key(sha256), to: path) }
    }

    public func localFile(sha256: String) throws -> String {
        try DirectoryObjectStore.checkName(sha256)
        return try Self.translate {
            try cache.file(sha256: sha256) { path throws(S3Error) in try client.download(Self.key(sha256), to: path) }
        }
    }

    /// With a cutoff, the object's time is read from a listing of its key just before the
    /// DELETE. S3 has no conditional delete, so a put landing between the two is lost unless
    /// its writer confirms after its commit (`confirm`; crash and bundle uploads do).
    public func remove(sha256: String, unlessWrittenAfter cutoff: Int64?) throws -> Bool {
        guard isSHA256(sha256) else { return true }
        let key = Self.key(sha256)
        return try Self.translate {
            if let cutoff {
                let listed = try client.list(prefix: key).objects.first { $0.key == key }
                guard let listed else { return true }
                guard listed.modified <= cutoff else { return false }
            }
            cache.remove(sha256: sha256)
            try client.delete(key)
            return true
        }
    }

    public func list(after token: String?) async throws -> ObjectPage {
        let listing = try await run { try client.list(prefix: "objects/sha256/", after: token) }
        let objects = listing.objects.compactMap { object -> StoredObject? in
            let parts = object.key.dropFirst("objects/sha256/".count).split(separator: "/")
            guard parts.count == 2, parts[0].count == 2 else { return nil }
            let sha256 = String(parts[0] + parts[1])
            return isSHA256(sha256) ? StoredObject(sha256: sha256, size: object.size, modified: object.modified) : nil
        }
        return ObjectPage(objects: objects, next: listing.nextToken)
    }

    /// Runs a blocking client call on the store's thread pool, its errors as `StoreError`s.
    private func run<T: Sendable>(_ body: @Sendable @escaping () throws -> T) async throws -> T {
        try await Self.requests.runIfActive { try Self.translate(body) }
    }

    /// The threads S3 requests block on, one pool for the process. A request spends its time
    /// waiting on the network, not on a core, so on the shared blocking pool (one thread a core)
    /// only two requests were in flight at once, queued behind the directory work and bcrypt that
    /// pool also runs. 16 matches the idle connections the transfer pool keeps
    /// (`CurlTransferPool`). Measured: 418 -> 469 crashes/s accepted on PostgreSQL + SeaweedFS
    /// (one run each); the bucket is not what limits shared ingestion.
    static let requests: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 16)
        pool.start()
        return pool
    }()

    /// The storage error of an S3 failure: a missing object is `.notFound`; anything else means
    /// the store cannot serve now (`.unavailable`: 503 and Retry-After), with the client's
    /// message, which says what to fix.
    static func translate<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as S3Error {
            switch error.kind {
            case .notFound: throw StoreError.notFound(error.message)
            case .protocolError: throw StoreError.corrupt(error.message)
            default: throw StoreError.unavailable(error.message)
            }
        }
    }
}
