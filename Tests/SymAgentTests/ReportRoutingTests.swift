import Foundation
@testable import SymAgent
import SymReport
import Testing

/// How the agent decides a report's app and version from its program (`apps`, build-ids), and
/// when it tells the server its counts: in process; the end-to-end tests are
/// CrashsymTests/AgentAppsTests.swift.
@Suite struct ReportRoutingTests {
    static func configFile(_ json: String) throws -> String {
        let path = NSTemporaryDirectory() + "agent-apps-\(UUID().uuidString).json"
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func appsEntriesAreReadWithTheirKeysAndEachAppGetsItsKey() throws {
        let path = try Self.configFile("""
            {"server": "http://s:1", "app-id": "main", "app-key": "main-key",
             "spools": [{"path": "/s1", "app-id": "spooled", "app-key": "spool-key"}, {"path": "/s2"}],
             "apps": [{"executable": "/usr/bin/foo", "app-id": "foo", "app-key": "foo-key", "version": "2.1", "environment": "batch"},
                      {"executable": "bar", "app-id": "bar"}]}
            """)
        defer { unlink(path) }
        let configuration = try AgentConfiguration.resolve(flags: .init(), environment: [:], configFile: path)
        #expect(configuration.apps == [
            .init(executable: "/usr/bin/foo", appID: "foo", appKey: "foo-key", version: "2.1", environment: "batch"),
            .init(executable: "bar", appID: "bar"),
        ])
        #expect(configuration.appKey(for: "foo") == "foo-key")
        #expect(configuration.appKey(for: "spooled") == "spool-key")
        #expect(configuration.appKey(for: "bar") == "main-key")
        #expect(configuration.appKey(for: "main") == "main-key")
        #expect(configuration.app(forExecutable: "/usr/bin/foo")?.appID == "foo")
        #expect(configuration.app(forExecutable: "./foo")?.appID == "foo")  // glibc prints the path as run
        #expect(configuration.app(forExecutable: "/opt/foo") == nil)  // another program of that name
        #expect(configuration.app(forExecutable: "/opt/x/bar")?.appID == "bar")
        #expect(configuration.app(forExecutable: "/opt/x/barn") == nil)
    }

    @Test(arguments: [
        (#"{"apps": {"executable": "x"}}"#, "\"apps\" must be a list"),
        (#"{"apps": [{"app-id": "a"}]}"#, "apps[0]: \"executable\" is missing"),
        (#"{"apps": [{"executable": "x"}]}"#, "apps[0]: \"app-id\" is missing"),
        (#"{"apps": [{"executable": "/usr/bin/", "app-id": "a"}]}"#, "apps[0]: \"executable\" must be"),
        (#"{"apps": [{"executable": "x", "app-id": "a", "colour": "red"}]}"#, "apps[0]: unknown setting \"colour\""),
        (#"{"apps": [{"executable": "x", "app-id": "bad id"}]}"#, "app id 'bad id' must be"),
        (#"{"apps": [{"executable": "x", "app-id": "a", "environment": ""}]}"#, "environment '' must be"),
        (#"{"apps": [{"executable": 3, "app-id": "a"}]}"#, "apps[0]: \"executable\" must be a string"),
    ])
    func malformedAppsEntriesAreNamed(json: String, message: String) throws {
        var text = json
        text.removeLast()
        let path = try Self.configFile(text + #", "server": "http://s:1", "app-id": "main", "app-key": "k", "spools": [{"path": "/s"}]}"#)
        defer { unlink(path) }
        #expect {
            _ = try AgentConfiguration.resolve(flags: .init(), environment: [:], configFile: path)
        } throws: { error in
            "\(error)".contains(message)
        }
    }

    /// The crashed program among a report's modules, for each kind of report the agent takes.
    @Test(arguments: [
        // glibc backtrace: libraries first, the program by the path it was run as.
        ("/lib/x86_64-linux-gnu/libc.so.6(+0x3bfd0)[0x7f3c]\n./prog(main+0x2a)[0x55d0]\n", "./prog"),
        // crashsym JSON of an ASan report: the faulting library comes first.
        (#"{"modules": [{"path": "/tmp/libfault-asan.so"}, {"path": "/tmp/prog-asan"}, {"path": "/lib/libc.so.6"}], "#
            + #""stacks": [{"frames": [{"module_index": 0, "address": "0x10"}]}]}"#, "/tmp/prog-asan"),
        // A core's report names its process (comm, 15 bytes): that module wins over the order.
        (#"{"metadata": {"process": "long-program-na"}, "modules": [{"path": "/usr/bin/helper"}, {"path": "linux-vdso.so.1"}, "#
            + #"{"path": "/usr/bin/long-program-name"}], "stacks": [{"frames": [{"module_index": 0, "address": "0x10"}]}]}"#,
         "/usr/bin/long-program-name"),
        // Only libraries and mappings: no program.
        (#"{"modules": [{"path": "[vdso]"}, {"path": "/lib/libc.so.6"}], "stacks": [{"frames": [{"module_index": 0, "address": "0x10"}]}]}"#,
         ""),
    ])
    func theExecutableModuleIsTheProgram(report: String, executable: String) throws {
        let parsed = try CrashReport.parse(report)
        #expect(parsed.executableModule?.path ?? "" == executable)
    }

    /// The same rule over the committed report fixtures, each produced by a real crashing program.
    @Test(arguments: [
        ("swift-backtrace.json", "/tmp/crashsym-reports/crash-swift"),
        ("crashsym-report.json", "/tmp/crashsym-reports/prog-asan"),
        ("glibc-backtrace.txt", "/tmp/crashsym-reports/prog"),
        ("asan-use-after-free.txt", "/tmp/crashsym-reports/prog-asan"),
    ])
    func theExecutableOfRealReports(fixture: String, executable: String) throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/reports/" + fixture).path
        let report = try CrashReport.parse(try String(contentsOfFile: path, encoding: .utf8))
        #expect(report.executableModule?.path == executable)
    }

    @Test func theStatedVersionIsTheReports() throws {
        let stated = try CrashReport.parse(#"{"metadata": {"app_version": "4.2"}, "stacks": [{"frames": [{"address": "0x10"}]}]}"#)
        #expect(stated.statedVersion == "4.2")
        let none = try CrashReport.parse(#"{"stacks": [{"frames": [{"address": "0x10"}]}]}"#)
        #expect(none.statedVersion == nil)
    }

    /// The counts header: on the first submission, whenever the totals change, when the queue
    /// has drained, and otherwise once an interval; never on every crash.
    @Test func theCountsHeaderIsSentWhenItHasNews() {
        let counts = DropCounts(agentID: "0123456789abcdef", dropped: 0, suppressed: 0, interval: .seconds(60))
        let start = ContinuousClock.now
        counts.update(queue: 5)
        let first = counts.pending(now: start)
        #expect(first?.header == "agent=0123456789abcdef; dropped=0; suppressed=0; queue=5")
        counts.acknowledge(first!, sent: start)
        counts.update(queue: 4)
        #expect(counts.pending(now: start + .seconds(1)) == nil)
        counts.update(dropped: 2, suppressed: 0)
        let dropped = counts.pending(now: start + .seconds(2))
        #expect(dropped?.dropped == 2)
        counts.acknowledge(dropped!, sent: start + .seconds(2))
        #expect(counts.pending(now: start + .seconds(3)) == nil)
        counts.update(queue: 0)
        let drained = counts.pending(now: start + .seconds(4))
        #expect(drained?.queue == 0)
        counts.acknowledge(drained!, sent: start + .seconds(4))
        #expect(counts.pending(now: start + .seconds(5)) == nil)
        #expect(counts.pending(now: start + .seconds(64))?.queue == 0)
    }

    @Test func buildVersionsAreRememberedForTheirLifetime() {
        let versions = BuildVersions(knownFor: .seconds(100), unknownFor: .seconds(10))
        let now = ContinuousClock.now
        #expect(versions.answer(appID: "a", buildID: "ab", now: now) == nil)
        versions.remember(.version("1.0"), appID: "a", buildID: "ab", now: now)
        versions.remember(.unknown, appID: "a", buildID: "cd", now: now)
        #expect(versions.answer(appID: "a", buildID: "ab", now: now + .seconds(50)) == .version("1.0"))
        #expect(versions.answer(appID: "b", buildID: "ab", now: now) == nil)  // per app: never another app's answer
        #expect(versions.answer(appID: "a", buildID: "cd", now: now + .seconds(5)) == .unknown)
        #expect(versions.answer(appID: "a", buildID: "cd", now: now + .seconds(11)) == nil)
        #expect(versions.answer(appID: "a", buildID: "ab", now: now + .seconds(101)) == nil)
    }
}
