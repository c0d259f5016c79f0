import Foundation
import SymServer
import Testing

/// The crash-service settings resolve like the server's: flag, environment, config file, default.
struct CrashServiceConfigurationTests {
    @Test("flag over environment over config file over default; bad values name the setting")
    func precedence() throws {
        let directory = try Binary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/serve.json"
        try #"{"retention-days": 7, "crash-workers": 3, "table-cache-mb": "64", "port": 9000}"#
            .write(toFile: file, atomically: true, encoding: .utf8)
        let resolved = try CrashServiceConfiguration.resolve(
            flags: ["crash-workers": "5"], environment: ["CRASHSYM_TABLE_CACHE_MB": "128"], configFile: file)
        #expect(resolved.crashWorkersAndCache == (5, 128))
        #expect(resolved.retentionDays == 7)
        #expect(resolved.maxReportBytes == 16 << 20)
        #expect(resolved.maxCrashesPerMinute == 6000)
        // The server's own resolver accepts the crash settings in the same file.
        #expect(try ServerConfiguration.resolve(flags: [:], environment: [:], configFile: file).port == 9000)
        #expect(throws: ConfigurationError.self) { try CrashServiceConfiguration.resolve(flags: ["retention-days": "-1"], environment: [:]) }
        #expect(throws: ConfigurationError.self) { try CrashServiceConfiguration.resolve(flags: ["crash-workers": "0"], environment: [:]) }
        // Pack compaction's interval: 60 s by default, from the environment too, bounded.
        #expect(resolved.packCompactionSeconds == 60)
        #expect(try CrashServiceConfiguration.resolve(flags: [:], environment: ["CRASHSYM_PACK_COMPACTION_SECONDS": "2.5"])
            .packCompactionSeconds == 2.5)
        for bad in ["0", "-1", "nan", "100000", "soon"] {
            #expect(throws: ConfigurationError("pack-compaction-seconds: \"\(bad)\" is not a number of seconds from 0.01 to 86400")) {
                try CrashServiceConfiguration.resolve(flags: ["pack-compaction-seconds": bad], environment: [:])
            }
        }
        do {
            _ = try CrashServiceConfiguration.resolve(flags: ["max-report-bytes": "lots"], environment: [:])
        } catch let error as ConfigurationError {
            #expect(error.message.hasPrefix("max-report-bytes:"))
        }
    }
}

extension CrashServiceConfiguration {
    fileprivate var crashWorkersAndCache: (Int, Int) { (workers, tableCacheMB) }
}

private func == (lhs: (Int, Int), rhs: (Int, Int)) -> Bool { lhs.0 == rhs.0 && lhs.1 == rhs.1 }
