import Testing
@testable import SymServer

/// `ReportTablesCache`: what the symbolicate route remembers of the store, and when it forgets.
struct ReportTablesCacheTests {
    let start = ContinuousClock.now

    @Test func remembersFoundAndAbsentBuildIDsForItsLifetime() {
        let cache = ReportTablesCache(lifetime: .seconds(1))
        #expect(cache.tables(appID: "a", buildIDs: ["b1"], now: start) == nil)
        cache.remember(appID: "a", buildIDs: ["b1", "b2"], found: ReportTables(byBuildID: ["b1": "s1"]),
                       generation: cache.generation, now: start)
        let known = cache.tables(appID: "a", buildIDs: ["b1", "b2"], now: start + .milliseconds(999))
        #expect(known?.byBuildID == ["b1": "s1"])  // b2 remembered as absent
        #expect(cache.tables(appID: "a", buildIDs: ["b1", "b3"], now: start) == nil)  // b3 never read
        #expect(cache.tables(appID: "other", buildIDs: ["b1"], now: start) == nil)
        #expect(cache.tables(appID: "a", buildIDs: ["b1"], now: start + .seconds(1)) == nil)  // expired
    }

    @Test func forgetDropsTheAppAndAReadBegunBeforeIsNotRemembered() {
        let cache = ReportTablesCache()
        cache.remember(appID: "a", buildIDs: ["b1"], found: ReportTables(), generation: cache.generation, now: start)
        cache.remember(appID: "c", buildIDs: ["b1"], found: ReportTables(), generation: cache.generation, now: start)
        let before = cache.generation
        cache.forget(appID: "a")
        #expect(cache.tables(appID: "a", buildIDs: ["b1"], now: start) == nil)
        #expect(cache.tables(appID: "c", buildIDs: ["b1"], now: start) != nil)
        // A read that started before the upload committed answers what the store had then.
        cache.remember(appID: "a", buildIDs: ["b1"], found: ReportTables(), generation: before, now: start)
        #expect(cache.tables(appID: "a", buildIDs: ["b1"], now: start) == nil)
    }

    @Test func boundedByCapacity() {
        let cache = ReportTablesCache()
        let batch = Set((0..<1000).map { "id\($0)" })
        for app in 0..<(ReportTablesCache.capacity / 1000 + 2) {
            cache.remember(appID: "app\(app)", buildIDs: batch, found: ReportTables(), generation: cache.generation, now: start)
            #expect(cache.count <= ReportTablesCache.capacity)
        }
        #expect(cache.tables(appID: "app0", buildIDs: ["id1"], now: start) == nil)  // dropped on the way
    }
}
