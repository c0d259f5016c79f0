import Foundation
import SymBundle

/// Everything `crashsym serve` can be told, with defaults.
///
/// Each setting comes from, in order of precedence: a command-line flag, an environment variable
/// `CRASHSYM_<NAME>` (upper case, dashes as underscores), the JSON config file (`--config` or
/// `CRASHSYM_CONFIG`, keys as the flag names), the default.
public struct ServerConfiguration: Sendable, Equatable {
    /// Address to bind; loopback unless told otherwise.
    public var host: String
    /// TCP port (0: any free port).
    public var port: Int
    /// The data directory (SQLite metadata and object store).
    public var dataDirectory: String
    /// Largest request body accepted (413 above).
    public var maxBodyBytes: UInt64
    /// Uploads processed at once (429 above).
    public var maxConcurrentUploads: Int
    /// Seconds allowed to receive an upload body (408 above); also how long a body may stay
    /// silent before its connection is closed.
    public var requestTimeout: Double
    /// Seconds allowed to receive a request's head, from the connection's start or the end of
    /// the previous response (an idle kept-alive connection is closed after as long).
    public var headerTimeout: Double
    /// Connections served at once; further ones wait in the kernel's accept queue until one closes.
    public var maxConnections: Int
    /// Limits applied while validating bundles.
    public var bundleLimits: BundleLimits
    /// swift-log level (`trace` … `critical`).
    public var logLevel: String
    /// The URL people open the server at (behind a proxy); `https://…` makes the web console's
    /// cookies `Secure`.
    public var publicURL: String?
    /// The shared metadata store, `postgres://user@host[:port]/database` (nil: SQLite under
    /// `dataDirectory`); the password from the URL or `CRASHSYM_DATABASE_PASSWORD`.
    public var database: String?
    /// The object store and its node-local table cache (docs/storage.md).
    public var objectStorage = ObjectStorageConfiguration()

    /// Creates a configuration.
    public init(host: String = "127.0.0.1", port: Int = 8080, dataDirectory: String = "crashsym-data",
                maxBodyBytes: UInt64 = 2 << 30, maxConcurrentUploads: Int = 4, requestTimeout: Double = 600,
                headerTimeout: Double = 10, maxConnections: Int = 512, bundleLimits: BundleLimits = BundleLimits(), logLevel: String = "info",
                publicURL: String? = nil) {
        self.host = host
        self.port = port
        self.dataDirectory = dataDirectory
        self.maxBodyBytes = maxBodyBytes
        self.maxConcurrentUploads = maxConcurrentUploads
        self.requestTimeout = requestTimeout
        self.headerTimeout = headerTimeout
        self.maxConnections = maxConnections
        self.bundleLimits = bundleLimits
        self.logLevel = logLevel
        self.publicURL = publicURL
    }

    /// The setting names, as flags (`--max-body-bytes`), config-file keys and, upper-cased with
    /// underscores, environment variables (`CRASHSYM_MAX_BODY_BYTES`).
    public static let settingNames = [
        "host", "port", "data-dir", "max-body-bytes", "max-concurrent-uploads", "request-timeout",
        "header-timeout", "max-connections", "max-entries", "max-uncompressed-bytes", "max-ratio", "log-level",
        "database",
    ] + ObjectStorageConfiguration.settingNames + CrashServiceConfiguration.settingNames + WebhookConfiguration.settingNames

    /// The environment variable of a setting.
    public static func environmentName(_ setting: String) -> String {
        "CRASHSYM_" + setting.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    /// Resolves the configuration from flags (setting name → value, only those given), the
    /// environment and the config file (`configFile`, else `CRASHSYM_CONFIG`).
    public static func resolve(flags: [String: String], environment: [String: String] = ProcessInfo.processInfo.environment,
                               configFile: String? = nil) throws -> ServerConfiguration {
        try resolve(ServerSettings(flags: flags, environment: environment, configFile: configFile))
    }

    /// Resolves the configuration from settings gathered once (`ServerSettings`).
    public static func resolve(_ settings: ServerSettings) throws -> ServerConfiguration {
        let value = settings.value
        func number<N: FixedWidthInteger>(_ name: String, _ fallback: N, minimum: N = 0) throws -> N {
            guard let text = value(name) else { return fallback }
            guard let parsed = N(text.trimmingCharacters(in: .whitespaces)), parsed >= minimum else {
                throw ConfigurationError("\(name): \"\(text)\" is not an integer of at least \(minimum)")
            }
            return parsed
        }
        var configuration = ServerConfiguration()
        configuration.host = value("host") ?? configuration.host
        configuration.port = try number("port", configuration.port)
        guard configuration.port <= 65535 else { throw ConfigurationError("port: \(configuration.port) is over 65535") }
        configuration.dataDirectory = value("data-dir") ?? configuration.dataDirectory
        configuration.maxBodyBytes = try number("max-body-bytes", configuration.maxBodyBytes, minimum: 1)
        configuration.maxConcurrentUploads = try number("max-concurrent-uploads", configuration.maxConcurrentUploads, minimum: 1)
        func seconds(_ name: String, _ fallback: Double) throws -> Double {
            guard let text = value(name) else { return fallback }
            guard let seconds = Double(text.trimmingCharacters(in: .whitespaces)), seconds > 0, seconds.isFinite else {
                throw ConfigurationError("\(name): \"\(text)\" is not a positive number of seconds")
            }
            return seconds
        }
        configuration.requestTimeout = try seconds("request-timeout", configuration.requestTimeout)
        configuration.headerTimeout = try seconds("header-timeout", configuration.headerTimeout)
        configuration.maxConnections = try number("max-connections", configuration.maxConnections, minimum: 1)
        configuration.bundleLimits.maxEntries = try number("max-entries", configuration.bundleLimits.maxEntries, minimum: 1)
        configuration.bundleLimits.maxUncompressedBytes = try number("max-uncompressed-bytes", configuration.bundleLimits.maxUncompressedBytes, minimum: 1)
        configuration.bundleLimits.maxCompressionRatio = try number("max-ratio", configuration.bundleLimits.maxCompressionRatio, minimum: 1)
        configuration.logLevel = value("log-level") ?? configuration.logLevel
        configuration.publicURL = value("public-url")
        configuration.database = value("database")
        if let database = configuration.database, !(database.hasPrefix("postgres://") || database.hasPrefix("postgresql://")) {
            throw ConfigurationError("database: \"\(database)\" is not a postgres://user@host/database URL")
        }
        configuration.objectStorage = try ObjectStorageConfiguration.resolve(value)
        return configuration
    }
}

/// A setting that cannot be used, with the setting's name (or the config file) in the message.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// One line saying which setting and why.
    public var message: String

    /// Creates an error.
    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
