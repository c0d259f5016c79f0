import ArgumentParser
import SymReport
import Symbolication

/// Options of commands that may fetch symbol tables from a crashsym server: `--server`,
/// `--app-id`, `--app-key`, with the same environment variables and config file as `upload`.
public struct ServerOptions: ParsableArguments {
    @Option(name: .customLong("server"),
            help: ArgumentHelp("crashsym server asked for the tables of modules that no local source has (else $CRASHSYM_SERVER; none: no server is asked).",
                               valueName: "url"))
    public var server: String?

    @Option(name: .customLong("app-id"), help: ArgumentHelp("App whose tables are fetched (else $CRASHSYM_APP_ID, else app-id in the config file).", valueName: "id"))
    public var appID: String?

    @Option(name: .customLong("app-key"), help: ArgumentHelp("The app's key (else $CRASHSYM_APP_KEY, else app-key in the config file; prefer those: a flag shows in the process list).", valueName: "key"))
    public var appKey: String?

    @Option(name: .customLong("config"), help: ArgumentHelp("Config file with app-id and app-key (default $XDG_CONFIG_HOME/crashsym/config.json).", valueName: "file"))
    public var configFile: String?

    /// Creates the defaults.
    public init() {}

    /// The server to fetch tables from, with the app and key; nil when no server is named.
    /// Fails with a usage error when a server is named but no app id or key can be found.
    public func configuration(cacheDirectory: String?) throws -> ServerTableProvider.Configuration? {
        guard let server = server ?? SymbolSources.environment("CRASHSYM_SERVER") else { return nil }
        let lower = server.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else {
            throw ValidationError("--server must start with http:// or https://")
        }
        let file = try configFileValues()
        guard let appID = appID ?? SymbolSources.environment("CRASHSYM_APP_ID") ?? file["app-id"] ?? file["app_id"] else {
            throw ValidationError("--server needs an app: give --app-id, CRASHSYM_APP_ID or app-id in the config file")
        }
        guard let key = appKey ?? SymbolSources.environment("CRASHSYM_APP_KEY") ?? file["app-key"] ?? file["app_key"] else {
            throw ValidationError("--server needs the app's key: give CRASHSYM_APP_KEY, app-key in the config file, or --app-key")
        }
        guard let cacheDirectory else {
            throw ValidationError("--server needs a cache directory for the tables it fetches: give --cache-dir")
        }
        return ServerTableProvider.Configuration(server: server, appID: appID, appKey: key, cacheDirectory: cacheDirectory)
    }

    /// The string members of the config file (none when the default file does not exist).
    func configFileValues() throws -> [String: String] {
        let path: String
        if let configFile {
            path = configFile
        } else if let xdg = SymbolSources.environment("XDG_CONFIG_HOME") {
            path = xdg + "/crashsym/config.json"
        } else if let home = SymbolSources.environment("HOME") {
            path = home + "/.config/crashsym/config.json"
        } else {
            return [:]
        }
        guard FileSystem.kind(of: path) == .file, let bytes = FileSystem.prefix(of: path, count: 1 << 20) else {
            if configFile != nil { throw ValidationError("cannot read the config file \(path)") }
            return [:]
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(String(decoding: bytes, as: UTF8.self))
        } catch {
            throw ValidationError("\(path): not JSON: \(error)")
        }
        guard case .object(let members) = value else { throw ValidationError("\(path): expected a JSON object") }
        var values: [String: String] = [:]
        for (name, member) in members { if let text = member.string { values[name] = text } }
        return values
    }
}
