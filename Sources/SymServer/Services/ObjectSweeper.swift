import Logging
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

/// Removes objects that no row names and that are older than the grace period: what a crash
/// between an object's put and its row's commit leaves (DESIGN.md "Durability rule"), on either
/// object store. Objects are listed first and the referenced names read after, so a row
/// committed during the pass keeps its object; the grace period covers uploads still between
/// the two steps (a put refreshes an existing object's time).
struct ObjectSweeper: Service {
    let objects: any ObjectStore
    let crashes: any MetadataStore
    /// Unreferenced objects younger than this are kept.
    let graceSeconds: Int64
    let logger: Logger

    /// Time between passes: a quarter of the grace period, between 1 s and an hour.
    var interval: Duration { .seconds(min(3600, max(1, graceSeconds / 4))) }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if Task.isCancelled { break }
                do {
                    let removed = try await sweep(now: Int64(time(nil)))
                    if removed > 0 { logger.info("object sweeper: unreferenced objects removed", metadata: ["crashsym.objects": "\(removed)"]) }
                } catch is CancellationError {
                    break
                } catch {
                    logger.warning("object sweep failed; the next pass retries", metadata: ["error": "\(error)"])
                }
            }
        }
    }

    /// One pass at time `now` (seconds since 1970); returns how many objects were removed.
    func sweep(now: Int64) async throws -> Int {
        var candidates: [String] = []
        var token: String?
        repeat {
            let page = try await objects.list(after: token)
            candidates += page.objects.filter { $0.modified <= now - graceSeconds }.map(\.sha256)
            token = page.next
        } while token != nil
        guard !candidates.isEmpty else { return 0 }
        let referenced = try await crashes.referencedObjects()
        var removed = 0
        for sha256 in candidates where !referenced.contains(sha256) {
            try await objects.remove(sha256: sha256)
            removed += 1
        }
        return removed
    }
}
