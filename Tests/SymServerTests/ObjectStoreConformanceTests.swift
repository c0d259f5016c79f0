import Crypto
import Foundation
@testable import SymServer
import SymS3
import Testing

/// The object store's behaviour, the same for every implementation (DESIGN.md "Storage"): the
/// directory under a data directory and an S3 bucket of a real SeaweedFS.
struct ObjectStoreConformanceTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case directory, s3
        var testDescription: String { rawValue }
    }

    /// A fresh store of `kind` and the directory its local files live in.
    static func makeStore(_ kind: Kind) throws -> (store: any ObjectStore, directory: String) {
        let directory = try Binary.temporaryDirectory()
        switch kind {
        case .directory:
            return (try DirectoryObjectStore(root: directory + "/data"), directory)
        case .s3:
            let client = try SeaweedFS.shared.get().newPrefix(prefix: "node/")
            return (try S3ObjectStore(client: client, scratchDirectory: directory + "/tmp", cacheDirectory: directory + "/cache",
                                      cacheBytes: 64 << 20), directory)
        }
    }

    static func bytes(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &+ ($0 >> 8)) }
    }

    static func sha256(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }

    /// Writes `bytes` to a new scratch file of `store`.
    static func scratchFile(_ store: any ObjectStore, _ bytes: [UInt8]) throws -> String {
        let path = store.scratchDirectory + "/in-" + UUID().uuidString
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("a put file reads back whole, by range, as a file, as a copy and as a local file; the source is consumed",
          arguments: Kind.allCases)
    func putAndRead(_ kind: Kind) async throws {
        let (store, directory) = try Self.makeStore(kind)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = Self.bytes(300_000, seed: 7)
        let sha = Self.sha256(bytes)
        #expect(try await store.contains(sha256: sha) == false)
        #expect(try await store.size(sha256: sha) == nil)
        let source = try Self.scratchFile(store, bytes)
        try await store.put(fileAt: source, sha256: sha)
        #expect(!FileManager.default.fileExists(atPath: source))
        #expect(try await store.contains(sha256: sha))
        #expect(try await store.size(sha256: sha) == 300_000)
        #expect(try await store.read(sha256: sha) == bytes)
        #expect(try await store.read(sha256: sha, range: 1000..<1010, limit: 100) == Array(bytes[1000..<1010]))
        #expect(try await store.read(sha256: sha, range: 299_990..<300_000, limit: 100) == Array(bytes[299_990...]))
        let file = try await store.file(sha256: sha)
        #expect(file.size == 300_000)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: file.path))) == bytes)
        if file.temporary { try FileManager.default.removeItem(atPath: file.path) }
        let copy = directory + "/copy"
        try await store.copy(sha256: sha, to: copy)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: copy))) == bytes)
        let local = try store.localFile(sha256: sha)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: local))) == bytes)
    }

    @Test("put bytes twice keeps one object; missing objects are notFound; remove is idempotent", arguments: Kind.allCases)
    func putRemove(_ kind: Kind) async throws {
        let (store, directory) = try Self.makeStore(kind)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = Self.bytes(1000, seed: 3)
        let sha = Self.sha256(bytes)
        try await store.put(bytes: bytes, sha256: sha)
        try await store.put(bytes: bytes, sha256: sha)
        #expect(try await store.read(sha256: sha) == bytes)
        let missing = Self.sha256([1, 2, 3])
        await #expect(throws: StoreError.self) { _ = try await store.read(sha256: missing) }
        do {
            _ = try await store.read(sha256: missing)
        } catch let error as StoreError {
            guard case .notFound = error else { Issue.record("expected notFound, got \(error)"); return }
        }
        await #expect(throws: StoreError.self) { _ = try await store.file(sha256: missing) }
        await #expect(throws: StoreError.self) { _ = try await store.read(sha256: "../../etc/passwd") }
        #expect(try store.remove(sha256: sha, unlessWrittenAfter: nil))
        #expect(try store.remove(sha256: sha, unlessWrittenAfter: nil))
        #expect(try await store.contains(sha256: sha) == false)
    }

    @Test("a pack member read past the object's end is corrupt (never unavailable, which processing retries for ever)",
          arguments: Kind.allCases)
    func memberPastTheEnd(_ kind: Kind) async throws {
        let (store, directory) = try Self.makeStore(kind)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = Self.bytes(1000, seed: 5)
        let pack = Self.sha256(bytes)
        try await store.put(bytes: bytes, sha256: pack)
        let member = Array(bytes[900..<1000])
        let inside = CrashStore.RawLocation(sha256: Self.sha256(member), size: 100, pack: pack, offset: 900)
        #expect(try await store.read(raw: inside, limit: 1 << 20) == member)
        // Partly past the end (the object was cut short), then wholly past it (S3 answers 416).
        for offset: Int64 in [950, 5000] {
            let past = CrashStore.RawLocation(sha256: inside.sha256, size: 100, pack: pack, offset: offset)
            do {
                _ = try await store.read(raw: past, limit: 1 << 20)
                Issue.record("a member past the end was read at offset \(offset)")
            } catch let error as StoreError {
                guard case .corrupt = error else { Issue.record("offset \(offset): expected corrupt, got \(error)"); continue }
            }
        }
    }

    @Test("a removal with a cutoff keeps an object written after it and removes an older one", arguments: Kind.allCases)
    func removeWithCutoff(_ kind: Kind) async throws {
        let (store, directory) = try Self.makeStore(kind)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = Self.bytes(300, seed: 9)
        let sha = Self.sha256(bytes)
        let before = Int64(Date().timeIntervalSince1970)
        try await store.put(bytes: bytes, sha256: sha)
        #expect(try store.remove(sha256: sha, unlessWrittenAfter: before - 3600) == false)
        #expect(try await store.read(sha256: sha) == bytes)
        #expect(try store.remove(sha256: sha, unlessWrittenAfter: Int64(Date().timeIntervalSince1970) + 3600))
        #expect(try await store.contains(sha256: sha) == false)
        #expect(try store.remove(sha256: sha, unlessWrittenAfter: before))
    }

    @Test("the listing pages through every object with its size and a recent time", arguments: Kind.allCases)
    func listing(_ kind: Kind) async throws {
        let (store, directory) = try Self.makeStore(kind)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Bounds taken around the work, not one instant: a parallel test run can leave this task
        // suspended for minutes between putting and listing (CI saw 375 s).
        let before = Int64(Date().timeIntervalSince1970)
        var expected: [String: UInt64] = [:]
        for seed in 0..<5 {
            let bytes = Self.bytes(100 + seed, seed: UInt8(seed))
            try await store.put(bytes: bytes, sha256: Self.sha256(bytes))
            expected[Self.sha256(bytes)] = UInt64(bytes.count)
        }
        var listed: [String: UInt64] = [:]
        var modified: [Int64] = []
        for object in try await store.listAll() {
            listed[object.sha256] = object.size
            modified.append(object.modified)
        }
        let after = Int64(Date().timeIntervalSince1970)
        #expect(listed == expected)
        // Whole seconds on both sides (S3's Last-Modified has no fraction): a second of slack each way.
        for time in modified { #expect(time >= before - 1 && time <= after + 1, "modified \(time) outside [\(before), \(after)]") }
    }

    @Test("the sweeper removes unreferenced objects past the grace period and keeps referenced ones", arguments: Kind.allCases)
    func sweeper(_ kind: Kind) async throws {
        let (objects, directory) = try Self.makeStore(kind)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let symbols = try SymbolStore(dataDirectory: directory + "/meta", objects: objects)
        let crashes = CrashStore(symbols: symbols)
        let app = try symbols.createApp(name: "sweep").app
        let kept = Array("a crash report\n".utf8), orphan = Array("left by an interrupted upload\n".utf8)
        try await objects.put(bytes: kept, sha256: Self.sha256(kept))
        try await objects.put(bytes: orphan, sha256: Self.sha256(orphan))
        _ = try await crashes.accept(CrashStore.NewCrash(
            appID: app.id, version: nil, host: nil, environment: nil, inputFormat: nil, rawSHA256: Self.sha256(kept),
            rawSize: kept.count, idempotencyKey: nil, receivedMilliseconds: 0))
        let now = Int64(Date().timeIntervalSince1970)
        let sweeper = ObjectSweeper(objects: objects, crashes: crashes, graceSeconds: 3600, logger: .init(label: "test"))
        // Within the grace period: nothing goes.
        #expect(try await sweeper.sweep(now: now) == 0)
        #expect(try await objects.contains(sha256: Self.sha256(orphan)))
        // Past it: the orphan goes, the crash's bytes stay.
        #expect(try await sweeper.sweep(now: now + 7200) == 1)
        #expect(try await objects.contains(sha256: Self.sha256(orphan)) == false)
        #expect(try await objects.read(sha256: Self.sha256(kept)) == kept)
    }
}
