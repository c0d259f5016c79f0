import Foundation
import Testing

/// The CPU-time watchdog of crash processing (`--max-crash-cpu-seconds`): no parser a crash job
/// runs should take long, but a thread cannot be stopped, so a crash over its CPU budget is
/// stored as failed with the reason, and the crashes leased with it are handed to another worker.
struct CrashWatchdogTests {
    @Test("a crash over --max-crash-cpu-seconds is failed with the reason; the crash beside it is processed")
    func aCrashOverItsBudgetFailsAndHoldsUpNothing() throws {
        // A 90,000-frame report takes over a second of CPU here (debug build); a small one a few
        // milliseconds: 0.4 s lies well between.
        let server = try TestServer(arguments: ["--max-crash-cpu-seconds", "0.4", "--crash-workers", "2"])
        let deep = try HostileReportTests.write(server, "deep.txt", HostileReportTests.frames(90_000))
        let slow = try #require(try server.post("crashes", file: deep).json["id"] as? String)
        let small = try #require(try server.post("crashes", file: CrashServiceTests.asan).json["id"] as? String)
        let failed = try CrashFixtures.eventually(within: 60) { try server.crash(slow)["state"] as? String == "failed" }
        #expect(failed, "the crash over its budget was not failed")
        let failure = try server.crash(slow)["failure"] as? String ?? ""
        #expect(failure.contains("--max-crash-cpu-seconds"), "\(failure)")
        #expect(try CrashFixtures.eventually(within: 60) { try server.crash(small)["state"] as? String == "done" })
        // The thread that was given up finishes on its own and commits nothing: the crash stays failed.
        Thread.sleep(forTimeInterval: 3)
        #expect(try server.crash(slow)["state"] as? String == "failed")
        #expect(try server.request("GET", "/healthz").status == 200)
        // The watchdog says it runs (Linux gives threads a CPU clock): 1 in /metrics, and no
        // warning that it is off.
        let metrics = try server.request("GET", "/metrics", key: .some(nil)).text
        #expect(metrics.split(separator: "\n").contains { $0.hasPrefix("crashsym_crash_cpu_watchdog 1") }, "\(metrics)")
    }

    @Test("--max-crash-cpu-seconds below 0.01 or not a number is a clear configuration error")
    func budgetValidation() throws {
        for bad in ["0", "-1", "soon", "nan"] {
            let refused = try Binary.crashsym(["serve", "--data-dir", "/nonexistent-\(UUID().uuidString)", "--max-crash-cpu-seconds", bad])
            #expect(refused.status != 0 && refused.stderr.contains("max-crash-cpu-seconds"), "\(bad): \(refused.stderr)")
        }
    }
}
