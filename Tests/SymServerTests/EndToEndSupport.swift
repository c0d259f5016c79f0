import Foundation
import Testing

/// What the end-to-end tests need around `TestServer`: the real `crashsym upload` as a user runs
/// it (own config and cache directories, so nothing of the machine's leaks in), the fixture tree it
/// uploads, and oracles from other tools (`readelf` for build-ids, `sqlite3` for what was recorded).
struct EndToEnd {
    let server: TestServer
    /// Empty `XDG_CONFIG_HOME` and a private `XDG_CACHE_HOME`.
    var environment: [String: String] {
        ["XDG_CONFIG_HOME": server.scratch + "/config", "XDG_CACHE_HOME": server.scratch + "/cache"]
    }

    init(arguments: [String] = []) throws {
        server = try TestServer(arguments: arguments)
        try FileManager.default.createDirectory(atPath: server.scratch + "/config", withIntermediateDirectories: true)
    }

    /// The flags naming this server and app with the right key.
    var account: [String] { ["--server", server.base, "--app-id", server.appID, "--app-key", server.key] }

    /// `crashsym upload ARGUMENTS`.
    func upload(_ arguments: [String]) throws -> Binary.Output {
        try Binary.crashsym(["upload"] + arguments, environment: environment)
    }

    /// One JSON object per line of `upload --format json`, by build-id (bundle lines left out).
    static func statuses(_ output: Binary.Output) -> [String: String] {
        var statuses: [String: String] = [:]
        for line in output.stdout.split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let id = object["build_id"] as? String, let status = object["status"] as? String else { continue }
            statuses[id] = status
        }
        return statuses
    }

    /// `GET versions/{version}/modules` as build-id to module object.
    func modules(version: String) throws -> [String: [String: Any]] {
        let answer = try server.request("GET", "/api/v1/apps/\(server.appID)/versions/\(version)/modules")
        guard answer.status == 200, let list = answer.json["modules"] as? [[String: Any]] else {
            throw TestFailure("modules of \(version): HTTP \(answer.status) \(answer.text)")
        }
        return Dictionary(list.map { ($0["build_id"] as? String ?? "", $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// A Prometheus counter of `/metrics` (0 when absent).
    func counter(_ name: String) throws -> Double {
        let text = try server.request("GET", "/metrics").text
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.split(separator: " ").last ?? "") ?? 0
        }
        return 0
    }

    /// The module rows the server committed: build-id to (symbols SHA-256, debug SHA-256).
    func recordedModules() throws -> [String: (symbols: String, debug: String?)] {
        let result = try Binary.run("/usr/bin/sqlite3", [
            "-readonly", "-separator", " ", server.dataDirectory + "/metadata.sqlite",
            "SELECT build_id, symbols_sha256, coalesce(debug_sha256, '-') FROM module WHERE app_id = '\(server.appID)'",
        ])
        guard result.status == 0 else { throw TestFailure("sqlite3: \(result.stderr)") }
        var rows: [String: (symbols: String, debug: String?)] = [:]
        for line in result.stdout.split(separator: "\n") {
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count == 3 else { throw TestFailure("unexpected row \(line)") }
            rows[fields[0]] = (fields[1], fields[2] == "-" ? nil : fields[2])
        }
        return rows
    }

    /// Every file of the content-addressed store.
    func storedObjects() throws -> [String] {
        let root = server.dataDirectory + "/objects/sha256"
        guard let enumerator = FileManager.default.enumerator(atPath: root) else { return [] }
        return enumerator.compactMap { $0 as? String }.filter { $0.contains("/") }
    }

    func objectPath(_ sha256: String) -> String {
        server.dataDirectory + "/objects/sha256/" + sha256.prefix(2) + "/" + sha256.dropFirst(2)
    }

    /// A background `crashsym upload` (for concurrency and restarts).
    func startUpload(_ arguments: [String], name: String) throws -> BackgroundRun {
        try BackgroundRun(Binary.crashsym, ["upload"] + arguments, environment: environment,
                          directory: server.scratch, name: name)
    }
}

/// A process started without waiting, its output in files.
final class BackgroundRun {
    let process = Process()
    let outPath: String
    let errPath: String

    init(_ executable: String, _ arguments: [String], environment: [String: String], directory: String, name: String) throws {
        outPath = directory + "/\(name).out"
        errPath = directory + "/\(name).err"
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    /// Waits for the exit and returns what the process printed.
    func wait() -> Binary.Output {
        process.waitUntilExit()
        return Binary.Output(status: process.terminationStatus,
                             stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
                             stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() }
    }
}

/// The fixture set of a post-build step: two executables, a shared library, and a stripped
/// binary next to its separate debug file (`debuglink/prog` + `prog.debug`, one module).
enum BuildTree {
    static let files = ["greet-app", "libgreet.so", "gcc-c-O2-dwarf5", "debuglink/prog", "debuglink/prog.debug"]

    /// Copies the fixtures into `directory/out` (as a build directory would hold them) and returns it.
    static func make(in directory: String) throws -> String {
        let out = directory + "/out"
        try FileManager.default.createDirectory(atPath: out + "/debuglink", withIntermediateDirectories: true)
        for file in files {
            try FileManager.default.copyItem(atPath: Binary.fixture(file), toPath: out + "/" + file)
        }
        return out
    }

    /// The GNU build-id as `readelf -n` prints it.
    static func buildID(_ path: String) throws -> String {
        let output = try Binary.run("/usr/bin/readelf", ["-n", path]).stdout
        guard let line = output.split(separator: "\n").first(where: { $0.contains("Build ID:") }),
              let id = line.split(separator: " ").last else { throw TestFailure("no build-id in \(path)") }
        return String(id)
    }

    /// Module name (the binary, not its debug file) to build-id, from readelf.
    static func expected() throws -> [String: String] {
        var modules: [String: String] = [:]
        for file in files where !file.hasSuffix(".debug") {
            modules[(file as NSString).lastPathComponent] = try buildID(Binary.fixture(file))
        }
        return modules
    }
}
