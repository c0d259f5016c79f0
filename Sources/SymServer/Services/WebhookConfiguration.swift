import Foundation

/// The settings of notifications (`crashsym serve`), resolved like `ServerConfiguration`: flag,
/// then `CRASHSYM_<NAME>`, then the config file, then the default.
public struct WebhookConfiguration: Sendable, Equatable {
    /// A group spikes when its last hour reaches this many times its hourly average of the 7 days before.
    public var spikeFactor: Double
    /// … and at least this many crashes.
    public var spikeMinimum: Int
    /// The console's address as people reach it (links in notifications); nil: no links.
    public var publicURL: String?
    /// Whether webhooks may point at private addresses (10/8, 172.16/12, 192.168/16, fc00::/7).
    public var allowPrivate: Bool
    /// Seconds one delivery attempt may take in all (connecting: at most 5 of them).
    public var timeout: Double
    /// Seconds before the first retry; each next one waits twice as long (with jitter), up to an hour.
    public var retryBase: Double
    /// Hours after which a delivery that keeps failing is given up.
    public var retryHours: Double
    /// Webhooks delivered to at once (each receives its deliveries one at a time, in order).
    public var concurrency: Int

    /// Creates a configuration.
    public init(spikeFactor: Double = 5, spikeMinimum: Int = 20, publicURL: String? = nil, allowPrivate: Bool = false,
                timeout: Double = 10, retryBase: Double = 10, retryHours: Double = 24, concurrency: Int = 4) {
        self.spikeFactor = spikeFactor
        self.spikeMinimum = spikeMinimum
        self.publicURL = publicURL
        self.allowPrivate = allowPrivate
        self.timeout = timeout
        self.retryBase = retryBase
        self.retryHours = retryHours
        self.concurrency = concurrency
    }

    /// The setting names (flags, config-file keys, `CRASHSYM_…` variables).
    public static let settingNames = [
        "spike-factor", "spike-min", "public-url", "webhook-allow-private", "webhook-timeout", "webhook-retry-base",
        "webhook-retry-hours", "webhook-concurrency",
    ]

    /// Resolves the settings from flags (name → value, only those given), the environment and
    /// the config file (`configFile`, else `CRASHSYM_CONFIG`).
    public static func resolve(flags: [String: String], environment: [String: String] = ProcessInfo.processInfo.environment,
                               configFile: String? = nil) throws -> WebhookConfiguration {
        try resolve(ServerSettings(flags: flags, environment: environment, configFile: configFile))
    }

    /// Resolves the settings from those gathered once for the server (`ServerSettings`).
    public static func resolve(_ settings: ServerSettings) throws -> WebhookConfiguration {
        let value = settings.value
        func number(_ name: String, _ fallback: Double, minimum: Double) throws -> Double {
            guard let text = value(name) else { return fallback }
            guard let parsed = Double(text.trimmingCharacters(in: .whitespaces)), parsed.isFinite, parsed >= minimum else {
                throw ConfigurationError("\(name): \"\(text)\" is not a number of at least \(minimum)")
            }
            return parsed
        }
        var configuration = WebhookConfiguration()
        configuration.spikeFactor = try number("spike-factor", configuration.spikeFactor, minimum: 1)
        configuration.spikeMinimum = Int(try number("spike-min", Double(configuration.spikeMinimum), minimum: 1))
        configuration.timeout = try number("webhook-timeout", configuration.timeout, minimum: 0.1)
        configuration.retryBase = try number("webhook-retry-base", configuration.retryBase, minimum: 0.1)
        configuration.retryHours = try number("webhook-retry-hours", configuration.retryHours, minimum: 0)
        configuration.concurrency = Int(try number("webhook-concurrency", Double(configuration.concurrency), minimum: 1))
        if let text = value("webhook-allow-private") {
            switch text.lowercased() {
            case "true", "1", "yes": configuration.allowPrivate = true
            case "false", "0", "no": configuration.allowPrivate = false
            default: throw ConfigurationError("webhook-allow-private: \"\(text)\" is not true or false")
            }
        }
        if let url = value("public-url"), !url.isEmpty {
            guard let components = URLComponents(string: url), ["http", "https"].contains(components.scheme?.lowercased() ?? ""),
                  components.host?.isEmpty == false else {
                throw ConfigurationError("public-url: \"\(url)\" is not an http or https URL")
            }
            configuration.publicURL = url
        }
        return configuration
    }
}
