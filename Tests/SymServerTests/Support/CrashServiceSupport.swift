import Foundation
import Testing

/// Fixtures and helpers of the crash-service tests: the report fixtures, the tables of the
/// programs that produced them (and of the system libraries whose debug files this machine has),
/// uploaded as a user would.
enum CrashFixtures {
    static let reports = Binary.root.appendingPathComponent("Fixtures/reports").path
    static let programs = reports + "/src"

    /// Every report fixture (not the oracles), by file name.
    static var reportFiles: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: reports)) ?? [])
            .filter { ($0.hasSuffix(".txt") || $0.hasSuffix(".json")) && !$0.contains(".symbolized.") }
            .sorted()
    }

    /// `crashsym dump` of `path` into `directory`, named as the table names itself (so that the
    /// server's match by name and the CLI's agree).
    static func dump(_ path: String, into directory: String) throws -> ModuleFiles {
        let result = try Binary.crashsym(["dump", path, "-o", directory, "--format", "json"])
        guard result.status == 0, let line = result.stdout.split(separator: "\n").first,
              let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let id = object["build_id"] as? String, let output = object["output"] as? String,
              let name = object["name"] as? String, let arch = object["arch"] as? String,
              let dwarf = object["dwarf"] as? Bool else {
            throw TestFailure("dump of \(path) failed: \(result.stderr)")
        }
        return ModuleFiles(buildID: id, name: name, arch: arch, hasDWARF: dwarf, symbols: output)
    }

    /// The tables of the fixture programs, plus those of `/usr/lib/debug` files for the
    /// build-ids the reports name (libc's, when libc6-dbg is installed: the CLI reads them there).
    static func tables(into directory: String, programs names: [String]? = nil) throws -> [ModuleFiles] {
        let elves = ["crash-swift", "libfault-asan.so", "libfault.so", "prog", "prog-asan", "prog-nopie",
                     "sanitizers-asan", "sanitizers-tsan", "sanitizers-ubsan"]
        var modules = try (names ?? elves).map { try dump(programs + "/" + $0, into: directory) }
        guard names == nil else { return modules }
        var ids = Set<String>()
        for file in reportFiles {
            let text = (try? String(contentsOfFile: reports + "/" + file, encoding: .utf8)) ?? ""
            var rest = Substring(text)
            while let range = rest.range(of: "BuildId: ") ?? rest.range(of: "\"buildId\": \"") ?? rest.range(of: "\"build_id\": \"") {
                let id = rest[range.upperBound...].prefix { $0.isHexDigit }
                if id.count >= 16 { ids.insert(String(id).lowercased()) }
                rest = rest[range.upperBound...]
            }
        }
        for id in ids.sorted() where !modules.contains(where: { $0.buildID == id }) {
            let path = "/usr/lib/debug/.build-id/\(id.prefix(2))/\(id.dropFirst(2)).debug"
            if FileManager.default.fileExists(atPath: path) { modules.append(try dump(path, into: directory)) }
        }
        return modules
    }

    /// Uploads `modules` (tables only) as version `version`; fails the test unless 201.
    static func upload(_ modules: [ModuleFiles], to server: TestServer, version: String) throws {
        let path = server.scratch + "/bundle-\(UUID().uuidString).zip"
        try Bundles.bundle(to: path, appID: server.appID, version: version, modules: modules.map {
            var module = $0
            module.debug = nil
            return module
        })
        let answer = try server.upload(path)
        guard answer.status == 201 else { throw TestFailure("upload: HTTP \(answer.status) \(answer.text)") }
    }

    /// Polls `condition` every 100 ms until it holds or `seconds` pass; returns whether it held.
    static func eventually(within seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            usleep(100_000)
        }
        return try condition()
    }
}

extension TestServer {
    /// POST a report file to `route` (`crashes` or `symbolicate`) with a query string.
    func post(_ route: String, file: String, query: String = "", headers: [String] = [], key: String?? = .none) throws -> HTTPAnswer {
        var extra = ["-H", "Content-Type: text/plain", "--data-binary", "@" + file]
        for header in headers { extra += ["-H", header] }
        return try request("POST", "/api/v1/apps/\(appID)/\(route)\(query.isEmpty ? "" : "?" + query)", key: key, extra: extra)
    }

    /// GET an app route.
    func get(_ route: String) throws -> HTTPAnswer {
        try request("GET", "/api/v1/apps/\(appID)/\(route)")
    }

    /// The crash `id` as JSON.
    func crash(_ id: String) throws -> [String: Any] {
        let answer = try get("crashes/\(id)")
        guard answer.status == 200 else { throw TestFailure("crash \(id): HTTP \(answer.status) \(answer.text)") }
        return answer.json
    }

    /// The resident set of the server process at its peak (VmHWM), in KiB.
    func peakResidentKiB() throws -> Int {
        guard let process else { throw TestFailure("server not running") }
        let status = try String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        throw TestFailure("no VmHWM")
    }
}
