import Foundation

/// The settings `crashsym serve` was given, gathered once: flags (only those given), the
/// `CRASHSYM_…` environment and the JSON config file (`configFile`, else `CRASHSYM_CONFIG`),
/// read and checked here and nowhere else. Each part's `resolve` (`ServerConfiguration`,
/// `CrashServiceConfiguration`, `WebhookConfiguration`) reads its own settings from one value.
public struct ServerSettings: Sendable {
    let flags: [String: String]
    let environment: [String: String]
    let file: [String: String]

    /// Reads the config file, if any; an unreadable file, a value that is not a string or a
    /// number, and a key no part knows are `ConfigurationError`s.
    public init(flags: [String: String], environment: [String: String] = ProcessInfo.processInfo.environment,
                configFile: String? = nil) throws {
        self.flags = flags
        self.environment = environment
        file = try (configFile ?? environment["CRASHSYM_CONFIG"]).map(Self.readConfigFile) ?? [:]
    }

    /// The value of setting `name`: the flag, else `CRASHSYM_<NAME>`, else the config file.
    public func value(_ name: String) -> String? {
        flags[name] ?? environment[ServerConfiguration.environmentName(name)] ?? file[name]
    }

    /// The most bytes of a config file read.
    static let configFileLimit = 1 << 20

    /// A flat JSON object whose values are strings or numbers, keyed by setting names. Read to
    /// its end whatever the file is, so that a pipe works too (`--config <(…)`).
    private static func readConfigFile(_ path: String) throws -> [String: String] {
        guard let handle = FileHandle(forReadingAtPath: path),
              let data = try? handle.read(upToCount: configFileLimit + 1) ?? Data() else {
            throw ConfigurationError("cannot read the config file \(path)")
        }
        try? handle.close()
        guard data.count <= configFileLimit else {
            throw ConfigurationError("\(path): larger than \(configFileLimit) bytes; not a config file")
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ConfigurationError("\(path): not a JSON object")
        }
        let known = ServerConfiguration.settingNames
        var settings: [String: String] = [:]
        for (key, value) in object {
            guard known.contains(key) else {
                throw ConfigurationError("\(path): unknown setting \"\(key)\" (known: \(known.joined(separator: ", ")))")
            }
            switch value {
            case let text as String: settings[key] = text
            case let number as NSNumber: settings[key] = number.stringValue
            default: throw ConfigurationError("\(path): \(key) must be a string or a number")
            }
        }
        return settings
    }
}
