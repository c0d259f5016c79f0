import Foundation
import Testing

/// The web console in a real browser: headless Chromium driven by Selenium
/// (Tests/Console/browser.py; apt chromium chromium-driver and PyPI selenium, from scripts/deps)
/// signs in, opens an app's groups, a group, a crash, resolves the group, the symbols page, the
/// webhooks page (adding a webhook through its form), views two pages as a phone
/// in the dark theme and signs out, writing a
/// screenshot of each page into `.build/console-screenshots` (or `CRASHSYM_CONSOLE_SCREENSHOTS`:
/// scripts/console-screenshots points it at docs/screenshots).
struct ConsoleBrowserTests {
    static let script = Binary.root.appendingPathComponent("Tests/Console/browser.py").path

    @Test("sign in, groups, a group, a crash, resolve, sign out in headless Chromium")
    func browser() throws {
        let server = try TestServer()
        let tables = try CrashFixtures.tables(into: server.scratch + "/tables",
                                              programs: ["libfault-asan.so", "prog-asan", "sanitizers-asan", "sanitizers-ubsan"])
        try CrashFixtures.upload(tables, to: server, version: "1.4.2")
        let reports = ["asan-use-after-free.txt", "asan-use-after-free.txt", "asan-use-after-free.txt", "ubsan-overflow.txt",
                       "lsan-leak.txt", "tsan-data-race.txt", "glibc-backtrace.txt", "tombstone-arm64.txt"]
        // A webhook with deliveries for the webhooks page (the browser adds a second one).
        let receiver = try WebhookReceiver(directory: server.scratch)
        _ = try server.addWebhook(receiver.url("/ok"), ["--events", "new-group"])
        var group = ""
        for (index, file) in reports.enumerated() {
            let crash = try server.postProcessed(CrashFixtures.reports + "/" + file,
                                                 query: "version=\(index < 5 ? "1.4.2" : "1.4.1")&host=web-\(index % 3)")
            if index == 0 { group = crash.group }
        }
        let password = try server.createUser("alice", admin: true)
        let output = ProcessInfo.processInfo.environment["CRASHSYM_CONSOLE_SCREENSHOTS"]
            ?? Binary.root.appendingPathComponent(".build/console-screenshots").path
        let result = try Binary.run("/usr/bin/env", ["python3", Self.script, server.base, "alice", password, server.appID, output])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        for page in ["signin", "apps", "groups", "group", "crash", "symbols", "webhooks", "phone-dark-groups", "phone-dark-crash"] {
            let png = FileManager.default.contents(atPath: output + "/console-\(page).png") ?? Data()
            #expect(png.starts(with: [0x89, 0x50, 0x4e, 0x47]), "console-\(page).png")
            #expect(png.count > 10_000, "console-\(page).png is \(png.count) bytes")
        }
        #expect(try server.get("webhooks").json["webhooks"].map { ($0 as? [[String: Any]])?.compactMap { $0["url"] as? String } }
            == [receiver.url("/ok"), "http://127.0.0.1:9/team-chat"])
        // The browser's click resolved the group that has most crashes (the ASan report, 3 times).
        #expect(try server.get("groups/\(group)").json["state"] as? String == "resolved")
    }
}
