import Foundation
import Logging
import SymBundle
import Symbolication
@testable import SymServer
import Synchronization
import Testing

/// The behaviour every `MetadataStore` must have, run against each implementation: SQLite (the
/// embedded store) and PostgreSQL (a throw-away PostgreSQL 15 cluster per test). A behaviour
/// that one backend lacks fails here for that backend.
struct MetadataStoreConformanceTests {
    enum Backend: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case sqlite, postgres
        var testDescription: String { rawValue }
    }

    /// Runs `body` with an empty store of `backend`, removed afterwards.
    static func withStore(_ backend: Backend, _ body: @Sendable (any MetadataStore) async throws -> Void) async throws {
        switch backend {
        case .sqlite:
            let directory = try Binary.temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try await body(CrashStore(symbols: try SymbolStore(dataDirectory: directory + "/data")))
        case .postgres:
            try await PostgresCluster.with { cluster in
                var logger = Logger(label: "test.postgres")
                logger.logLevel = .critical
                try await PostgresMetadataStore.with(url: cluster.url(), password: nil, logger: logger) { try await body($0) }
            }
        }
    }

    static func app(_ store: any MetadataStore, _ id: String = "demo") async throws -> String {
        try await store.createApp(name: "Demo", id: id).app.id
    }

    static func module(_ id: String, name: String, dwarf: Bool = true, sha256: String? = nil, debug: String? = nil)
        -> SymbolStore.StoredModule {
        SymbolStore.StoredModule(buildID: id, name: name, arch: "x86_64", hasDWARF: dwarf, symbolsSHA256: sha256 ?? "t-" + id,
                                 symbolsSize: 100, debugSHA256: debug, debugSize: debug == nil ? nil : 1000)
    }

    static func manifest(_ app: String, version: String) -> BundleManifest {
        BundleManifest(appID: app, package: "com.example", version: version, platform: "linux", tool: "test",
                       created: "2026-01-01T00:00:00Z", modules: [])
    }

    static func crash(_ app: String, version: String? = "1.0", key: String? = nil, raw: String = "raw", at received: Int64 = 1_000,
                      system: String? = "Linux 6.1.0-18-amd64 x86_64") -> CrashStore.NewCrash {
        CrashStore.NewCrash(appID: app, version: version, host: "host-a", system: system, environment: nil, inputFormat: nil,
                            rawSHA256: raw, rawSize: 10, idempotencyKey: key, receivedMilliseconds: received)
    }

    static func done(_ signature: String, missing: [(buildID: String, name: String)] = []) -> CrashStore.ProcessingResult {
        CrashStore.ProcessingResult(state: .done, format: "tombstone", signal: "SIGSEGV", signature: signature, title: "t " + signature,
                                    report: Array("{\"ok\":true}".utf8), missing: missing)
    }

    /// Leases every job and returns their seqs, in lease order.
    static func leaseAll(_ store: any MetadataStore, now: Int64 = 10_000) async throws -> [Int64] {
        try await store.leaseJobs(limit: 100, now: now, lease: 1_000).map(\.seq)
    }

    // MARK: Apps and keys

    @Test(arguments: Backend.allCases)
    func appsAndKeys(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let (app, key) = try await store.createApp(name: "Demo", id: "demo")
            #expect(app.id == "demo" && app.name == "Demo")
            #expect(try await store.keyHash(appID: "demo") == AppKey.hash(key))
            await #expect(throws: StoreError.conflict("an app with id demo already exists")) {
                _ = try await store.createApp(name: "Again", id: "demo")
            }
            await #expect(throws: StoreError.self) { _ = try await store.createApp(name: "Bad", id: "bad id") }
            _ = try await store.createApp(name: "Other", id: "other")
            #expect(try await store.listApps().map(\.id).sorted() == ["demo", "other"])
            let rotated = try await store.rotateKey(appID: "demo")
            #expect(rotated != key)
            #expect(try await store.keyHash(appID: "demo") == AppKey.hash(rotated))
            #expect(try await store.keyHash(appID: "nobody") == nil)
            await #expect(throws: StoreError.notFound("no app with id nobody")) { _ = try await store.rotateKey(appID: "nobody") }
        }
    }

    // MARK: Versions and modules

    @Test(arguments: Backend.allCases)
    func symbolsCommitAndLookups(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let app = try await Self.app(store)
            let first = try await store.commit(appID: app, manifest: Self.manifest(app, version: "1.0"),
                                               modules: [Self.module("aa", name: "libb.so"), Self.module("bb", name: "liba.so", debug: "d-bb")])
            #expect(first.stored.sorted() == ["aa", "bb"] && first.alreadyPresent.isEmpty)
            let again = try await store.commit(appID: app, manifest: Self.manifest(app, version: "1.0"), modules: [Self.module("aa", name: "libb.so")])
            #expect(again.stored.isEmpty && again.alreadyPresent == ["aa"])
            // missing: present ones are linked to the new version, improvable ones named.
            let answer = try await store.missing(appID: app, version: "1.1", package: "com.example", platform: "linux", modules: [
                .init(buildID: "aa", name: "libb.so", arch: "x86_64", hasDWARF: true, hasDebugFile: true),
                .init(buildID: "cc", name: "libc.so", arch: "x86_64"),
            ])
            #expect(answer.missing == ["cc"] && answer.present == ["aa"] && answer.improvable == ["aa"])
            #expect(try await store.versions(appID: app).map { "\($0.version):\($0.modules)" } == ["1.0:2", "1.1:1"])
            let modules = try #require(try await store.modules(appID: app, version: "1.0"))
            #expect(modules.map(\.buildID) == ["bb", "aa"])  // by name
            #expect(modules.map(\.hasDebugFile) == [true, false])
            #expect(try await store.modules(appID: app, version: "9") == nil)
            #expect(try await store.debugFileObject(buildID: "bb") == "d-bb")
            #expect(try await store.debugFileObject(buildID: "aa") == nil)
            #expect(try await store.table(appID: app, buildID: "aa")?.sha256 == "t-aa")
            #expect(try await store.table(appID: "other", buildID: "aa") == nil)
            #expect(try await store.presentTables(appID: app, buildIDs: ["aa", "zz"]) == ["aa"])
            let states = try await store.states(appID: app, buildIDs: ["aa", "bb", "zz"])
            #expect(states.keys.sorted() == ["aa", "bb"] && states["bb"]?.hasDebugFile == true && states["aa"]?.symbolsSHA256 == "t-aa")
            // Improving: a new table replaces the stored one only while it is still the expected one.
            var better = Self.module("aa", name: "libb.so", sha256: "t-aa-2", debug: "d-aa")
            better.change = .improve(table: true, debug: true, expectedSymbols: "t-aa")
            let improved = try await store.commit(appID: app, manifest: Self.manifest(app, version: "1.1"), modules: [better])
            #expect(improved.improved == ["aa"] && improved.stored == ["aa"])
            better.change = .improve(table: true, debug: false, expectedSymbols: "t-aa")
            #expect(try await store.commit(appID: app, manifest: Self.manifest(app, version: "1.1"), modules: [better]).alreadyPresent == ["aa"])
            #expect(try await store.table(appID: app, buildID: "aa")?.sha256 == "t-aa-2")
            // The tables a report needs: by build-id, and by name among the version's.
            let tables = try await store.reportTables(appID: app, buildIDs: ["aa", "zz"], names: ["liba.so", "nothere.so"], version: "1.0")
            #expect(tables.byBuildID == ["aa": "t-aa-2"])
            #expect(tables.byName["liba.so"]?.map(\.buildID) == ["bb"])
            #expect(tables.byName["nothere.so"]?.isEmpty ?? true)
            if let reader = store.immediateTables {
                let now = try reader.reportTablesNow(appID: app, buildIDs: ["aa"], names: ["liba.so"], version: "1.0")
                #expect(now.byBuildID == tables.byBuildID && now.byName["liba.so"]?.map(\.buildID) == ["bb"])
            }
        }
    }

    /// The same build-id committed at once through several connections (several nodes, on
    /// PostgreSQL) is stored once: one commit stores it, the others find it present; the version's
    /// module list is the same whichever commit answered.
    @Test(arguments: Backend.allCases)
    func concurrentCommitsOfOneBuildIDStoreItOnce(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let app = try await Self.app(store)
            let results = try await withThrowingTaskGroup(of: SymbolStore.CommitResult.self) { group in
                for index in 0..<8 {
                    group.addTask {
                        try await store.commit(appID: app, manifest: Self.manifest(app, version: index % 2 == 0 ? "1.0" : "1.1"),
                                               modules: [Self.module("aa", name: "liba.so"), Self.module("b\(index)", name: "lib\(index).so")])
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.filter { $0.stored.contains("aa") }.count == 1)
            #expect(results.filter { $0.alreadyPresent.contains("aa") }.count == 7)
            for version in ["1.0", "1.1"] {
                let modules = try #require(try await store.modules(appID: app, version: version))
                #expect(modules.filter { $0.buildID == "aa" }.count == 1 && modules.count == 5, "\(version): \(modules.map(\.buildID))")
            }
            #expect(try await store.table(appID: app, buildID: "aa")?.sha256 == "t-aa")
        }
    }

    // MARK: Crashes

    @Test(arguments: Backend.allCases)
    func crashesAcceptReadDelete(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let app = try await Self.app(store)
            let first = try await store.accept(Self.crash(app, key: "k1", raw: "r1"))
            #expect(first.state == .pending && !first.replayed)
            let replay = try await store.accept(Self.crash(app, key: "k1", raw: "r-other"))
            #expect(replay.replayed && replay.id == first.id)
            let second = try await store.accept(Self.crash(app, version: nil, raw: "r1", at: 2_000, system: nil))
            let third = try await store.accept(Self.crash(app, raw: "r3", at: 3_000))
            let (summary, report) = try await store.crash(appID: app, id: first.id)
            #expect(summary.state == .pending && summary.version == "1.0" && summary.host == "host-a" && report == nil)
            #expect(summary.system == "Linux 6.1.0-18-amd64 x86_64")
            let secondSummary = try await store.crash(appID: app, id: second.id).summary
            #expect(secondSummary.version == "unknown" && secondSummary.system == nil)
            await #expect(throws: StoreError.notFound("no crash \(first.id)")) { _ = try await store.crash(appID: "other", id: first.id) }
            let page = try await store.crashes(appID: app, filter: .init(), limit: 2, cursor: nil)
            #expect(page.crashes.map(\.id) == [third.id, second.id])
            #expect(page.crashes.map(\.system) == ["Linux 6.1.0-18-amd64 x86_64", nil])
            let rest = try await store.crashes(appID: app, filter: .init(), limit: 2, cursor: page.next)
            #expect(rest.crashes.map(\.id) == [first.id] && rest.next == nil)
            #expect(try await store.crashes(appID: app, filter: .init(sinceMilliseconds: 2_500), limit: 10, cursor: nil).crashes.map(\.id) == [third.id])
            #expect(try await store.rawObject(appID: app, id: third.id).sha256 == "r3")
            // The raw bytes are freed with the last crash that names them.
            #expect(try await store.deleteCrash(appID: app, id: first.id) == nil)
            #expect(try await store.deleteCrash(appID: app, id: second.id) == "r1")
            await #expect(throws: StoreError.self) { _ = try await store.deleteCrash(appID: app, id: second.id) }
            // Retention: older than the cutoff, with their objects.
            let expired = try await store.expireCrashes(receivedBefore: 5_000, limit: 10)
            #expect(expired.deleted == 1 && expired.objects == ["r3"])
            #expect(try await store.pendingJobCount() == 0)
        }
    }

    @Test(arguments: Backend.allCases)
    func lateSymbolsByNameAndRegrouping(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let app = try await Self.app(store)
            let crash = try await store.accept(Self.crash(app, version: "1.0", raw: "n1"))
            let rule = GroupingRule(.skip, function: GlobPattern("abort"), note: "the signal's delivery", origin: .builtin, index: 3)
            let signature = CrashSignature(signature: "sig-n", title: "t sig-n", stack: 0, frames: [
                GroupingFrame(frameIndex: 0, inlineDepth: 0, inlined: false, text: "abort", function: "abort", module: "libc.so.6",
                              file: nil, line: 0, isApp: false, role: .skipped, rule: rule),
                GroupingFrame(frameIndex: 1, inlineDepth: 0, inlined: false, text: "sig-n", function: "sig_n(int)", module: "app",
                              file: "/src/n.c", line: 7, isApp: true, role: .signature, rule: nil),
            ])
            var result = Self.done("sig-n")
            result.missingNames = ["libfoo.so"]
            result.grouping = signature.keptBytes
            _ = try await store.finish(seq: try await Self.leaseAll(store)[0], result: result, now: 100_000)
            #expect(try await store.grouping(appID: app, crashID: crash.id) == signature.kept)
            #expect(try await store.pendingJobCount() == 0)
            #expect(try await store.namedTableCounts(appID: app, version: "1.0", names: ["libfoo.so"]) == ["libfoo.so": 0])
            // A table of that name for another version queues nothing; for the crash's version, the crash.
            _ = try await store.commit(appID: app, manifest: Self.manifest(app, version: "2.0"), modules: [Self.module("f2", name: "libfoo.so")])
            #expect(try await store.requeue(appID: app, version: "2.0", names: ["libfoo.so"], now: 200_000) == 0)
            _ = try await store.commit(appID: app, manifest: Self.manifest(app, version: "1.0"), modules: [Self.module("f1", name: "libfoo.so")])
            #expect(try await store.namedTableCounts(appID: app, version: "1.0", names: ["libfoo.so"]) == ["libfoo.so": 1])
            #expect(try await store.requeue(appID: app, version: "1.0", names: ["libfoo.so"], now: 200_000) == 1)
            #expect(try await store.requeueResolvableNames(now: 200_000) == 1)
            let again = try await Self.leaseAll(store, now: 300_000)
            #expect(again.count == 1)
            _ = try await store.finish(seq: again[0], result: Self.done("sig-n"), now: 300_000)
            #expect(try await store.requeueResolvableNames(now: 400_000) == 0)
            // A second table of the name makes it ambiguous.
            _ = try await store.commit(appID: app, manifest: Self.manifest(app, version: "1.0"), modules: [Self.module("f3", name: "libfoo.so")])
            #expect(try await store.namedTableCounts(appID: app, version: "1.0", names: ["libfoo.so", "other"]) == ["libfoo.so": 2, "other": 0])

            // Rules: the same document again starts nothing; a new one queues every crash not failed.
            let second = try await store.accept(Self.crash(app, raw: "n2", at: 2_000))
            _ = try await store.finish(seq: try await Self.leaseAll(store, now: 500_000)[0], result: Self.done("sig-m"), now: 500_000)
            #expect(try await store.replaceGroupingRules(appID: app, rules: "{\"rules\":[]}", now: 600_000))
            #expect(try await store.replaceGroupingRules(appID: app, rules: "{\"rules\":[]}", now: 600_001) == false)
            #expect(try await store.groupingRules(appID: app) == "{\"rules\":[]}")
            #expect(try await store.regroupBacklog(appID: app) == 2)
            let step = try await store.queueRegroupBatch(limit: 1, now: 600_000)
            #expect(step == CrashStore.RegroupStep(queued: 1, remaining: true))
            // The limit counts waiting re-signing jobs: none more until those are done.
            #expect(try await store.queueRegroupBatch(limit: 1, now: 600_000) == CrashStore.RegroupStep(queued: 0, remaining: true))
            #expect(try await store.regroupBacklog(appID: app) == 2)
            let jobs = try await store.leaseJobs(limit: 10, now: 700_000, lease: 1_000)
            #expect(jobs.map(\.kind) == [.regroup])
            _ = try await store.finish(seq: jobs[0].seq, result: Self.done("sig-n"), now: 700_000)
            let last = try await store.queueRegroupBatch(limit: 1, now: 700_000)
            #expect(last.queued == 1)
            _ = try await store.queueRegroupBatch(limit: 5, now: 700_000)
            #expect(try await store.regroupBacklog(appID: app) == 1)
            let final = try await store.leaseJobs(limit: 10, now: 800_000, lease: 1_000)
            _ = try await store.finish(seq: final[0].seq, result: Self.done("sig-m"), now: 800_000)
            #expect(try await store.regroupBacklog(appID: app) == 0)
            #expect(try await store.queueRegroupBatch(limit: 5, now: 900_000) == CrashStore.RegroupStep(queued: 0, remaining: false))
            #expect(try await store.crash(appID: app, id: second.id).summary.signature == "sig-m")
        }
    }

    @Test(arguments: Backend.allCases)
    func agentCountsOnlyGrow(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let app = try await Self.app(store)
            #expect(try await store.agentCounts(appID: app).isEmpty)
            try await store.recordAgentCounts(appID: app, agentID: "a1", host: "h1", dropped: 3, suppressed: 5, queue: 40)
            // A retried or reordered submission carries lower totals: they stay.
            try await store.recordAgentCounts(appID: app, agentID: "a1", host: "h2", dropped: 1, suppressed: 9, queue: 7)
            try await store.recordAgentCounts(appID: "other", agentID: "a1", host: "h9", dropped: 100, suppressed: 100, queue: 1)
            var counts = try await store.agentCounts(appID: app)
            #expect(counts.map(\.agentID) == ["a1"])
            #expect(counts.first?.dropped == 3 && counts.first?.suppressed == 9 && counts.first?.host == "h2")
            // The queue is a length, not a total: the last one given stays, and none given keeps it.
            #expect(counts.first?.queue == 7)
            try await store.recordAgentCounts(appID: app, agentID: "a1", host: "h2", dropped: 3, suppressed: 9, queue: nil)
            try await store.recordAgentCounts(appID: app, agentID: "a2", host: "h3", dropped: 0, suppressed: 0, queue: nil)
            counts = try await store.agentCounts(appID: app)
            #expect(counts.first { $0.agentID == "a1" }?.queue == 7)
            #expect(counts.first { $0.agentID == "a2" }.map { $0.queue == nil && $0.dropped == 0 } == true)
        }
    }

    @Test(arguments: Backend.allCases)
    func buildVersionsAreTheAppsOwn(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let app = try await Self.app(store)
            let other = try await Self.app(store, "other")
            _ = try await store.commit(appID: app, manifest: Self.manifest(app, version: "1.0"),
                                       modules: [Self.module("aa", name: "prog"), Self.module("bb", name: "libx.so")])
            // The same executable in a later version (unchanged binary), linked by `missing`.
            _ = try await store.missing(appID: app, version: "1.1", package: "com.example", platform: "linux",
                                        modules: [.init(buildID: "aa", name: "prog", arch: "x86_64")])
            _ = try await store.commit(appID: other, manifest: Self.manifest(other, version: "9.0"), modules: [Self.module("cc", name: "theirs")])
            let build = try #require(try await store.buildVersions(appID: app, buildID: "aa"))
            #expect(build.buildID == "aa" && build.name == "prog" && build.arch == "x86_64")
            #expect(build.versions.map(\.version) == ["1.1", "1.0"])
            #expect(build.versions.first?.package == "com.example" && build.versions.first?.platform == "linux")
            #expect(try await store.buildVersions(appID: app, buildID: "bb")?.versions.map(\.version) == ["1.0"])
            // Another app's build-id is unknown to this app, and this app's to it.
            #expect(try await store.buildVersions(appID: app, buildID: "cc") == nil)
            #expect(try await store.buildVersions(appID: other, buildID: "aa") == nil)
            #expect(try await store.buildVersions(appID: app, buildID: "dd") == nil)
        }
    }

    @Test(arguments: Backend.allCases)
    func minidumpsTheirClientDataAndAttachments(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let app = try await Self.app(store)
            let log = CrashStore.MinidumpAttachment(name: "log", filename: "app.log", contentType: "text/plain", size: 3, sha256: "att-log")
            let shared = CrashStore.MinidumpAttachment(name: "extra", filename: "x.bin", contentType: nil, size: 1, sha256: "att-shared")
            let details = CrashStore.MinidumpDetails(product: "Demo", annotations: ["ver": "1.0", "guid": "g<1>"], attachments: [log, shared])
            var crash = Self.crash(app, key: "minidump-sha256:d1", raw: "d1")
            crash.inputFormat = CrashStore.minidumpFormat
            let first = try await store.acceptMinidump(crash, details: details)
            #expect(!first.replayed)
            // The same minidump again: the first crash, and nothing stored.
            let again = try await store.acceptMinidump(crash, details: CrashStore.MinidumpDetails(product: "Other", annotations: [:], attachments: []))
            #expect(again.replayed && again.id == first.id)
            #expect(try await store.minidumpDetails(appID: app, id: first.id) == details)
            var other = Self.crash(app, raw: "d2")
            other.inputFormat = CrashStore.minidumpFormat
            // Why the version is not the ver annotation, kept with the client's data.
            let noted = CrashStore.MinidumpDetails(product: nil, annotations: ["ver": "1.0 (42)"], attachments: [shared],
                                                   versionNote: "the ver annotation is not a version")
            let second = try await store.acceptMinidump(other, details: noted)
            #expect(try await store.minidumpDetails(appID: app, id: second.id) == noted)
            let plain = try await store.accept(Self.crash(app, raw: "r9"))
            #expect(try await store.minidumpDetails(appID: app, id: plain.id) == nil)
            #expect(try await store.minidumpDetails(appID: "other", id: first.id) == nil)
            #expect(try await store.collectOrphanAttachments().isEmpty)
            _ = try await store.commit(appID: app, manifest: Self.manifest(app, version: "1.0"),
                                       modules: [Self.module("m1", name: "libm1.so", debug: "dbg-m1")])
            // Only objects no row names reach the remover; it may still keep one (a fresh put).
            let asked = Mutex<[String]>([])
            let removed = try await store.removeUnusedObjects(["att-log", "d2", "r9", "t-m1", "dbg-m1", "nobody's", "fresh"]) { name in
                asked.withLock { $0.append(name) }
                return name != "fresh"
            }
            #expect(asked.withLock { $0 } == ["nobody's", "fresh"])
            #expect(removed == ["nobody's"])
            // Deleting the first crash frees its own attachment; the shared one stays in use.
            #expect(try await store.deleteCrash(appID: app, id: first.id) == "d1")
            #expect(try await store.minidumpDetails(appID: app, id: first.id) == nil)
            #expect(try await store.collectOrphanAttachments() == ["att-log"])
            #expect(try await store.collectOrphanAttachments().isEmpty)
            _ = try await store.deleteCrash(appID: app, id: second.id)
            #expect(try await store.collectOrphanAttachments() == ["att-shared"])
        }
    }

    // MARK: Jobs

    @Test(arguments: Backend.allCases)
    func jobsLeaseExpireAndRenew(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let app = try await Self.app(store)
            var ids: [String] = []
            for index in 0..<3 { ids.append(try await store.accept(Self.crash(app, at: Int64(index))).id) }
            #expect(try await store.pendingJobCount() == 3)
            let first = try await store.leaseJobs(limit: 2, now: 10_000, lease: 1_000)
            #expect(first.count == 2 && first.allSatisfy { $0.attempts == 1 && $0.kind == .process })
            let second = try await store.leaseJobs(limit: 2, now: 10_000, lease: 1_000)
            #expect(second.count == 1 && Set(first.map(\.seq)).isDisjoint(with: second.map(\.seq)))
            #expect(try await store.leaseJobs(limit: 2, now: 10_500, lease: 1_000).isEmpty)
            // A renewed lease holds past its first expiry; the others expire and are leased again.
            try await store.renewLeases(seqs: first.map(\.seq), now: 10_900, lease: 1_000)
            let retaken = try await store.leaseJobs(limit: 10, now: 11_001, lease: 1_000)
            #expect(retaken.map(\.seq) == second.map(\.seq) && retaken[0].attempts == 2)
            let inputs = try await store.processingInputs(seqs: first.map(\.seq) + [999_999])
            #expect(Set(inputs.values.map(\.id)).isSubset(of: Set(ids)) && inputs.count == 2 && inputs[999_999] == nil)
            try await store.abandon(seq: retaken[0].seq, reason: "gave up")
            #expect(try await store.pendingJobCount() == 2)
            let failed = try await store.crashes(appID: app, filter: .init(), limit: 10, cursor: nil).crashes.filter { $0.state == .failed }
            #expect(failed.map(\.failure) == ["gave up"])
        }
    }

    /// Crashes accepted at once (PostgreSQL commits concurrent ones together) are each stored once
    /// with what they were sent, each with its job; keyed ones among them still replay.
    @Test(arguments: Backend.allCases)
    func concurrentAcceptsAreEachStoredOnce(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let app = try await Self.app(store)
            let count = 120
            func crash(_ index: Int) -> CrashStore.NewCrash {
                CrashStore.NewCrash(appID: app, version: index % 3 == 0 ? nil : "1.\(index)", host: index % 2 == 0 ? nil : "host-\(index)",
                                    system: index % 5 == 0 ? nil : "Linux \(index)", environment: index % 4 == 0 ? "prod" : nil,
                                    inputFormat: index % 7 == 0 ? "asan" : nil, rawSHA256: "raw-\(index)", rawSize: index,
                                    idempotencyKey: index % 10 == 0 ? "key-\(index)" : nil, receivedMilliseconds: Int64(1_000 + index))
            }
            let receipts = try await withThrowingTaskGroup(of: (Int, CrashStore.Receipt).self) { group in
                for index in 0..<count { group.addTask { (index, try await store.accept(crash(index))) } }
                var receipts: [Int: CrashStore.Receipt] = [:]
                for try await (index, receipt) in group { receipts[index] = receipt }
                return receipts
            }
            #expect(Set(receipts.values.map(\.id)).count == count && receipts.values.allSatisfy { $0.state == .pending && !$0.replayed })
            for index in 0..<count {
                let expected = crash(index), receipt = try #require(receipts[index])
                let summary = try await store.crash(appID: app, id: receipt.id).summary
                #expect(summary.version == expected.version ?? "unknown" && summary.host == expected.host
                    && summary.system == expected.system && summary.rawSize == index, "crash \(index)")
                #expect(try await store.rawObject(appID: app, id: receipt.id).sha256 == "raw-\(index)")
            }
            #expect(try await store.pendingJobCount() == count)
            let leased = try await store.leaseJobs(limit: 1_000, now: 10_000, lease: 1_000)
            #expect(leased.count == count && Set(leased.map(\.seq)).count == count && leased.allSatisfy { $0.kind == .process })
            let inputs = try await store.processingInputs(seqs: leased.map(\.seq))
            #expect(Set(inputs.values.map(\.id)) == Set(receipts.values.map(\.id)))
            #expect(inputs.values.filter { $0.inputFormat == "asan" }.count == (0..<count).filter { $0 % 7 == 0 }.count)
            let replay = try await store.accept(crash(30))
            #expect(replay.replayed && replay.id == receipts[30]?.id)
        }
    }

    /// A crash the database refuses (a NUL byte, which PostgreSQL's text cannot hold) fails alone:
    /// the crashes accepted with it are stored, each with its job, and it leaves nothing behind.
    @Test(arguments: Backend.allCases)
    func aRefusedCrashDoesNotFailTheOthers(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let app = try await Self.app(store)
            let outcomes = await withTaskGroup(of: (Int, String?).self) { group in
                for index in 0..<40 {
                    group.addTask {
                        var crash = Self.crash(app, raw: "raw-\(index)", at: Int64(index))
                        if index == 17 { crash.host = "bad\u{0}host" }
                        return (index, try? await store.accept(crash).id)
                    }
                }
                var outcomes: [Int: String?] = [:]
                for await (index, id) in group { outcomes[index] = id }
                return outcomes
            }
            let stored = outcomes.compactMap { $0.value }
            for (index, id) in outcomes where index != 17 { #expect(id != nil, "crash \(index)") }
            #expect(try await store.pendingJobCount() == stored.count)
            #expect(try await store.crashes(appID: app, filter: .init(), limit: 100, cursor: nil).crashes.count == stored.count)
            if backend == .postgres { #expect(outcomes[17] == .some(nil)) }
        }
    }

    /// PostgreSQL's data exceptions (class 22: a NUL byte in text) are the request's fault: a
    /// conflict (400), never `unavailable` (503, which a client retries for ever).
    @Test func dataExceptionsAreTheRequestsFault() async throws {
        try await Self.withStore(.postgres) { store in
            let app = try await Self.app(store)
            var crash = Self.crash(app, raw: "raw-nul", at: 1)
            crash.host = "bad\u{0}host"
            await #expect {
                _ = try await store.accept(crash)
            } throws: { error in
                if case .conflict = error as? StoreError { return true }
                return false
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func concurrentLeasesNeverShareAJob(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let app = try await Self.app(store)
            for index in 0..<60 { _ = try await store.accept(Self.crash(app, at: Int64(index))) }
            let leased = try await withThrowingTaskGroup(of: [Int64].self) { group in
                for _ in 0..<6 { group.addTask { try await store.leaseJobs(limit: 16, now: 10_000, lease: 60_000).map(\.seq) } }
                var all: [Int64] = []
                for try await seqs in group { all += seqs }
                return all
            }
            #expect(leased.count == 60 && Set(leased).count == 60)
        }
    }

    // MARK: Processing, groups, late symbols

    @Test(arguments: Backend.allCases)
    func finishGroupsAndRegressions(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let app = try await Self.app(store)
            let a = try await store.accept(Self.crash(app, version: "1.0", at: 60_000))
            let b = try await store.accept(Self.crash(app, version: "1.0", at: 120_000))
            let seqs = try await Self.leaseAll(store)
            let groups = try await store.finish([(seqs[0], Self.done("sig-1")), (seqs[1], Self.done("sig-1"))], now: 200_000,
                                                spike: CrashStore.SpikeRule())
            let groupID = try #require(groups[0])
            #expect(groups[1] == groupID)
            #expect(try await store.pendingJobCount() == 0)
            let (summary, report) = try await store.crash(appID: app, id: a.id)
            #expect(summary.state == .done && summary.groupID == groupID && summary.signature == "sig-1")
            #expect(report == Array("{\"ok\":true}".utf8))
            var group = try await store.group(appID: app, id: groupID)
            #expect(group.count == 2 && group.versions == ["1.0"] && group.hosts == 1 && group.sampleCrashID == a.id)
            #expect(try await store.groups(appID: app, version: nil, sinceMilliseconds: nil, order: .count, limit: 10).map(\.id) == [groupID])
            // Resolved, then a crash of a newer version reopens it.
            group = try await store.setGroupState(appID: app, id: groupID, state: .resolved)
            #expect(group.state == .resolved && group.resolvedIn == "1.0")
            _ = try await store.accept(Self.crash(app, version: "1.10", at: 180_000))
            let next = try await Self.leaseAll(store)
            _ = try await store.finish(seq: next[0], result: Self.done("sig-1"), now: 300_000)
            group = try await store.group(appID: app, id: groupID)
            #expect(group.state == .open && group.reopenedIn == "1.10" && group.count == 3 && group.versions == ["1.0", "1.10"])
            // Moving a crash to another signature moves its count; deleting it drops it.
            _ = try await store.requestResymbolication(appID: app, id: b.id, now: 400_000)
            let again = try await Self.leaseAll(store)
            let moved = try await store.finish(seq: again[0], result: Self.done("sig-2"), now: 400_000)
            #expect(moved != groupID && moved != nil)
            #expect(try await store.group(appID: app, id: groupID).count == 2)
            _ = try await store.deleteCrash(appID: app, id: b.id)
            #expect(try await store.group(appID: app, id: moved!).count == 0)
            #expect(try await store.groups(appID: app, version: nil, sinceMilliseconds: nil, order: .count, limit: 10).map(\.id) == [groupID])
            await #expect(throws: StoreError.notFound("no group nope")) { _ = try await store.group(appID: app, id: "nope") }
            // Grouping rules round-trip.
            #expect(try await store.groupingRules(appID: app) == nil)
            #expect(try await store.replaceGroupingRules(appID: app, rules: "{\"a\":1}", now: 1_000))
            #expect(try await store.groupingRules(appID: app) == "{\"a\":1}")
        }
    }

    @Test(arguments: Backend.allCases)
    func lateSymbolsRequeueCrashes(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let app = try await Self.app(store)
            _ = try await store.accept(Self.crash(app))
            let seqs = try await Self.leaseAll(store)
            _ = try await store.finish(seq: seqs[0], result: Self.done("sig", missing: [("ee", "libe.so")]), now: 20_000)
            #expect(try await store.missingSeen(appID: app).map { "\($0.buildID) \($0.name) \($0.crashes)" } == ["ee libe.so 1"])
            #expect(try await store.requeue(appID: app, newBuildIDs: ["ff"], now: 30_000) == 0)
            _ = try await store.commit(appID: app, manifest: Self.manifest(app, version: "1.0"), modules: [Self.module("ee", name: "libe.so")])
            #expect(try await store.missingSeen(appID: app).isEmpty)
            #expect(try await store.requeue(appID: app, newBuildIDs: ["ee"], now: 30_000) == 1)
            let jobs = try await store.leaseJobs(limit: 10, now: 40_000, lease: 1_000)
            #expect(jobs.map(\.kind) == [.resymbolicate] && jobs[0].seq == seqs[0])
            #expect(try await store.requeueResolvable(now: 50_000) == 1)
        }
    }

    // MARK: People

    @Test(arguments: Backend.allCases)
    func usersSessionsAndLockout(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let app = try await Self.app(store)
            _ = try await Self.app(store, "hidden")
            let password = try await store.createUser(name: "bob", admin: false)
            await #expect(throws: StoreError.self) { _ = try await store.createUser(name: "bob", admin: true) }
            try await store.grant(name: "bob", appID: app)
            await #expect(throws: StoreError.notFound("no user named eve")) { try await store.grant(name: "eve", appID: app) }
            #expect(try await store.listUsers() == [CrashStore.ConsoleUser(name: "bob", admin: false, apps: [app])])
            guard case .signedIn(let token, let session) = try await store.signIn(name: "bob", password: password, now: 1_000) else {
                Issue.record("sign-in refused")
                return
            }
            #expect(try await store.session(token: token, now: 2_000) == session)
            #expect(try await store.visibleApps(session).map(\.id) == [app])
            #expect(try await store.visibleApp(session, appID: "hidden") == nil)
            try await store.signOut(token: token)
            #expect(try await store.session(token: token, now: 2_000) == nil)
            var outcomes: [CrashStore.SignInOutcome] = []
            for _ in 0..<CrashStore.signInFailureLimit { outcomes.append(try await store.signIn(name: "bob", password: "wrong", now: 3_000)) }
            #expect(outcomes.last == .locked(untilMilliseconds: 3_000 + CrashStore.lockoutMilliseconds))
            #expect(try await store.signIn(name: "bob", password: password, now: 3_001) == .locked(untilMilliseconds: 3_000 + CrashStore.lockoutMilliseconds))
            let fresh = try await store.resetPassword(name: "bob")
            if case .signedIn = try await store.signIn(name: "bob", password: fresh, now: 3_002) {} else { Issue.record("reset did not lift the lock") }
        }
    }

    @Test(arguments: Backend.allCases)
    func oldSignInFailuresAreForgottenAndLockoutsKept(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let window = CrashStore.signInFailureWindowMilliseconds
            #expect(try await store.signIn(name: "ghost", password: "wrong", now: 1_000) == .refused)
            // The last failure comes at the end of the window: the lockout outlasts the window.
            var outcome = CrashStore.SignInOutcome.refused
            for _ in 1..<CrashStore.signInFailureLimit { outcome = try await store.signIn(name: "mallory", password: "wrong", now: 2_000) }
            #expect(outcome == .refused)
            let lockedUntil = 2_000 + window - 1 + CrashStore.lockoutMilliseconds
            #expect(try await store.signIn(name: "mallory", password: "wrong", now: 2_000 + window - 1) == .locked(untilMilliseconds: lockedUntil))
            #expect(try await store.forgetSignInFailures(now: 1_000 + window - 1) == 0)
            // ghost's window is over; mallory's too, but not the lockout.
            #expect(try await store.forgetSignInFailures(now: 2_000 + window) == 1)
            #expect(try await store.signIn(name: "mallory", password: "wrong", now: 2_000 + window + 1) == .locked(untilMilliseconds: lockedUntil))
            #expect(try await store.forgetSignInFailures(now: lockedUntil) == 1)
            #expect(try await store.forgetSignInFailures(now: lockedUntil) == 0)
            #expect(try await store.signIn(name: "mallory", password: "wrong", now: lockedUntil + 1) == .refused)
        }
    }

    // MARK: Webhooks

    @Test(arguments: Backend.allCases)
    func webhooksAndTheirOutbox(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let app = try await Self.app(store)
            await #expect(throws: StoreError.notFound("no app nope")) {
                _ = try await store.addWebhook(Webhook.New(appID: "nope", url: "http://127.0.0.1:9/x"))
            }
            let hook = try await store.addWebhook(Webhook.New(appID: app, url: "http://127.0.0.1:9/x", events: [.groupNew], secret: "s"))
            #expect(try await store.webhooks(appID: app) == [hook])
            _ = try await store.accept(Self.crash(app))
            let seqs = try await Self.leaseAll(store)
            _ = try await store.finish(seq: seqs[0], result: Self.done("sig"), now: 5_000)
            let due = try await store.dueDeliveries(now: 5_000, limit: 10, busy: [])
            #expect(due.map(\.event) == [.groupNew] && due[0].secret == "s" && due[0].webhookID == hook.id)
            #expect(try await store.dueDeliveries(now: 5_000, limit: 10, busy: [hook.id]).isEmpty)
            // One claim at a time (one node sends it); a claim that outlived its attempt expires.
            #expect(try await store.claimDelivery(seq: due[0].seq, now: 5_000, until: 65_000))
            #expect(try await !store.claimDelivery(seq: due[0].seq, now: 5_001, until: 65_001))
            #expect(try await store.dueDeliveries(now: 5_001, limit: 10, busy: []).isEmpty)
            #expect(try await store.dueDeliveries(now: 65_000, limit: 10, busy: []).map(\.seq) == [due[0].seq])
            #expect(try await store.claimDelivery(seq: due[0].seq, now: 65_000, until: 70_000))
            try await store.recordAttempt(seq: due[0].seq, CrashStore.DeliveryAttempt(at: 6_000, status: 204, error: nil,
                                                                                      latencyMilliseconds: 3, state: .delivered, nextAttempt: 6_000))
            #expect(try await store.dueDeliveries(now: 7_000, limit: 10, busy: []).isEmpty)
            #expect(try await !store.claimDelivery(seq: due[0].seq, now: 80_000, until: 90_000))  // no longer pending
            let listed = try await store.deliveries(appID: app, webhookID: hook.id, limit: 10)
            #expect(listed.map(\.state) == [.delivered] && listed[0].lastStatus == 204 && listed[0].attempts == 1)
            try await store.expireDeliveries(before: 10_000)
            #expect(try await store.deliveries(appID: app, webhookID: hook.id, limit: 10).isEmpty)
            try await store.removeWebhook(appID: app, id: hook.id)
            #expect(try await store.webhooks(appID: app).isEmpty)
            await #expect(throws: StoreError.notFound("no webhook \(hook.id)")) { try await store.removeWebhook(appID: app, id: hook.id) }
        }
    }

    // MARK: Console reads

    @Test(arguments: Backend.allCases)
    func consoleReads(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let app = try await Self.app(store)
            let day: Int64 = 86_400_000
            let now = 20 * day + 1_000
            for (index, signature) in ["a", "b", "b", "c", "c", "c"].enumerated() {
                _ = try await store.accept(Self.crash(app, version: index < 3 ? "1.9" : "1.10", at: now - Int64(index) * day / 2))
                let seqs = try await Self.leaseAll(store, now: now)
                _ = try await store.finish(seq: seqs[0], result: Self.done(signature), now: now)
            }
            let overview = try await store.appOverview(appID: app, now: now, days: 4)
            #expect(overview.crashesLastDay == 3 && overview.crashesLastWeek == 6 && overview.openGroups == 3)
            #expect(overview.daily.reduce(0, +) == 6 && overview.latestVersion == "1.10")
            #expect(try await store.crashVersions(appID: app) == ["1.10", "1.9"])
            var query = CrashStore.GroupQuery()
            let first = try await store.groupPage(appID: app, query: query, limit: 2)
            #expect(first.groups.map(\.signature) == ["c", "b"] && first.next != nil)
            query.cursor = first.next
            let second = try await store.groupPage(appID: app, query: query, limit: 2)
            #expect(second.groups.map(\.signature) == ["a"] && second.next == nil)
            query = CrashStore.GroupQuery()
            query.text = "T C"
            #expect(try await store.groupPage(appID: app, query: query, limit: 10).groups.map(\.signature) == ["c"])
            let counts = try await store.dailyCounts(appID: app, sinceMilliseconds: 0)
            #expect(counts.reduce(0) { $0 + $1.count } == 6)
            let c = try #require(first.groups.first)
            let spread = try await store.groupSpread(groupID: c.id)
            #expect(spread.versions.map(\.0) == ["1.10"] && spread.versions[0].1 == 3 && spread.hosts == ["host-a"])
        }
    }

    // MARK: Node-local versus shared

    /// Concurrent crashes are committed together on PostgreSQL (group commit): the rows of one
    /// transaction share its id (`xmin`), and there are fewer transactions than crashes.
    @Test func concurrentIngestionIsCommittedTogether() async throws {
        try await PostgresCluster.with { cluster in
            var quiet = Logger(label: "test.postgres")
            quiet.logLevel = .critical
            try await PostgresMetadataStore.with(url: cluster.url(), password: nil, logger: quiet) { store in
                let app = try await Self.app(store)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<200 { group.addTask { _ = try await store.accept(Self.crash(app, at: Int64(index))) } }
                    try await group.waitForAll()
                }
            }
            let counts = try cluster.psql("SELECT count(*), count(DISTINCT xmin::text) FROM crash").stdout
                .split(whereSeparator: { $0 == "|" || $0.isNewline }).compactMap { Int($0) }
            #expect(counts.count == 2 && counts[0] == 200 && counts[1] < 200, "crashes, transactions: \(counts)")
        }
    }

    /// On PostgreSQL a `finish` batch locks a group's row only at its end, when it moves the
    /// group counters: while the batch still records its crashes, another node's batch can update
    /// the same (hot) group. The batch is held mid-way by a lock on its second crash's job row;
    /// the group row must then be free (`FOR UPDATE NOWAIT` succeeds), and the counters right after.
    @Test func finishLocksTheGroupRowOnlyAtTheEnd() async throws {
        try await PostgresCluster.with { cluster in
            var quiet = Logger(label: "test.postgres")
            quiet.logLevel = .critical
            try await PostgresMetadataStore.with(url: cluster.url(), password: nil, logger: quiet) { store in
                let app = try await Self.app(store)
                _ = try await store.accept(Self.crash(app, at: 1_000))
                let hot = try #require(try await store.finish(seq: try await Self.leaseAll(store)[0], result: Self.done("hot"),
                                                              now: 2_000))
                _ = try await store.accept(Self.crash(app, at: 3_000))
                _ = try await store.accept(Self.crash(app, at: 4_000))
                let seqs = try await Self.leaseAll(store, now: 5_000)
                #expect(seqs.count == 2)

                let (locked, lockedNow) = AsyncStream.makeStream(of: Void.self)
                let (released, release) = AsyncStream.makeStream(of: Void.self)
                try await withThrowingTaskGroup(of: Void.self) { tasks in
                    // Holds the second crash's job row, which the batch deletes after recording it.
                    tasks.addTask {
                        try await store.transaction { db in
                            try await db.rows("SELECT 1 FROM crash_job WHERE crash_seq = \(seqs[1]) FOR UPDATE")
                            lockedNow.yield()
                            for await _ in released { break }
                        }
                    }
                    for await _ in locked { break }
                    tasks.addTask {
                        let groups = try await store.finish([(seqs[0], Self.done("hot")), (seqs[1], Self.done("hot"))], now: 6_000,
                                                            spike: CrashStore.SpikeRule())
                        #expect(groups == [hot, hot])
                    }
                    // The batch waits on the job row (a backend waiting for a lock), its first crash recorded.
                    var waiting = false
                    for _ in 0..<600 where !waiting {
                        waiting = try await store.rows("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'")[0]
                            .decode(Int.self) > 0
                        if !waiting { try await Task.sleep(for: .milliseconds(50)) }
                    }
                    #expect(waiting, "the finish batch never waited on the held job row")
                    let groupFree: Bool
                    do {
                        try await store.transaction { db in
                            try await db.rows("SELECT 1 FROM crash_group WHERE id = \(hot) FOR UPDATE NOWAIT")
                        }
                        groupFree = true
                    } catch {
                        groupFree = false
                    }
                    #expect(groupFree, "the hot group's row was locked while the batch was still recording its crashes")
                    release.yield()
                    try await tasks.waitForAll()
                }
                let group = try await store.group(appID: app, id: hot)
                #expect(group.count == 3 && group.versions == ["1.0"])
                #expect(try await store.pendingJobCount() == 0)
            }
        }
    }

    /// Nodes starting together on an empty database migrate it once: the advisory lock holds the
    /// others until the first is done, and they find every migration applied (without it their
    /// concurrent `CREATE TABLE`s collide and nodes fail to start).
    @Test func nodesStartingTogetherMigrateOnce() async throws {
        try await PostgresCluster.with { cluster in
            var quiet = Logger(label: "test.postgres")
            quiet.logLevel = .critical
            let (url, logger) = (cluster.url(), quiet)
            try await withThrowingTaskGroup(of: Void.self) { nodes in
                for index in 0..<6 {
                    nodes.addTask {
                        try await PostgresMetadataStore.with(url: url, password: nil, logger: logger) { store in
                            _ = try await store.createApp(name: "Node \(index)", id: "node\(index)")
                        }
                    }
                }
                try await nodes.waitForAll()
            }
            let counts = try cluster.psql("SELECT count(*), count(DISTINCT name) FROM crashsym_migration; SELECT count(*) FROM app")
                .stdout.split(whereSeparator: { $0 == "|" || $0.isNewline }).compactMap { Int($0) }
            #expect(counts == [PostgresSchema.migrations.count, PostgresSchema.migrations.count, 6], "\(counts)")
        }
    }

    /// A job queued through one PostgreSQL store wakes the idle workers of another (LISTEN/NOTIFY);
    /// an embedded store has no other node to hear from.
    @Test func jobNotificationsReachOtherNodes() async throws {
        try await Self.withStore(.sqlite) { store in #expect(store.jobNotifications == nil) }
        try await PostgresCluster.with { cluster in
            var quiet = Logger(label: "test.postgres")
            quiet.logLevel = .critical
            let (url, logger) = (cluster.url(), quiet)
            try await PostgresMetadataStore.with(url: url, password: nil, logger: logger) { listener in
                try await PostgresMetadataStore.with(url: url, password: nil, logger: logger) { other in
                    let app = try await Self.app(other)
                    let events = try #require(listener.jobNotifications).events
                    let heard = try await withThrowingTaskGroup(of: Bool.self) { group in
                        group.addTask {
                            for await _ in events { return true }
                            return false
                        }
                        // The listener's LISTEN starts with its connection: queue until it hears one.
                        group.addTask {
                            for index in 0..<50 {
                                _ = try await other.accept(Self.crash(app, at: Int64(index)))
                                try await Task.sleep(for: .milliseconds(200))
                            }
                            return false
                        }
                        let first = try await group.next() ?? false
                        group.cancelAll()
                        return first
                    }
                    #expect(heard)
                }
            }
        }
    }

    /// Crashes whose raw bytes are members of a pack (CrashPack.swift): each row names the pack,
    /// the offset and size, and the member's SHA-256; the pack stays referenced (sweeper,
    /// removal) while any member's row lives and is handed back for removal with the last; rows
    /// naming single objects (all those from before packs) read as before.
    @Test(arguments: Backend.allCases)
    func crashesInPacks(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let app = try await Self.app(store)
            func packed(_ raw: String, offset: Int64, at received: Int64, pack: String = "pack-a") -> CrashStore.NewCrash {
                var crash = Self.crash(app, raw: raw, at: received)
                crash.rawPack = pack
                crash.rawOffset = offset
                return crash
            }
            // Concurrent accepts, as the crash service sends a pack's rows.
            let receipts = try await withThrowingTaskGroup(of: (Int, CrashStore.Receipt).self) { group in
                for index in 0..<3 {
                    group.addTask { (index, try await store.accept(packed("m\(index)", offset: 32 + 10 * Int64(index), at: 1_000 + Int64(index)))) }
                }
                return try await group.reduce(into: [Int: CrashStore.Receipt]()) { $0[$1.0] = $1.1 }
            }
            let single = try await store.accept(Self.crash(app, raw: "single", at: 4_000))
            for index in 0..<3 {
                let raw = try await store.rawObject(appID: app, id: receipts[index]!.id)
                #expect(raw == CrashStore.RawLocation(sha256: "m\(index)", size: 10, pack: "pack-a", offset: 32 + 10 * Int64(index)))
                #expect(raw.object == "pack-a")
            }
            #expect(try await store.rawObject(appID: app, id: single.id) == CrashStore.RawLocation(sha256: "single", size: 10))
            let jobs = try await store.leaseJobs(limit: 10, now: 5_000, lease: 60_000)
            let inputs = try await store.processingInputs(seqs: jobs.map(\.seq))
            #expect(Set(inputs.values.map(\.raw)) == [
                CrashStore.RawLocation(sha256: "m0", size: 10, pack: "pack-a", offset: 32),
                CrashStore.RawLocation(sha256: "m1", size: 10, pack: "pack-a", offset: 42),
                CrashStore.RawLocation(sha256: "m2", size: 10, pack: "pack-a", offset: 52),
                CrashStore.RawLocation(sha256: "single", size: 10)])
            #expect(try await store.referencedObjects().isSuperset(of: ["pack-a", "single"]))
            let removedNames = Mutex<[String]>([])
            @Sendable func remove(_ name: String) -> Bool {
                removedNames.withLock { $0.append(name) }
                return true
            }
            // Live members keep their pack.
            #expect(try await store.removeUnusedObjects(["pack-a"], using: remove).isEmpty)
            #expect(try await store.deleteCrash(appID: app, id: receipts[0]!.id) == nil)
            #expect(try await store.deleteCrash(appID: app, id: receipts[1]!.id) == nil)
            #expect(try await store.removeUnusedObjects(["pack-a"], using: remove).isEmpty)
            #expect(try await store.referencedObjects().contains("pack-a"))
            // The last member frees it.
            #expect(try await store.deleteCrash(appID: app, id: receipts[2]!.id) == "pack-a")
            #expect(!(try await store.referencedObjects().contains("pack-a")))
            #expect(try await store.removeUnusedObjects(["pack-a"], using: remove) == ["pack-a"])
            #expect(removedNames.withLock { $0 } == ["pack-a"])
            // Retention hands back a pack only with its last member.
            _ = try await store.accept(packed("e0", offset: 32, at: 6_000, pack: "pack-b"))
            _ = try await store.accept(packed("e1", offset: 42, at: 9_000, pack: "pack-b"))
            let first = try await store.expireCrashes(receivedBefore: 7_000, limit: 10)
            #expect(first.deleted == 2 && first.objects == ["single"])
            let last = try await store.expireCrashes(receivedBefore: 10_000, limit: 10)
            #expect(last.deleted == 1 && last.objects == ["pack-b"])
        }
    }

    /// Pack compaction (CrashStore+Compaction.swift): a pack is due once a crash of it is deleted
    /// by request (whatever the share) or once retention left at least the given share of its
    /// bytes dead; a leased pack goes to one compactor at a time (two at once split the packs)
    /// until its lease expires; repointing moves the rows that still name the pack in one
    /// transaction, leaves a crash deleted meanwhile out (its bytes noted in the new pack), and
    /// frees the old pack for removal.
    @Test(arguments: Backend.allCases)
    func packCompaction(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let app = try await Self.app(store)
            func packed(_ raw: String, _ index: Int, pack: String, at received: Int64 = 100_000) async throws -> CrashStore.Receipt {
                var crash = Self.crash(app, raw: raw, at: received)
                crash.rawPack = pack
                crash.rawOffset = 32 + 10 * Int64(index)
                return try await store.accept(crash)
            }
            func member(_ old: CrashStore.PackMember, at offset: Int64) -> CrashStore.PackMember {
                CrashStore.PackMember(seq: old.seq, sha256: old.sha256, size: old.size, offset: offset)
            }
            let lease: Int64 = 60_000
            var a: [CrashStore.Receipt] = []
            for index in 0..<3 { a.append(try await packed("a\(index)", index, pack: "pack-a")) }
            // Nothing deleted: nothing to compact.
            #expect(try await store.leasePackCompactions(deadFraction: 0.5, limit: 10, now: 10_000, lease: lease).isEmpty)

            // A crash deleted by request: its pack is due at once, with the live members by offset.
            #expect(try await store.deleteCrash(appID: app, id: a[1].id) == nil)
            let leased = try await store.leasePackCompactions(deadFraction: 0.5, limit: 10, now: 10_000, lease: lease)
            try #require(leased.count == 1)
            #expect(leased[0].pack == "pack-a" && leased[0].erase)
            #expect(leased[0].members.map(\.sha256) == ["a0", "a2"] && leased[0].members.map(\.offset) == [32, 52])
            #expect(leased[0].members.allSatisfy { $0.size == 10 })
            // Held by its lease, then free again once it expires.
            #expect(try await store.leasePackCompactions(deadFraction: 0.5, limit: 10, now: 10_000 + lease - 1, lease: lease).isEmpty)
            let again = try await store.leasePackCompactions(deadFraction: 0.5, limit: 10, now: 10_000 + lease, lease: lease)
            #expect(again.map(\.pack) == ["pack-a"])

            // Repointed in one transaction: the rows name the new pack at its offsets; the old
            // pack is referenced by nothing and due no more.
            let members = leased[0].members
            #expect(try await store.repointPack("pack-a", to: "pack-c", members: [member(members[0], at: 32), member(members[1], at: 42)]) == 2)
            #expect(try await store.rawObject(appID: app, id: a[0].id) == CrashStore.RawLocation(sha256: "a0", size: 10, pack: "pack-c", offset: 32))
            #expect(try await store.rawObject(appID: app, id: a[2].id) == CrashStore.RawLocation(sha256: "a2", size: 10, pack: "pack-c", offset: 42))
            let referenced = try await store.referencedObjects()
            #expect(!referenced.contains("pack-a") && referenced.contains("pack-c"))
            #expect(try await store.removeUnusedObjects(["pack-a", "pack-c"]) { _ in true } == ["pack-a"])
            #expect(try await store.leasePackCompactions(deadFraction: 0.5, limit: 10, now: 1_000_000, lease: lease).isEmpty)
            // A second compactor that leased the same pack before the first repointed moves nothing.
            #expect(try await store.repointPack("pack-a", to: "pack-z", members: [member(members[0], at: 32)]) == 0)
            #expect(try await store.rawObject(appID: app, id: a[0].id).pack == "pack-c")

            // Retention: a pack is due once at least the given share of its bytes is dead.
            _ = try await packed("b0", 0, pack: "pack-b", at: 5_000)
            _ = try await packed("b1", 1, pack: "pack-b", at: 6_000)
            _ = try await packed("b2", 2, pack: "pack-b", at: 9_000)
            #expect(try await store.expireCrashes(receivedBefore: 5_500, limit: 10).objects.isEmpty)
            // 10 of 30 bytes dead: not at a half.
            #expect(try await store.leasePackCompactions(deadFraction: 0.5, limit: 10, now: 2_000_000, lease: lease).isEmpty)
            #expect(try await store.leasePackCompactions(deadFraction: 0.3, limit: 10, now: 2_000_000, lease: lease).map(\.pack) == ["pack-b"])
            #expect(try await store.expireCrashes(receivedBefore: 7_000, limit: 10).objects.isEmpty)
            let expired = try await store.leasePackCompactions(deadFraction: 0.5, limit: 10, now: 3_000_000, lease: lease)
            #expect(expired.map(\.pack) == ["pack-b"] && !expired[0].erase && expired[0].members.map(\.sha256) == ["b2"])

            // A crash deleted between the lease and the repointing stays out, and its bytes in the
            // new pack are due for erasure there.
            var e: [CrashStore.Receipt] = []
            for index in 0..<3 { e.append(try await packed("e\(index)", index, pack: "pack-e")) }
            _ = try await store.deleteCrash(appID: app, id: e[0].id)
            let due = try await store.leasePackCompactions(deadFraction: 0.5, limit: 10, now: 4_000_000, lease: lease)
            let dueE = try #require(due.first { $0.pack == "pack-e" })
            #expect(dueE.members.map(\.sha256) == ["e1", "e2"])
            _ = try await store.deleteCrash(appID: app, id: e[1].id)
            #expect(try await store.repointPack("pack-e", to: "pack-f", members: [member(dueE.members[0], at: 32),
                                                                                 member(dueE.members[1], at: 42)]) == 1)
            #expect(try await store.rawObject(appID: app, id: e[2].id).pack == "pack-f")
            let next = try await store.leasePackCompactions(deadFraction: 0.5, limit: 10, now: 5_000_000, lease: lease)
            let dueF = try #require(next.first { $0.pack == "pack-f" })
            #expect(dueF.erase && dueF.members.map(\.sha256) == ["e2"] && dueF.members[0].offset == 42)
            // A pack whose last crash goes is handed back and due no more.
            #expect(try await store.deleteCrash(appID: app, id: e[2].id) == "pack-f")
            #expect(try await store.leasePackCompactions(deadFraction: 0.5, limit: 10, now: 6_000_000, lease: lease)
                .allSatisfy { $0.pack != "pack-f" })

            // Two compactors at once (two nodes): each pack goes to one of them.
            for pack in ["pack-x", "pack-y", "pack-w"] {
                var x: [CrashStore.Receipt] = []
                for index in 0..<2 { x.append(try await packed(pack + "\(index)", index, pack: pack)) }
                _ = try await store.deleteCrash(appID: app, id: x[0].id)
            }
            let split = try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        try await store.leasePackCompactions(deadFraction: 0.5, limit: 10, now: 7_000_000, lease: lease).map(\.pack)
                    }
                }
                return try await group.reduce(into: [String]()) { $0 += $1 }
            }
            #expect(split.sorted() == ["pack-b", "pack-w", "pack-x", "pack-y"])
        }
    }
}
