import Foundation
import Symbolication

/// The settings of the crash service (`crashsym serve`), resolved like `ServerConfiguration`:
/// flag, then `CRASHSYM_<NAME>`, then the config file, then the default.
public struct CrashServiceConfiguration: Sendable, Equatable {
    /// Largest crash report accepted by `POST …/crashes` and `POST …/symbolicate` (413 above).
    public var maxReportBytes: Int
    /// Most stack frames a report may hold (a longer report is refused or stored as failed).
    public var maxFrames: Int
    /// Crashes accepted per app and minute (429 with Retry-After above); 0: no limit.
    public var maxCrashesPerMinute: Int
    /// Crashes older than this many days are deleted (their groups keep their counts); 0: never.
    public var retentionDays: Double
    /// Bytes of opened symbol tables kept mapped between requests, in MiB.
    public var tableCacheMB: Int
    /// Crashes processed at once.
    public var workers: Int
    /// Largest minidump upload accepted by `POST …/minidump`, counted after decompression (413 above).
    public var maxMinidumpBytes: Int
    /// How long a leased crash job stays with its worker without renewal: the worker renews it
    /// every third of this while it processes, and a node killed meanwhile loses its jobs to
    /// another node this long after its last renewal.
    public var jobLeaseSeconds: Double = 120
    /// CPU seconds one crash may take to process (parse, walk, symbolicate, sign) before the
    /// watchdog fails it with the reason: hostile input must not hold a worker for ever.
    public var maxCrashCPUSeconds: Double = 60
    /// Seconds between passes of pack compaction (`PackCompactor`): the bytes of a crash
    /// deleted by request leave its pack within about this long.
    public var packCompactionSeconds: Double = 60
    /// Most bytes of crash uploads (`POST …/crashes` and `…/minidump` bodies) held in memory at
    /// once, across requests (503 with Retry-After above).
    public var maxCrashBytesInFlight: Int

    /// Creates a configuration.
    public init(maxReportBytes: Int = 16 << 20, maxFrames: Int = Symbolicator.defaultMaximumReportFrames, maxCrashesPerMinute: Int = 6000,
                retentionDays: Double = 90, tableCacheMB: Int = 512, workers: Int = 2,
                maxMinidumpBytes: Int = 64 << 20, maxCrashBytesInFlight: Int = 256 << 20) {
        self.maxReportBytes = maxReportBytes
        self.maxFrames = maxFrames
        self.maxCrashesPerMinute = maxCrashesPerMinute
        self.retentionDays = retentionDays
        self.tableCacheMB = tableCacheMB
        self.workers = workers
        self.maxMinidumpBytes = maxMinidumpBytes
        self.maxCrashBytesInFlight = maxCrashBytesInFlight
    }

    /// The setting names (flags, config-file keys, `CRASHSYM_…` variables).
    public static let settingNames = [
        "max-report-bytes", "max-report-frames", "max-crashes-per-minute", "retention-days", "table-cache-mb", "crash-workers",
        "max-minidump-bytes", "max-crash-bytes-in-flight",
        "job-lease-seconds", "max-crash-cpu-seconds", "pack-compaction-seconds",
    ]

    /// Resolves the settings from flags (name → value, only those given), the environment and
    /// the config file (`configFile`, else `CRASHSYM_CONFIG`).
    public static func resolve(flags: [String: String], environment: [String: String] = ProcessInfo.processInfo.environment,
                               configFile: String? = nil) throws -> CrashServiceConfiguration {
        try resolve(ServerSettings(flags: flags, environment: environment, configFile: configFile))
    }

    /// Resolves the settings from those gathered once for the server (`ServerSettings`).
    public static func resolve(_ settings: ServerSettings) throws -> CrashServiceConfiguration {
        let value = settings.value
        func integer(_ name: String, _ fallback: Int, minimum: Int) throws -> Int {
            guard let text = value(name) else { return fallback }
            guard let parsed = Int(text.trimmingCharacters(in: .whitespaces)), parsed >= minimum else {
                throw ConfigurationError("\(name): \"\(text)\" is not an integer of at least \(minimum)")
            }
            return parsed
        }
        var configuration = CrashServiceConfiguration()
        configuration.maxReportBytes = try integer("max-report-bytes", configuration.maxReportBytes, minimum: 1)
        configuration.maxFrames = try integer("max-report-frames", configuration.maxFrames, minimum: 1)
        configuration.maxCrashesPerMinute = try integer("max-crashes-per-minute", configuration.maxCrashesPerMinute, minimum: 0)
        configuration.tableCacheMB = try integer("table-cache-mb", configuration.tableCacheMB, minimum: 1)
        configuration.workers = try integer("crash-workers", configuration.workers, minimum: 1)
        configuration.maxMinidumpBytes = try integer("max-minidump-bytes", configuration.maxMinidumpBytes, minimum: 1024)
        if let text = value("job-lease-seconds") {
            guard let seconds = Double(text.trimmingCharacters(in: .whitespaces)), seconds >= 1, seconds.isFinite else {
                throw ConfigurationError("job-lease-seconds: \"\(text)\" is not a number of seconds of at least 1")
            }
            configuration.jobLeaseSeconds = seconds
        }
        if let text = value("max-crash-cpu-seconds") {
            guard let seconds = Double(text.trimmingCharacters(in: .whitespaces)), seconds >= 0.01, seconds.isFinite else {
                throw ConfigurationError("max-crash-cpu-seconds: \"\(text)\" is not a number of seconds of at least 0.01")
            }
            configuration.maxCrashCPUSeconds = seconds
        }
        if let text = value("pack-compaction-seconds") {
            guard let seconds = Double(text.trimmingCharacters(in: .whitespaces)), seconds >= 0.01, seconds <= 86_400 else {
                throw ConfigurationError("pack-compaction-seconds: \"\(text)\" is not a number of seconds from 0.01 to 86400")
            }
            configuration.packCompactionSeconds = seconds
        }
        configuration.maxCrashBytesInFlight = try integer("max-crash-bytes-in-flight", configuration.maxCrashBytesInFlight, minimum: 1024)
        if let text = value("retention-days") {
            guard let days = Double(text.trimmingCharacters(in: .whitespaces)), days >= 0, days.isFinite else {
                throw ConfigurationError("retention-days: \"\(text)\" is not a number of days of at least 0")
            }
            configuration.retentionDays = days
        }
        return configuration
    }
}
