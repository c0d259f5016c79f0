import Foundation
import Testing
import TestSupport

/// "Fetch first, then look up": `symbolicate --server` fetches the tables of a report's modules
/// at once, one request per build-id, from a server that takes its time over each.
@Suite struct PrefetchTests {
    /// Fixtures with distinct build-ids, each with a `main`.
    static let programs = ["gcc-c-O2-dwarf5", "clang-c-O2-dwarf5", "clang-cpp-O2-dwarf5", "gcc-cpp-O2-dwarf5", "gcc-c-O0-dwarf5"]

    /// The file virtual address 4 bytes into `main` of `path`.
    static func mainAddress(_ path: String) throws -> String {
        let symbols = try Tool.output("/usr/bin/nm", [path])
        let line = try #require(symbols.split(separator: "\n").first { $0.hasSuffix(" T main") })
        let value = try #require(UInt64(line.split(separator: " ")[0], radix: 16))
        return "0x" + String(value + 4, radix: 16)
    }

    @Test func theTablesOfAReportAreFetchedAtOnceEachOnce() throws {
        let directory = try CLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tables = directory + "/tables"
        var modules: [String] = [], frames: [String] = [], ids: [String] = []
        for (index, program) in Self.programs.enumerated() {
            let dumped = try CLI.dumpTable(CLI.fixture(program), into: tables)
            let id = try #require(dumped.module["build_id"] as? String)
            ids.append(id)
            modules.append(#"{"name":"\#(program)","path":"/nonexistent/\#(program)","build_id":"\#(id)"}"#)
            frames.append(#"{"index":\#(index),"module_index":\#(index),"module_offset":"\#(try Self.mainAddress(CLI.fixture(program)))","address_kind":"exact"}"#)
        }
        #expect(Set(ids).count == Self.programs.count, "the fixtures have distinct build-ids")
        let report = directory + "/report.json"
        try #"{"modules":[\#(modules.joined(separator: ","))],"stacks":[{"name":"main","crashed":true,"frames":[\#(frames.joined(separator: ","))]}]}"#
            .write(toFile: report, atomically: true, encoding: .utf8)

        // Each table takes the server a second: fetched one after another, no two overlap.
        let server = try FakeSymbolServer(script: ["tables": tables, "table_delay": 1.0])
        let environment = ["CRASHSYM_APP_KEY": "csk_test", "CRASHSYM_CACHE_DIR": directory + "/cache"]
        let arguments = ["symbolicate", report, "--format", "json", "--server", server.url, "--app-id", "app"]
        let fetched = try CLI.run(arguments, environment: environment)
        #expect(fetched.status == 0, "\(fetched.stderr)")
        #expect(!fetched.stdout.contains("\"no-symbols\""), "\(fetched.stdout)")
        let local = try CLI.run(["symbolicate", report, "--format", "json"] + Self.programs.flatMap { ["--symbols", CLI.fixture($0)] })
        #expect(fetched.stdout.components(separatedBy: "\"symbolized\"").dropFirst()
                == local.stdout.components(separatedBy: "\"symbolized\"").dropFirst(), "the fetched tables answer as the binaries do")

        let requests = server.requests().filter { $0.path.contains("/symbols/") }
        #expect(requests.map { String($0.path.split(separator: "/").last!) }.sorted() == ids.sorted(), "one request per build-id")
        let overlap = requests.compactMap(\.concurrent).max() ?? 0
        #expect(overlap > 1, "the fetches overlap (at most \(overlap) in flight)")
        #expect(overlap <= 8, "bounded")

        // Kept: the next run asks the server nothing.
        let again = try CLI.run(arguments, environment: environment)
        #expect(again.stdout == fetched.stdout)
        #expect(server.requests().filter { $0.path.contains("/symbols/") }.count == requests.count)
    }
}
