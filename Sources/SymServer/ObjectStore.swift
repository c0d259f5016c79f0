import Foundation
import SymBytes
#if canImport(Glibc)
import Glibc
#endif

/// A content-addressed file store: `<root>/objects/sha256/ab/cdef…`, plus a scratch directory
/// `<root>/tmp` on the same file system so that finished files are renamed into place.
///
/// A file enters the store in three durable steps: its bytes are fsynced, it is renamed to its
/// digest's path (atomic), and the directory holding it is fsynced. A crash at any point leaves
/// either nothing or a complete object; an object with no metadata row is harmless (a retry
/// renames the same bytes over it).
public struct ObjectStore: Sendable {
    /// The data directory.
    public let root: String

    /// Opens (creating as needed) the store under `root`.
    public init(root: String) throws {
        self.root = root
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        for directory in [root + "/objects", root + "/objects/sha256", temporaryDirectory] {
            try Self.makeDirectory(directory)
        }
    }

    /// Scratch space for request bodies and inflated bundles.
    public var temporaryDirectory: String { root + "/tmp" }

    /// Removes what interrupted requests left in the scratch directory (run at startup only).
    public func removeLeftovers() throws {
        let fileManager = FileManager.default
        for name in try fileManager.contentsOfDirectory(atPath: temporaryDirectory) {
            try fileManager.removeItem(atPath: temporaryDirectory + "/" + name)
        }
    }

    /// Path of the object with this SHA-256 (lowercase hex).
    public func path(sha256: String) -> String {
        let digest = Substring(sha256)
        return root + "/objects/sha256/" + digest.prefix(2) + "/" + digest.dropFirst(2)
    }

    /// Whether the object exists.
    public func contains(sha256: String) -> Bool {
        FileManager.default.fileExists(atPath: path(sha256: sha256))
    }

    /// Moves the file at `source` (in the scratch directory, contents with digest `sha256`) into
    /// the store durably; when the object is already there the source is removed instead.
    public func insert(fileAt source: String, sha256: String) throws {
        let destination = path(sha256: sha256)
        let directory = String(destination[..<destination.lastIndex(of: "/")!])
        if contains(sha256: sha256) {
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

    static func posixError(_ what: String, _ code: Int32 = errno) -> ServerError {
        ServerError(.internal, "\(what): \(String(cString: strerror(code)))")
    }
}
