import Foundation
import SymServer
import Testing

@Suite("ServerConfiguration")
struct ServerConfigurationTests {
    @Test("flag > environment > config file > default")
    func precedence() throws {
        let directory = try Binary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/serve.json"
        try Data(#"{"port": 9001, "host": "0.0.0.0", "max-ratio": 7, "data-dir": "/from/file"}"#.utf8).write(to: URL(fileURLWithPath: file))
        let environment = ["CRASHSYM_PORT": "9002", "CRASHSYM_MAX_RATIO": "8"]
        let resolved = try ServerConfiguration.resolve(flags: ["port": "9003"], environment: environment, configFile: file)
        #expect(resolved.port == 9003)
        #expect(resolved.bundleLimits.maxCompressionRatio == 8)
        #expect(resolved.host == "0.0.0.0")
        #expect(resolved.dataDirectory == "/from/file")
        #expect(resolved.maxConcurrentUploads == ServerConfiguration().maxConcurrentUploads)
        let fromEnvironmentFile = try ServerConfiguration.resolve(flags: [:], environment: ["CRASHSYM_CONFIG": file])
        #expect(fromEnvironmentFile.port == 9001)
        #expect(ServerConfiguration().host == "127.0.0.1")
        #expect(throws: ConfigurationError.self) { try ServerConfiguration.resolve(flags: ["port": "http"], environment: [:]) }
        #expect(throws: ConfigurationError.self) { try ServerConfiguration.resolve(flags: ["port": "70000"], environment: [:]) }
        try Data(#"{"prot": 1}"#.utf8).write(to: URL(fileURLWithPath: file))
        #expect(throws: ConfigurationError.self) { try ServerConfiguration.resolve(flags: [:], environment: [:], configFile: file) }
    }
}

extension ServerConfigurationTests {
    @Test("serve opens its config file once, and every part takes its settings from it")
    func configurationReadOnce() throws {
        let directory = try Binary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/serve.json"
        try Data(#"{"max-report-bytes": 64, "webhook-timeout": 3}"#.utf8).write(to: URL(fileURLWithPath: file))
        // The kernel counts the opens (inotify), whoever makes them.
        let watch = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        #expect(watch >= 0)
        defer { close(watch) }
        // Closes too: identical events in a row are merged into one, an open and a close are not.
        #expect(inotify_add_watch(watch, file, UInt32(IN_OPEN | IN_CLOSE_NOWRITE)) >= 0)
        let server = try TestServer(arguments: ["--config", file])
        var opens = 0
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(watch, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            // A watch on a file: each event is the 16-byte header (wd, mask, cookie, len) without a name.
            for start in stride(from: 0, to: count, by: MemoryLayout<inotify_event>.size) {
                let mask = buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: start + 4, as: UInt32.self) }
                if mask & UInt32(IN_OPEN) != 0 { opens += 1 }
            }
        }
        #expect(opens == 1)
        // The crash service's limit came from the file too.
        let report = directory + "/report.txt"
        try String(repeating: "#0 0x1 in f\n", count: 20).write(toFile: report, atomically: true, encoding: .utf8)
        let answer = try server.request("POST", "/api/v1/apps/\(server.appID)/crashes",
                                        extra: ["-H", "Content-Type: text/plain", "--data-binary", "@" + report])
        #expect(answer.status == 413, "\(answer.status) \(answer.text)")
    }

    @Test("a config file may be a pipe")
    func configurationFromPipe() throws {
        let directory = try Binary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fifo = directory + "/serve.json"
        #expect(mkfifo(fifo, 0o600) == 0)
        let writer = Thread {
            let descriptor = open(fifo, O_WRONLY | O_CLOEXEC)  // until the settings open it
            _ = Array(#"{"port": 9009, "crash-workers": 3}"#.utf8).withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            close(descriptor)
        }
        writer.start()
        let settings = try ServerSettings(flags: [:], environment: [:], configFile: fifo)
        #expect(try ServerConfiguration.resolve(settings).port == 9009)
        #expect(try CrashServiceConfiguration.resolve(settings).workers == 3)
    }
}

@Suite("AppKey")
struct AppKeyTests {
    @Test("keys are 256 random bits; only the right key matches its hash; an unknown app never matches")
    func matching() {
        let key = AppKey.generate()
        #expect(key.hasPrefix(AppKey.prefix) && key.utf8.count == AppKey.prefix.utf8.count + 64)
        #expect(AppKey.generate() != key)
        let stored = AppKey.hash(key)
        #expect(stored.count == 32)
        #expect(AppKey.matches(key, stored: stored))
        #expect(!AppKey.matches(key + "0", stored: stored))
        #expect(!AppKey.matches(String(key.dropLast()), stored: stored))
        #expect(!AppKey.matches("", stored: stored))
        #expect(!AppKey.matches(key, stored: nil))
        #expect(!AppKey.matches(key, stored: Array(stored.dropLast())))
    }
}
