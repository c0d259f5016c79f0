import Foundation

/// The object store: immutable blobs (symbol tables, debug files, raw crash reports) named by the
/// SHA-256 of their bytes (lowercase hex). Two implementations: a directory on the node's disk
/// (`DirectoryObjectStore`, the embedded default) and an S3-compatible store shared by several
/// nodes (`S3ObjectStore`). Routes and services see only this protocol (DESIGN.md "Storage").
///
/// Durability rule: an object is put (durably) before the row naming it is committed; an object
/// no row names is removed by `ObjectSweeper` once it is older than a grace period, or at once
/// by the path that dropped the last row naming it. Removal and upload of the same bytes race:
/// a remover checks for rows and removes under the metadata store's lock
/// (`removeUnused`), so a row either is seen or commits after the removal, and a writer
/// confirms its objects after its commit (`confirm`, `put(files:thenCommit:)`), putting back one
/// removed meanwhile.
/// Every method throws `StoreError`: `.notFound` for a missing object, `.unavailable` when the store
/// cannot be reached or written now (the API answers 503 with Retry-After), `.corrupt` when it
/// gives back other bytes than were put.
public protocol ObjectStore: Sendable {
    /// A directory on this node's disk for files on their way into the store (request bodies,
    /// inflated bundles). For the directory store it is on the objects' file system, so that a
    /// put is a rename.
    var scratchDirectory: String { get }

    /// Stores the file at `path`, whose bytes hash to `sha256`, durably; the file is consumed
    /// (moved into the store or removed). Putting an object that exists keeps it, and counts as
    /// a fresh write for the sweeper's grace period.
    func put(fileAt path: String, sha256: String) async throws

    /// Stores `bytes` (hashing to `sha256`) durably.
    func put(bytes: [UInt8], sha256: String) async throws

    /// Whether the object exists.
    func contains(sha256: String) async throws -> Bool

    /// The object's size in bytes, or nil when it does not exist.
    func size(sha256: String) async throws -> UInt64?

    /// The object's bytes within `range` (all of them when nil), at most `limit` bytes.
    func read(sha256: String, range: Range<UInt64>?, limit: Int) async throws -> [UInt8]

    /// A reader of the objects from this node's disk on the calling thread, when the store has
    /// one (a directory store; nil for a remote store): crash processing then reads each batch's
    /// raw reports inside the thread-pool job that parses them, rather than one async read per
    /// report.
    var localReader: (any LocalObjectReader)? { get }

    /// A local file holding the object, for a response body: the object itself when the store
    /// is a directory, else a temporary copy the caller removes once sent (`ObjectFile`).
    func file(sha256: String) async throws -> ObjectFile

    /// Writes a copy of the object to `path` (created, fsynced).
    func copy(sha256: String, to path: String) async throws

    /// A path on this node's disk at which the object can be memory-mapped: the object itself,
    /// or its copy in the node's table cache (fetched now if absent). Blocks: call it from a
    /// thread-pool thread (the engine's symbol lookup runs there).
    func localFile(sha256: String) throws -> String

    /// Removes the object, unless it was written after `cutoff` (seconds since 1970; nil: at
    /// any age), and says whether it is gone (a missing one is). A concurrent put either
    /// refreshes the object before the check (kept) or writes it again after the removal; S3,
    /// which has no conditional delete, leaves one round trip between the two. Blocks; called
    /// only by `removeUnused`, under the metadata store's lock.
    func remove(sha256: String, unlessWrittenAfter cutoff: Int64?) throws -> Bool

    /// One page of the stored objects, with their age, for the sweeper; pass the page's
    /// `next` to get the following one (nil: that was the last).
    func list(after token: String?) async throws -> ObjectPage

    /// Removes what interrupted requests left in the scratch directory (at startup only).
    func removeLeftovers() throws
}

extension ObjectStore {
    /// A remote store reads asynchronously only.
    public var localReader: (any LocalObjectReader)? { nil }

    /// The whole object, at most `limit` bytes.
    public func read(sha256: String, limit: Int = 64 << 20) async throws -> [UInt8] {
        try await read(sha256: sha256, range: nil, limit: limit)
    }

    /// Removes those of `candidates` that no row of `metadata` names (and, with `cutoff`, that
    /// were not written after it), each checked and removed under the metadata store's lock
    /// (`MetadataStore.removeUnusedObjects`); returns how many went.
    @discardableResult
    public func removeUnused(_ candidates: [String], in metadata: any MetadataStore, unlessWrittenAfter cutoff: Int64? = nil) async throws -> Int {
        guard !candidates.isEmpty else { return 0 }
        return try await metadata.removeUnusedObjects(candidates) { sha256 in
            try remove(sha256: sha256, unlessWrittenAfter: cutoff)
        }.count
    }

    /// Calls `body` with each page of the stored objects (`list(after:)`, its paging inside),
    /// until the last page.
    public func forEachPage(_ body: ([StoredObject]) async throws -> Void) async throws {
        var token: String?
        repeat {
            let page = try await list(after: token)
            try await body(page.objects)
            token = page.next
        } while token != nil
    }

    /// Every stored object, listed page by page.
    public func listAll() async throws -> [StoredObject] {
        var all: [StoredObject] = []
        try await forEachPage { all += $0 }
        return all
    }

    /// Once the row naming an object has committed: puts `bytes` again when the object is gone
    /// (removed by a remover that looked for rows just before the commit), so that a committed
    /// row never names a missing object.
    public func confirm(bytes: [UInt8], sha256: String) async throws {
        if try await !contains(sha256: sha256) { try await put(bytes: bytes, sha256: sha256) }
    }

    /// Puts the files of `puts` (each consumed, as by `put(fileAt:)`), runs `commit`, which
    /// commits the rows naming them, then confirms each object as `confirm(bytes:)` does. The
    /// bytes to put again are kept until then as a second link to each file (a copy where the
    /// file system has no links), not in memory: a bundle's debug file can be gigabytes.
    public func put<T>(files puts: [(path: String, sha256: String)], thenCommit commit: () async throws -> T) async throws -> T {
        var kept: [(path: String, sha256: String)] = []
        defer { for file in kept { unlink(file.path) } }
        for file in puts {
            let keep = file.path + ".kept"
            if link(file.path, keep) != 0 {
                do {
                    try FileManager.default.copyItem(atPath: file.path, toPath: keep)
                } catch {
                    throw StoreError.unavailable("cannot keep \(file.path) until the commit: \(error.localizedDescription)")
                }
            }
            kept.append((keep, file.sha256))
            try await put(fileAt: file.path, sha256: file.sha256)
        }
        let result = try await commit()
        for file in kept {
            if try await !contains(sha256: file.sha256) { try await put(fileAt: file.path, sha256: file.sha256) }
        }
        return result
    }
}

/// Reads objects on the calling thread (`ObjectStore.localReader`).
public protocol LocalObjectReader: Sendable {
    /// `ObjectStore.read` on the calling thread (blocks: a thread-pool thread's).
    func readNow(sha256: String, range: Range<UInt64>?, limit: Int) throws -> [UInt8]
}

/// A local file with an object's bytes (`ObjectStore.file`).
public struct ObjectFile: Sendable {
    /// Where it is.
    public var path: String
    /// Its size in bytes.
    public var size: UInt64
    /// Whether it is a temporary copy, to be removed once used.
    public var temporary: Bool
}

/// A stored object as the sweeper sees it.
public struct StoredObject: Sendable, Equatable {
    public var sha256: String
    public var size: UInt64
    /// Last write, in seconds since 1970.
    public var modified: Int64
}

/// One page of `ObjectStore.list`.
public struct ObjectPage: Sendable {
    public var objects: [StoredObject]
    /// The token of the next page; nil after the last.
    public var next: String?
}

/// Whether `text` is a SHA-256 in lowercase hex: the only names that reach a path or a key.
func isSHA256(_ text: String) -> Bool {
    text.utf8.count == 64 && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
}
