import FoundationEssentials
import SymReport
#if canImport(Glibc)
import Glibc
#endif

/// Settings of the collector agent, after precedence: flag > `CRASHSYM_*` environment > config
/// file > default (STYLE.md 5). `resolve` builds it; the executable only gathers the flags.
public struct AgentConfiguration: Sendable {
    /// A directory the agent collects crash files from, with what it knows of them.
    public struct Spool: Sendable, Equatable {
        /// The directory.
        public var path: String
        /// The app the crashes belong to (else the agent's app id).
        public var appID: String?
        /// The app's version (else the agent's version, else the one the report states).
        public var version: String?
        /// The format of its files (else detected by the server).
        public var format: ReportFormat?
        /// The environment (else the agent's).
        public var environment: String?
        /// The key of its app, when that is not the agent's app (else the agent's key).
        public var appKey: String?

        /// A spool directory.
        public init(path: String, appID: String? = nil, version: String? = nil, format: ReportFormat? = nil,
                    environment: String? = nil, appKey: String? = nil) {
            self.path = path
            self.appID = appID
            self.version = version
            self.format = format
            self.environment = environment
            self.appKey = appKey
        }
    }

    /// The app of one program's crashes, whatever spool (or core) they come from: one agent
    /// serves several apps. A report's program is its executable module
    /// (`CrashReport.executableModule`).
    public struct App: Sendable, Equatable {
        /// An absolute path (`/usr/bin/foo`), or a file name (`foo`) that matches the program
        /// wherever it lies.
        public var executable: String
        public var appID: String
        /// The app's key (else the agent's).
        public var appKey: String?
        /// The version of its crashes (else the version the report states, else the one the
        /// server knows for the executable's build-id).
        public var version: String?
        /// The environment (else the spool's, else the agent's).
        public var environment: String?

        /// A program's app.
        public init(executable: String, appID: String, appKey: String? = nil, version: String? = nil, environment: String? = nil) {
            self.executable = executable
            self.appID = appID
            self.appKey = appKey
            self.version = version
            self.environment = environment
        }

        /// Whether a report's executable at `path` is this program: an absolute path matches the
        /// same path, or a path the report gives relative (`./foo`, as glibc prints it) with the
        /// same file name; a file name matches any path ending in it.
        public func matches(path: String) -> Bool {
            guard executable.hasPrefix("/") else { return ReportModule.fileName(of: path) == executable }
            if path.hasPrefix("/") { return path == executable }
            return ReportModule.fileName(of: path) == ReportModule.fileName(of: executable)
        }
    }

    /// Base URL of the crashsym server.
    public var server: String
    /// Default app id of the spools.
    public var appID: String
    /// The app key (`Authorization: Bearer`); never logged.
    public var appKey: String
    /// The spool directories.
    public var spools: [Spool]
    /// The queue, `rejected/` and the status file.
    public var stateDirectory: String
    /// Default version sent with each crash (none: the report's own).
    public var version: String?
    /// Environment sent with each crash (`prod`, `staging`, …).
    public var environment: String?
    /// Host name sent with each crash (default: the machine's).
    public var host: String
    /// Scan the spools every `settle` instead of inotify (filesystems without inotify).
    public var poll: Bool
    /// A file not known to be closed by its writer is taken once unchanged this long.
    public var settle: Duration
    /// Disk the queue may use; past it the oldest reports are dropped (and counted).
    public var maxQueueBytes: UInt64
    /// Reports of one crash signature kept per minute (0: no limit); the rest are deleted and counted.
    public var maxReportsPerMinute: Int
    /// Reports sent at once (connections to the server).
    public var connections: Int
    /// Per-attempt timeout of an upload.
    public var requestTimeout: Duration
    /// Backoff bounds for transient failures.
    public var initialBackoff: Duration
    public var maximumBackoff: Duration
    /// swift-log level name.
    public var logLevel: String
    /// `--symbols`: where reports are symbolicated before they are sent (empty: sent as taken).
    public var symbols: [String] = []
    /// `--metrics-port`: Prometheus text on 127.0.0.1 (nil: none; 0: a port the kernel picks).
    public var metricsPort: Int?
    /// The app of each program (config file `apps`), first match wins; over the spool's app.
    public var apps: [App] = []

    /// The key to send a crash of `appID` with: its `apps` entry's or spool's key, else the agent's.
    public func appKey(for appID: String) -> String {
        apps.first { $0.appID == appID && $0.appKey != nil }?.appKey
            ?? spools.first { $0.appID == appID && $0.appKey != nil }?.appKey ?? appKey
    }

    /// The `apps` entry of a report whose executable is at `path` (nil: none).
    public func app(forExecutable path: String) -> App? {
        apps.first { $0.matches(path: path) }
    }
    /// `--systemd-coredump`: systemd-coredump's store, whose cores are sent as reports (nil: not read).
    public var systemdCoredump: String?

    /// A configuration; defaults for everything but the server, app and key.
    public init(server: String, appID: String, appKey: String, spools: [Spool], stateDirectory: String,
                version: String? = nil, environment: String? = nil, host: String = HostMetadata.current.hostName,
                poll: Bool = false, settle: Duration = .seconds(2), maxQueueBytes: UInt64 = 256 << 20,
                maxReportsPerMinute: Int = 0, connections: Int = 4, requestTimeout: Duration = .seconds(60), initialBackoff: Duration = .seconds(1),
                maximumBackoff: Duration = .seconds(300), logLevel: String = "info") {
        self.server = server
        self.appID = appID
        self.appKey = appKey
        self.spools = spools
        self.stateDirectory = stateDirectory
        self.version = version
        self.environment = environment
        self.host = host
        self.poll = poll
        self.settle = settle
        self.maxQueueBytes = maxQueueBytes
        self.maxReportsPerMinute = maxReportsPerMinute
        self.connections = max(1, connections)
        self.requestTimeout = requestTimeout
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
        self.logLevel = logLevel
    }

    /// What the command line gave (nil: not given).
    public struct Flags: Sendable {
        public var server: String?
        public var appID: String?
        public var appKey: String?
        public var spools: [String] = []
        public var stateDirectory: String?
        public var version: String?
        public var environment: String?
        public var host: String?
        public var poll: Bool?
        public var settleSeconds: Double?
        public var maxQueueMB: Int?
        public var maxReportsPerMinute: Int?
        public var connections: Int?
        public var logLevel: String?
        public var symbols: [String] = []
        public var metricsPort: Int?
        /// `--systemd-coredump[-dir]`: the store's directory.
        public var systemdCoredump: String?

        /// No flags.
        public init() {}
    }

    /// Why a configuration cannot be used: the message says which setting and what to do.
    public struct Problem: Error, CustomStringConvertible, Sendable {
        public var description: String
        /// A problem.
        public init(_ description: String) { self.description = description }
    }

    /// The settings the config file may hold (the flags' names).
    public static let fileKeys = ["server", "app-id", "app-key", "spools", "state-dir", "version", "environment", "host",
                                  "poll", "settle-seconds", "max-queue-mb", "max-reports-per-minute", "connections", "log-level", "symbols", "metrics-port",
                                  "apps", "systemd-coredump"]
    /// The members of one entry of `spools`.
    public static let spoolKeys = ["path", "app-id", "app-key", "version", "format", "environment"]
    /// The members of one entry of `apps`.
    public static let appKeys = ["executable", "app-id", "app-key", "version", "environment"]

    /// Resolves flags, the environment (`CRASHSYM_SERVER`, `CRASHSYM_APP_ID`, `CRASHSYM_APP_KEY`,
    /// `CRASHSYM_STATE_DIR`, `CRASHSYM_VERSION`, `CRASHSYM_ENVIRONMENT`, `CRASHSYM_SPOOL`
    /// (colon-separated)) and the config file at `configFile` (which must exist when given).
    public static func resolve(flags: Flags, environment: [String: String], configFile: String?) throws(Problem) -> AgentConfiguration {
        let file = try configFile.map { path throws(Problem) in try loadFile(path) } ?? FileValues()
        func env(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }

        guard let server = flags.server ?? env("CRASHSYM_SERVER") ?? file.server else {
            throw Problem("no server: give --server, CRASHSYM_SERVER or \"server\" in the config file")
        }
        let lower = server.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else {
            throw Problem("server must start with http:// or https://")
        }
        let spools: [Spool]
        if !flags.spools.isEmpty {
            spools = flags.spools.map { Spool(path: $0) }
        } else if let list = env("CRASHSYM_SPOOL") {
            spools = list.split(separator: ":").map { Spool(path: String($0)) }
        } else {
            spools = file.spools
        }
        let appID = flags.appID ?? env("CRASHSYM_APP_ID") ?? file.appID
        for spool in spools where spool.appID == nil && appID == nil {
            throw Problem("no app id for spool \(spool.path): give --app-id, CRASHSYM_APP_ID or \"app-id\" in the config file")
        }
        for id in [appID] + spools.map(\.appID) + file.apps.map({ Optional($0.appID) }) {
            if let id, !isIdentifier(id) {
                throw Problem("app id '\(id)' must be 1 to 128 characters of [A-Za-z0-9._-] (the id printed by `crashsym apps create`)")
            }
        }
        guard let key = flags.appKey ?? env("CRASHSYM_APP_KEY") ?? file.appKey, !key.isEmpty else {
            throw Problem("no app key: give CRASHSYM_APP_KEY, \"app-key\" in the config file, or --app-key")
        }
        guard let state = flags.stateDirectory ?? env("CRASHSYM_STATE_DIR") ?? file.stateDirectory
                ?? defaultStateDirectory(environment) else {
            throw Problem("no state directory: give --state-dir (neither XDG_STATE_HOME nor HOME is set)")
        }
        let version = flags.version ?? env("CRASHSYM_VERSION") ?? file.version
        let environmentName = flags.environment ?? env("CRASHSYM_ENVIRONMENT") ?? file.environment
        for value in [environmentName] + spools.map(\.environment) + file.apps.map(\.environment) {
            if let value, !isPrintable(value) { throw Problem("environment '\(value)' must be 1 to 255 printable characters") }
        }
        let settle = flags.settleSeconds ?? file.settleSeconds ?? 2
        guard settle >= 0, settle <= 3600 else { throw Problem("settle-seconds must be between 0 and 3600") }
        let megabytes = flags.maxQueueMB ?? file.maxQueueMB ?? 256
        guard megabytes >= 1, megabytes <= 1 << 30 else { throw Problem("max-queue-mb must be at least 1") }
        let perMinute = flags.maxReportsPerMinute ?? file.maxReportsPerMinute ?? 0
        guard perMinute >= 0 else { throw Problem("max-reports-per-minute must be 0 (no limit) or more") }
        let connections = flags.connections ?? file.connections ?? 4
        guard (1...64).contains(connections) else { throw Problem("connections must be between 1 and 64") }
        var configuration = AgentConfiguration(
            server: server, appID: appID ?? "", appKey: key, spools: spools, stateDirectory: state, version: version,
            environment: environmentName, poll: flags.poll ?? file.poll ?? false,
            settle: .milliseconds(Int64(settle * 1000)), maxQueueBytes: UInt64(megabytes) << 20, maxReportsPerMinute: perMinute, connections: connections,
            logLevel: flags.logLevel ?? file.logLevel ?? "info")
        configuration.symbols = flags.symbols.isEmpty ? file.symbols : flags.symbols
        configuration.metricsPort = flags.metricsPort ?? file.metricsPort
        configuration.apps = file.apps
        configuration.systemdCoredump = flags.systemdCoredump ?? file.systemdCoredump
        if let port = configuration.metricsPort, !(0...65535).contains(port) {
            throw Problem("metrics-port must be between 0 and 65535")
        }
        for path in configuration.symbols where access(path, F_OK) != 0 {
            throw Problem("symbols: \(path) does not exist (give directories of .csym tables, ELF files or .build-id trees)")
        }
        if let host = flags.host ?? file.host {
            guard isPrintable(host) else { throw Problem("host '\(host)' must be 1 to 255 printable characters") }
            configuration.host = host
        }
        return configuration
    }

    /// The `--symbols` paths alone (for `crashsym agent capture`): the flags, else the config file's.
    public static func resolveSymbols(flags: [String], configFile: String?) throws(Problem) -> [String] {
        guard flags.isEmpty else { return flags }
        return try configFile.map { path throws(Problem) in try loadFile(path) }?.symbols ?? []
    }

    /// The state directory alone (for `crashsym agent status`, which needs no server or key).
    public static func resolveStateDirectory(flag: String?, environment: [String: String], configFile: String?) throws(Problem) -> String {
        let file = try configFile.map { path throws(Problem) in try loadFile(path) } ?? FileValues()
        guard let state = flag ?? environment["CRASHSYM_STATE_DIR"].flatMap({ $0.isEmpty ? nil : $0 }) ?? file.stateDirectory
                ?? defaultStateDirectory(environment) else {
            throw Problem("no state directory: give --state-dir (neither XDG_STATE_HOME nor HOME is set)")
        }
        return state
    }

    /// `$XDG_STATE_HOME/crashsym-agent`, `~/.local/state/crashsym-agent`, or
    /// `/var/lib/crashsym-agent` for root.
    public static func defaultStateDirectory(_ environment: [String: String]) -> String? {
        if getuid() == 0 { return "/var/lib/crashsym-agent" }
        if let state = environment["XDG_STATE_HOME"], !state.isEmpty { return state + "/crashsym-agent" }
        if let home = environment["HOME"], !home.isEmpty { return home + "/.local/state/crashsym-agent" }
        return nil
    }

    static func isIdentifier(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 128 && text.first != "."
            && text.utf8.allSatisfy { $0.isASCIIAlnum || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }

    static func isPrintable(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 255 && text.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7f }
    }

    /// The settings a config file held.
    struct FileValues {
        var server, appID, appKey, stateDirectory, version, environment, host, logLevel: String?
        var spools: [Spool] = []
        var symbols: [String] = []
        var apps: [App] = []
        var poll: Bool?
        var settleSeconds: Double?
        var maxQueueMB: Int?
        var maxReportsPerMinute: Int?
        var connections: Int?
        var metricsPort: Int?
        var systemdCoredump: String?
    }

    /// Reads the JSON config file; every problem names the file and the setting.
    static func loadFile(_ path: String) throws(Problem) -> FileValues {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Problem("\(path): cannot read the config file")
        }
        let parsed: JSONValue
        do {
            parsed = try JSONValue.parse(String(decoding: data, as: UTF8.self))
        } catch {
            throw Problem("\(path): not JSON: \(error)")
        }
        guard case .object(let members) = parsed else {
            throw Problem("\(path): expected a JSON object such as {\"server\": …, \"app-id\": …, \"spools\": [{\"path\": …}]}")
        }
        var values = FileValues()
        func string(_ key: String, _ value: JSONValue, in place: String = "") throws(Problem) -> String {
            guard let text = value.string else { throw Problem("\(path): \(place)\"\(key)\" must be a string") }
            return text
        }
        for (key, value) in members {
            switch key {
            case "server": values.server = try string(key, value)
            case "app-id": values.appID = try string(key, value)
            case "app-key": values.appKey = try string(key, value)
            case "state-dir": values.stateDirectory = try string(key, value)
            case "version": values.version = try string(key, value)
            case "environment": values.environment = try string(key, value)
            case "host": values.host = try string(key, value)
            case "log-level": values.logLevel = try string(key, value)
            case "poll":
                guard let flag = value.bool else { throw Problem("\(path): \"poll\" must be true or false") }
                values.poll = flag
            case "settle-seconds":
                guard case .number(let text) = value, let number = Double(text) else {
                    throw Problem("\(path): \"settle-seconds\" must be a number")
                }
                values.settleSeconds = number
            case "max-queue-mb":
                guard case .number(let text) = value, let number = Int(text) else {
                    throw Problem("\(path): \"max-queue-mb\" must be a whole number")
                }
                values.maxQueueMB = number
            case "max-reports-per-minute":
                guard case .number(let text) = value, let number = Int(text) else {
                    throw Problem("\(path): \"max-reports-per-minute\" must be a whole number")
                }
                values.maxReportsPerMinute = number
            case "connections":
                guard case .number(let text) = value, let number = Int(text) else {
                    throw Problem("\(path): \"connections\" must be a whole number")
                }
                values.connections = number
            case "metrics-port":
                guard case .number(let text) = value, let number = Int(text) else {
                    throw Problem("\(path): \"metrics-port\" must be a whole number")
                }
                values.metricsPort = number
            case "systemd-coredump":
                // true: the default store; a string: that directory; false: none.
                if let flag = value.bool {
                    values.systemdCoredump = flag ? CoredumpStore.defaultDirectory : nil
                } else {
                    values.systemdCoredump = try string(key, value)
                }
            case "symbols":
                guard let list = value.array else { throw Problem("\(path): \"symbols\" must be a list of paths") }
                for (index, item) in list.enumerated() {
                    values.symbols.append(try string(key, item, in: "symbols[\(index)]: "))
                }
            case "spools":
                guard let list = value.array else {
                    throw Problem("\(path): \"spools\" must be a list of {\"path\": …, \"app-id\": …, \"version\": …, \"format\": …, \"environment\": …}")
                }
                for (index, item) in list.enumerated() {
                    let place = "spools[\(index)]: "
                    guard case .object(let entry) = item else { throw Problem("\(path): \(place)expected an object") }
                    guard let spoolPath = item["path"] else { throw Problem("\(path): \(place)\"path\" is missing") }
                    var spool = Spool(path: try string("path", spoolPath, in: place))
                    for (name, member) in entry where name != "path" {
                        switch name {
                        case "app-id": spool.appID = try string(name, member, in: place)
                        case "app-key": spool.appKey = try string(name, member, in: place)
                        case "version": spool.version = try string(name, member, in: place)
                        case "environment": spool.environment = try string(name, member, in: place)
                        case "format":
                            let text = try string(name, member, in: place)
                            // Spools hold text reports; cores come through `agent capture`.
                            guard let format = ReportFormat(rawValue: text), !format.isBinary else {
                                let known = ReportFormat.allCases.filter { !$0.isBinary }.map(\.rawValue).joined(separator: ", ")
                                throw Problem("\(path): \(place)unknown format \"\(text)\" (one of \(known))")
                            }
                            spool.format = format
                        default:
                            throw Problem("\(path): \(place)unknown setting \"\(name)\" (known: \(spoolKeys.joined(separator: ", ")))")
                        }
                    }
                    values.spools.append(spool)
                }
            case "apps":
                guard let list = value.array else {
                    throw Problem("\(path): \"apps\" must be a list of {\"executable\": …, \"app-id\": …, \"app-key\": …, \"version\": …, \"environment\": …}")
                }
                for (index, item) in list.enumerated() {
                    let place = "apps[\(index)]: "
                    guard case .object(let entry) = item else { throw Problem("\(path): \(place)expected an object") }
                    guard let executable = item["executable"] else { throw Problem("\(path): \(place)\"executable\" is missing") }
                    guard let id = item["app-id"] else { throw Problem("\(path): \(place)\"app-id\" is missing") }
                    var app = App(executable: try string("executable", executable, in: place), appID: try string("app-id", id, in: place))
                    guard !app.executable.isEmpty, !app.executable.hasSuffix("/") else {
                        throw Problem("\(path): \(place)\"executable\" must be a program's absolute path or file name")
                    }
                    for (name, member) in entry where name != "executable" && name != "app-id" {
                        switch name {
                        case "app-key": app.appKey = try string(name, member, in: place)
                        case "version": app.version = try string(name, member, in: place)
                        case "environment": app.environment = try string(name, member, in: place)
                        default:
                            throw Problem("\(path): \(place)unknown setting \"\(name)\" (known: \(appKeys.joined(separator: ", ")))")
                        }
                    }
                    values.apps.append(app)
                }
            default:
                throw Problem("\(path): unknown setting \"\(key)\" (known: \(fileKeys.joined(separator: ", ")))")
            }
        }
        return values
    }
}

extension UInt8 {
    fileprivate var isASCIIAlnum: Bool {
        (self >= 0x30 && self <= 0x39) || (self >= 0x41 && self <= 0x5a) || (self >= 0x61 && self <= 0x7a)
    }
}
