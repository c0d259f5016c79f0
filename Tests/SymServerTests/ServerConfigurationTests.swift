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
