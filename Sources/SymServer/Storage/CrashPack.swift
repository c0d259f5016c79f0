import Crypto
import Foundation
import NIOPosix
import SymBytes

/// A pack: the raw bytes of the crashes accepted together, stored as one object of the object
/// store (docs/storage.md "Crash packs"), so that a group of ingests costs one object write and
/// one sync (one PUT on S3) instead of one per crash.
///
/// Format (version 1): a 32-byte header, then each member's bytes back to back.
///
///     offset  size  field
///     0       8     magic "CSYMPACK"
///     8       1     format version (1)
///     9       3     reserved (0)
///     12      4     member count, little-endian
///     16      16    random nonce: no two packs share a name, so no remover of an older pack
///                   can take a new one before its rows commit
///
/// A crash row names its pack, the member's offset and length, and the member's SHA-256; a
/// member is read with a ranged read (pread, or an HTTP `Range:` GET) and its SHA-256 checked,
/// so a corrupt or truncated pack is an error naming the crash, never a trap or wrong bytes.
enum CrashPack {
    static let magic: [UInt8] = Array("CSYMPACK".utf8)
    static let version: UInt8 = 1
    static let headerSize = 32
    /// Bodies larger than this are stored as single objects, as before packs.
    static let memberLimit = 1 << 20
    /// A pack holds at most this many members, and at most `byteLimit` bytes of them.
    static let memberCountLimit = 256
    static let byteLimit = 8 << 20

    /// The pack of `members`: its bytes and each member's offset in them.
    static func build(_ members: [[UInt8]]) -> (bytes: [UInt8], offsets: [Int64]) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(headerSize + members.reduce(0) { $0 + $1.count })
        bytes += magic
        bytes += [version, 0, 0, 0]
        let count = UInt32(members.count)
        bytes += [UInt8(truncatingIfNeeded: count), UInt8(truncatingIfNeeded: count >> 8),
                  UInt8(truncatingIfNeeded: count >> 16), UInt8(truncatingIfNeeded: count >> 24)]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2 {
            let word = generator.next() as UInt64
            for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
        }
        var offsets: [Int64] = []
        offsets.reserveCapacity(members.count)
        for member in members {
            offsets.append(Int64(bytes.count))
            bytes += member
        }
        return (bytes, offsets)
    }

    /// Builds the pack of `members` and puts it into `objects` durably (written to a scratch
    /// file here, synced by the put: the directory store's fsync and rename, S3's upload);
    /// returns its name, its bytes and each member's offset.
    static func put(_ members: [[UInt8]], into objects: any ObjectStore) async throws -> (sha256: String, bytes: [UInt8], offsets: [Int64]) {
        let pack = build(members)
        let sha256 = hexString(Array(SHA256.hash(data: pack.bytes)))
        let scratch = objects.scratchDirectory + "/pack-" + CrashStore.randomHex(bytes: 12)
        do {
            let bytes = pack.bytes
            try await NIOThreadPool.singleton.runIfActive { _ = close(try DirectoryObjectStore.writeUnsynced(bytes, to: scratch)) }
            try await objects.put(fileAt: scratch, sha256: sha256)
        } catch {
            unlink(scratch)  // a put that failed may leave it
            throw error
        }
        return (sha256, pack.bytes, pack.offsets)
    }

    /// Reads the header of a pack: its member count; a clear error when `bytes` is not one.
    static func memberCount(header bytes: [UInt8]) throws -> Int {
        guard bytes.count >= headerSize else {
            throw StoreError.corrupt("not a crash pack: \(bytes.count) bytes, shorter than the \(headerSize)-byte header")
        }
        guard Array(bytes[0..<8]) == magic else { throw StoreError.corrupt("not a crash pack: the magic is not CSYMPACK") }
        let (found, count) = try bytes.withUnsafeBytes { buffer in
            let reader = ByteReader(buffer)
            do {
                return (try reader.u8(at: 8), try reader.u32(at: 12))
            } catch {
                throw StoreError.corrupt("not a crash pack: \(error)")
            }
        }
        guard found == version else {
            throw StoreError.corrupt("crash pack version \(found) is not supported (this crashsym reads version \(version))")
        }
        return Int(count)
    }
}

extension CrashStore {
    /// Where the raw bytes of a crash are: a single object named by their SHA-256, or a member
    /// of a pack (`CrashPack`).
    public struct RawLocation: Sendable, Hashable {
        /// The SHA-256 of the crash's bytes.
        public var sha256: String
        public var size: Int
        /// The pack holding them; nil for a single object named `sha256`.
        public var pack: String?
        /// Their offset in the pack.
        public var offset: Int64

        public init(sha256: String, size: Int, pack: String? = nil, offset: Int64 = 0) {
            self.sha256 = sha256
            self.size = size
            self.pack = pack
            self.offset = offset
        }

        /// The object holding the bytes.
        public var object: String { pack ?? sha256 }

        /// The bytes as read from the pack (`range` of object `pack`), checked: the right length
        /// and SHA-256, else `.corrupt` naming the pack.
        func checked(_ bytes: [UInt8]) throws -> [UInt8] {
            guard let pack else { return bytes }
            guard bytes.count == size else {
                throw StoreError.corrupt("crash pack \(pack) is truncated: \(bytes.count) of the \(size) bytes at offset \(offset) are there")
            }
            guard hexString(Array(SHA256.hash(data: bytes))) == sha256 else {
                throw StoreError.corrupt("crash pack \(pack) is corrupt: the \(size) bytes at offset \(offset) do not hash to \(sha256)")
            }
            return bytes
        }

        /// Refuses a pack member whose place cannot be right (a negative offset) or that is larger
        /// than the reader takes, before anything is read.
        func checkBounds(limit: Int) throws {
            guard offset >= 0, size <= limit else {
                throw StoreError.corrupt("crash pack \(object): a member of \(size) bytes at offset \(offset) is out of bounds")
            }
        }

        /// The byte range of a pack member (nil: the whole object).
        var range: Range<UInt64>? {
            guard pack != nil, offset >= 0 else { return nil }
            return UInt64(offset)..<UInt64(offset) + UInt64(max(size, 0))
        }
    }
}

extension ObjectStore {
    /// The raw bytes of a crash, wherever they are (a single object or a pack member, checked).
    public func read(raw: CrashStore.RawLocation, limit: Int) async throws -> [UInt8] {
        guard raw.pack != nil else { return try await read(sha256: raw.sha256, range: nil, limit: limit) }
        try raw.checkBounds(limit: limit)
        return try raw.checked(try await read(sha256: raw.object, range: raw.range, limit: raw.size))
    }

    /// `read(raw:limit:)`, and when the pack is not found (compacted since `raw` was read from
    /// its row; `PackCompactor` removes the old pack only after the rows name the new one): the
    /// row's location again from `relocate` (nil: the crash is gone), read once more if it moved.
    public func read(raw: CrashStore.RawLocation, limit: Int,
                     relocate: () async throws -> CrashStore.RawLocation?) async throws -> [UInt8] {
        do {
            return try await read(raw: raw, limit: limit)
        } catch {
            guard case StoreError.notFound = error, raw.pack != nil, let moved = try await relocate(), moved != raw else { throw error }
            return try await read(raw: moved, limit: limit)
        }
    }
}

extension LocalObjectReader {
    /// `read(raw:limit:)` on the calling thread (a store's `localReader`).
    public func readNow(raw: CrashStore.RawLocation, limit: Int) throws -> [UInt8] {
        guard raw.pack != nil else { return try readNow(sha256: raw.sha256, range: nil, limit: limit) }
        try raw.checkBounds(limit: limit)
        return try raw.checked(try readNow(sha256: raw.object, range: raw.range, limit: raw.size))
    }
}
