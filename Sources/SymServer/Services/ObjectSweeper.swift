import Logging
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

/// Removes objects that no row names and that are older than the grace period: what a crash
/// between an object's put and its row's commit leaves (DESIGN.md "Durability rule"), on either
/// object store. Objects are listed first and the referenced names read after, to pick the
/// candidates; each is then checked again and removed under the metadata store's lock, only if
/// still not written since the cutoff (`ObjectStore.removeUnused`): the grace period covers
/// uploads between their put (which refreshes an existing object's time) and their commit.
struct ObjectSweeper: Service {
    let objects: any ObjectStore
    let crashes: any MetadataStore
    /// Unreferenced objects younger than this are kept.
    let graceSeconds: Int64
    let logger: Logger

    /// Time between passes: a quarter of the grace period, between 1 s and an hour.
    var interval: Duration { .seconds(min(3600, max(1, graceSeconds / 4))) }

    func run() async throws {
        await runPeriodically(every: interval, logger: logger, failure: "object sweep failed") {
            let removed = try await sweep(now: Int64(time(nil)))
            if removed > 0 { logger.info("object sweeper: unreferenced objects removed", metadata: ["crashsym.objects": "\(removed)"]) }
        }
    }

    /// One pass at time `now` (seconds since 1970); returns how many objects were removed.
    func sweep(now: Int64) async throws -> Int {
        var candidates: [String] = []
        try await objects.forEachPage { page in
            candidates += page.filter { $0.modified <= now - graceSeconds }.map(\.sha256)
        }
        guard !candidates.isEmpty else { return 0 }
        let referenced = try await crashes.referencedObjects()
        return try await objects.removeUnused(candidates.filter { !referenced.contains($0) }, in: crashes,
                                              unlessWrittenAfter: now - graceSeconds)
    }
}
