import Crypto
import Foundation
import Logging
@testable import SymServer
import Synchronization
import Testing

/// An upload of bytes whose last row is being deleted, and the sweeper meeting an upload, with
/// the interleaving that lost the object forced by pausing the real store at the point where
/// the other side runs (`PausingObjectStore`).
struct ObjectRemovalRaceTests {
    typealias Kind = ObjectStoreConformanceTests.Kind

    @Test("a crash uploaded while the last crash with its bytes is deleted keeps its bytes", arguments: Kind.allCases)
    func uploadDuringDeletion(_ kind: Kind) async throws {
        let (objects, directory) = try ObjectStoreConformanceTests.makeStore(kind)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crashes = CrashStore(symbols: try SymbolStore(dataDirectory: directory + "/meta", objects: objects))
        let app = try crashes.symbols.createApp(name: "race").app.id
        // Over 1 MiB: a report stored as a single object of its own, not packed (CrashPack.memberLimit).
        let body = Array("Thread 0 crashed \(UUID().uuidString)\n".utf8) + Array(repeating: UInt8(ascii: "x"), count: CrashPack.memberLimit)
            + [0x0a]
        let sha256 = ObjectStoreConformanceTests.sha256(body)
        try await objects.put(bytes: body, sha256: sha256)
        let first = try await crashes.accept(CrashStore.NewCrash(
            appID: app, version: nil, host: nil, environment: nil, inputFormat: nil, rawSHA256: sha256, rawSize: body.count,
            idempotencyKey: nil, receivedMilliseconds: 0))
        // The second upload's put is done, its row not yet committed: the first crash is deleted
        // now, and its bytes, which no row names at this instant, removed.
        let paused = PausingObjectStore(base: objects, pauseAfter: .put) {
            let unused = try await crashes.deleteCrash(appID: app, id: first.id)
            #expect(unused == sha256)
            #expect(try await objects.removeUnused([sha256], in: crashes) == 1)
        }
        let service = CrashService(metadata: crashes, objects: paused, configuration: CrashServiceConfiguration(),
                                   logger: Logger(label: "test"))
        let second = try await service.ingest(appID: app, body: body, submission: .init())
        #expect(paused.paused)
        #expect(try await crashes.rawObject(appID: app, id: second.id).sha256 == sha256)
        #expect(try await objects.read(sha256: sha256) == body)
    }

    @Test("a crash pack removed between its put and the commit of its crashes is put back (confirmed once)", arguments: Kind.allCases)
    func packRemovedBeforeCommit(_ kind: Kind) async throws {
        let (objects, directory) = try ObjectStoreConformanceTests.makeStore(kind)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crashes = CrashStore(symbols: try SymbolStore(dataDirectory: directory + "/meta", objects: objects))
        let app = try crashes.symbols.createApp(name: "race").app.id
        let body = Array("Thread 0 crashed \(UUID().uuidString)\n".utf8)
        // The pack is put, its crash's row not yet committed: a remover that looked at the store
        // before (the sweeper's DELETE after its listing on S3) removes it now.
        let paused = PausingObjectStore(base: objects, pauseAfter: .put) {
            let names = try await objects.listAll().map(\.sha256)
            #expect(names.count == 1)
            let cutoff = Int64(Date().timeIntervalSince1970) + 3600
            #expect(try await objects.removeUnused(names, in: crashes, unlessWrittenAfter: cutoff) == 1)
            #expect(try await !objects.contains(sha256: names[0]))
        }
        let service = CrashService(metadata: crashes, objects: paused, configuration: CrashServiceConfiguration(),
                                   logger: Logger(label: "test"))
        let receipt = try await service.ingest(appID: app, body: body, submission: .init())
        #expect(paused.paused)
        let raw = try await crashes.rawObject(appID: app, id: receipt.id)
        #expect(raw.pack != nil)
        #expect(try await objects.read(raw: raw, limit: 1 << 20) == body)
    }

    @Test("a bundle's table removed between its put and the commit of its module is put back", arguments: Kind.allCases)
    func removalBeforeBundleCommit(_ kind: Kind) async throws {
        let (objects, directory) = try ObjectStoreConformanceTests.makeStore(kind)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crashes = CrashStore(symbols: try SymbolStore(dataDirectory: directory + "/meta", objects: objects))
        let app = try crashes.symbols.createApp(name: "race").app.id
        var generator = SystemRandomNumberGenerator()
        var module = try Bundles.synthetic(symbolCount: 64, into: directory, using: &generator)
        let debug = ObjectStoreConformanceTests.bytes(100_000, seed: UInt8.random(in: 0 ... 255))
        module.debug = directory + "/libsynthetic.so.debug"
        try Data(debug).write(to: URL(fileURLWithPath: module.debug!))
        let manifest = try Bundles.manifest(appID: app, version: "1.0", modules: [module])
        let entry = manifest.modules[0]
        let table = Array(try Data(contentsOf: URL(fileURLWithPath: module.symbols)))
        let stored = SymbolStore.StoredModule(
            buildID: entry.buildID, name: entry.name, arch: entry.arch, hasDWARF: entry.hasDWARF,
            symbolsSHA256: entry.symbols.sha256, symbolsSize: entry.symbols.size,
            debugSHA256: entry.debug?.sha256, debugSize: entry.debug?.size)
        // The table is put, its row not yet committed: a remover that looked at the object before
        // this put removes it now (the sweeper's DELETE after its listing on S3, which has no
        // conditional delete), modelled by a cutoff later than the put.
        let paused = PausingObjectStore(base: objects, pauseAfter: .put) {
            let cutoff = Int64(Date().timeIntervalSince1970) + 3600
            let removed = try await objects.removeUnused([entry.symbols.sha256], in: crashes, unlessWrittenAfter: cutoff)
            let present = try await objects.contains(sha256: entry.symbols.sha256)
            #expect(removed == 1)
            #expect(!present)
        }
        let puts = [(path: try ObjectStoreConformanceTests.scratchFile(objects, table), sha256: entry.symbols.sha256),
                    (path: try ObjectStoreConformanceTests.scratchFile(objects, debug), sha256: entry.debug!.sha256)]
        let result = try await paused.put(files: puts) {
            try await crashes.commit(appID: app, manifest: manifest, modules: [stored])
        }
        #expect(paused.paused)
        #expect(result.stored == [entry.buildID])
        #expect(try await crashes.table(appID: app, buildID: entry.buildID)?.sha256 == entry.symbols.sha256)
        #expect(try await objects.read(sha256: entry.symbols.sha256) == table)
        #expect(try await objects.read(sha256: entry.debug!.sha256) == debug)
        // Nothing kept for the confirmation is left behind.
        #expect(try FileManager.default.contentsOfDirectory(atPath: objects.scratchDirectory).isEmpty)
    }

    @Test("an object put again between the sweeper's listing and its removal stays")
    func putDuringSweep() async throws {
        // The directory store only: the object is made older than the grace period by setting its
        // time, which an S3 store does not allow.
        let (objects, directory) = try ObjectStoreConformanceTests.makeStore(.directory)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let crashes = CrashStore(symbols: try SymbolStore(dataDirectory: directory + "/meta", objects: objects))
        let bytes = Array("a table uploaded long ago and again now\n".utf8)
        let sha256 = ObjectStoreConformanceTests.sha256(bytes)
        try await objects.put(bytes: bytes, sha256: sha256)
        let now = Int64(Date().timeIntervalSince1970)
        var times = [timespec(tv_sec: Int(now - 7200), tv_nsec: 0), timespec(tv_sec: Int(now - 7200), tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, (objects as! DirectoryObjectStore).path(sha256: sha256), &times, 0) == 0)
        // The sweeper has listed the old object; an upload puts the same bytes (its row commits
        // after the pass, when the sweeper has read the references without it).
        let paused = PausingObjectStore(base: objects, pauseAfter: .list) { try await objects.put(bytes: bytes, sha256: sha256) }
        let sweeper = ObjectSweeper(objects: paused, crashes: crashes, graceSeconds: 3600, logger: Logger(label: "test"))
        #expect(try await sweeper.sweep(now: now) == 0)
        #expect(paused.paused)
        #expect(try await objects.read(sha256: sha256) == bytes)
        // Unreferenced and old again: the next pass removes it.
        #expect(try await sweeper.sweep(now: now + 7200) == 1)
        #expect(try await objects.contains(sha256: sha256) == false)
    }
}

/// The store it wraps, but the first `put` or `list` runs `interlude` once it is done, before
/// returning to its caller: the other side of a race, run at the worst moment.
final class PausingObjectStore: ObjectStore {
    /// `remove`: the first removal throws instead (no interlude runs: removal is synchronous),
    /// as a process killed just before it would leave the object.
    enum Point: Sendable { case put, list, remove }
    let base: any ObjectStore
    let point: Point
    private let interlude: Mutex<(@Sendable () async throws -> Void)?>

    init(base: any ObjectStore, pauseAfter point: Point, _ interlude: @escaping @Sendable () async throws -> Void) {
        self.base = base
        self.point = point
        self.interlude = Mutex(interlude)
    }

    /// Whether the interlude ran.
    var paused: Bool { interlude.withLock { $0 == nil } }

    private func pause(at point: Point) async throws {
        guard point == self.point, let body = interlude.withLock({ current in defer { current = nil }; return current }) else { return }
        try await body()
    }

    var scratchDirectory: String { base.scratchDirectory }
    func put(fileAt path: String, sha256: String) async throws {
        try await base.put(fileAt: path, sha256: sha256)
        try await pause(at: .put)
    }
    func put(bytes: [UInt8], sha256: String) async throws {
        try await base.put(bytes: bytes, sha256: sha256)
        try await pause(at: .put)
    }
    func contains(sha256: String) async throws -> Bool { try await base.contains(sha256: sha256) }
    func size(sha256: String) async throws -> UInt64? { try await base.size(sha256: sha256) }
    func read(sha256: String, range: Range<UInt64>?, limit: Int) async throws -> [UInt8] {
        reads.withLock { $0 += 1 }
        return try await base.read(sha256: sha256, range: range, limit: limit)
    }
    /// How many reads were asked of it. (It has no `localReader`: processing reads through it as
    /// from a remote store.)
    let reads = Mutex<Int>(0)
    func file(sha256: String) async throws -> ObjectFile { try await base.file(sha256: sha256) }
    func copy(sha256: String, to path: String) async throws { try await base.copy(sha256: sha256, to: path) }
    func localFile(sha256: String) throws -> String { try base.localFile(sha256: sha256) }
    func remove(sha256: String, unlessWrittenAfter cutoff: Int64?) throws -> Bool {
        if point == .remove, interlude.withLock({ current in defer { current = nil }; return current != nil }) {
            throw StoreError.unavailable("stopped before removing \(sha256)")
        }
        return try base.remove(sha256: sha256, unlessWrittenAfter: cutoff)
    }
    func list(after token: String?) async throws -> ObjectPage {
        let page = try await base.list(after: token)
        try await pause(at: .list)
        return page
    }
    func removeLeftovers() throws { try base.removeLeftovers() }
}
