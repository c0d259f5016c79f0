import ArgumentParser
import CrashsymCommandLine
import Foundation
import Logging
import Metrics
import Prometheus
import SymServer
import Symbolication

/// Where the data directory comes from: shared by `serve` and `apps`.
struct ServerLocationOptions: ParsableArguments {
    @Option(name: .customLong("data-dir"), help: ArgumentHelp("Data directory: SQLite metadata and the object store (env CRASHSYM_DATA_DIR; default ./crashsym-data).", valueName: "dir"))
    var dataDirectory: String?

    @Option(help: ArgumentHelp("JSON config file whose keys are the option names, e.g. {\"port\": 8080} (env CRASHSYM_CONFIG).", valueName: "file"))
    var config: String?

    @Option(help: ArgumentHelp("Metadata in PostgreSQL instead of SQLite, shared by several servers: postgres://user@host[:port]/database[?sslmode=disable|prefer|require|verify-ca|verify-full&sslrootcert=ca.pem]; the password from the URL or CRASHSYM_DATABASE_PASSWORD (env CRASHSYM_DATABASE).", valueName: "url"))
    var database: String?

    @Option(name: .customLong("object-store"), help: ArgumentHelp("Where symbol files and raw crashes live: s3://bucket/prefix?endpoint=http://host:port&region=us-east-1 for an S3-compatible store shared by several nodes (credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN; env CRASHSYM_OBJECT_STORE); default: the directory under --data-dir. See docs/storage.md.", valueName: "url"))
    var objectStore: String?

    /// The server configuration these options (with the environment and config file) select.
    func configuration() throws -> ServerConfiguration {
        try ServerConfiguration.resolve(settings())
    }

    /// These options and `flags` with the environment and the config file, which is read here, once.
    func settings(_ flags: [String: String] = [:]) throws -> ServerSettings {
        var flags = flags
        flags["data-dir"] = dataDirectory ?? flags["data-dir"]
        flags["database"] = database ?? flags["database"]
        flags["object-store"] = objectStore ?? flags["object-store"]
        return try ServerSettings(flags: flags, configFile: config)
    }
}

extension Crashsym {
    /// `crashsym serve`: the symbol server.
    struct Serve: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run the symbol server: stores uploaded symbol bundles and serves them over HTTP.",
            discussion: """
                The HTTP API is described in docs/http-api.md. Metadata lives in SQLite and files in a \
                content-addressed store, both under the data directory; create apps and keys with \
                `crashsym apps create`. Each setting is taken from the flag, else the environment \
                variable CRASHSYM_<NAME> (e.g. CRASHSYM_MAX_BODY_BYTES), else the config file, else the \
                default. SIGTERM or SIGINT stops accepting connections and lets running requests finish.

                Example:
                  crashsym serve --data-dir /var/lib/crashsym --port 8080
                  CRASHSYM_MAX_CONCURRENT_UPLOADS=8 crashsym serve --config /etc/crashsym/serve.json
                """
        )

        @OptionGroup var location: ServerLocationOptions

        @Option(help: "Address to bind (default 127.0.0.1: loopback only).")
        var host: String?

        @Option(help: "TCP port (default 8080; 0 picks a free port, printed on startup).")
        var port: Int?

        @Option(name: .customLong("max-body-bytes"), help: "Largest accepted upload in bytes (default 2 GiB; 413 above).")
        var maxBodyBytes: UInt64?

        @Option(name: .customLong("max-concurrent-uploads"), help: "Uploads processed at once (default 4; 429 above).")
        var maxConcurrentUploads: Int?

        @Option(name: .customLong("request-timeout"), help: "Seconds allowed to receive an upload body (default 600; 408 above); a body silent that long has its connection closed.")
        var requestTimeout: Double?

        @Option(name: .customLong("header-timeout"), help: "Seconds allowed to receive a request's head, from the connection's start or the previous response (default 10); an idle connection is closed after as long.")
        var headerTimeout: Double?

        @Option(name: .customLong("max-connections"), help: "Connections served at once (default 512); further ones wait in the kernel's accept queue until one closes.")
        var maxConnections: Int?

        @Option(name: .customLong("max-entries"), help: "Most zip entries in a bundle (default 10000).")
        var maxEntries: Int?

        @Option(name: .customLong("max-uncompressed-bytes"), help: "Most uncompressed bytes in a bundle (default 8 GiB).")
        var maxUncompressedBytes: UInt64?

        @Option(name: .customLong("max-ratio"), help: "Highest compression ratio of a bundle entry over 1 MiB (default 100).")
        var maxRatio: UInt64?

        @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical (default info).")
        var logLevel: String?

        @Option(name: .customLong("max-report-bytes"), help: "Largest crash report accepted by POST crashes and symbolicate, in bytes (default 16 MiB; 413 above).")
        var maxReportBytes: Int?

        @Option(name: .customLong("max-report-frames"), help: "Most stack frames in one report (default 100000; such a crash is stored as failed, symbolicate answers 400).")
        var maxReportFrames: Int?

        @Option(name: .customLong("max-crashes-per-minute"), help: "Crashes accepted per app and minute (default 6000; 429 with Retry-After above; 0: no limit).")
        var maxCrashesPerMinute: Int?

        @Option(name: .customLong("retention-days"), help: "Delete crashes (and their raw bytes) older than this many days, in the background; group counts stay (default 90; 0: keep forever; fractions allowed).")
        var retentionDays: Double?

        @Option(name: .customLong("table-cache-mb"), help: "Symbol tables kept open between requests, in MiB (default 512).")
        var tableCacheMB: Int?

        @Option(name: .customLong("crash-workers"), help: "Crashes processed at once in the background (default 2).")
        var crashWorkers: Int?

        @Option(name: .customLong("max-minidump-bytes"), help: "Largest minidump upload (POST …/minidump) in bytes, counted after gzip decompression: the minidump with its annotations and attachments (default 64 MiB; 413 above).")
        var maxMinidumpBytes: Int?
        @Option(name: .customLong("job-lease-seconds"),
                help: "How long a crash job stays with a worker that stopped renewing it, e.g. a killed node (default 120).")
        var jobLeaseSeconds: Double?
        @Option(name: .customLong("max-crash-cpu-seconds"),
                help: "CPU seconds one crash may take to process before it is stored as failed with the reason (default 60).")
        var maxCrashCPUSeconds: Double?
        @Option(name: .customLong("pack-compaction-seconds"),
                help: "Seconds between passes rewriting crash packs without deleted crashes' bytes: a crash deleted by request leaves the disk or bucket within about this long (default 60).")
        var packCompactionSeconds: Double?

        @Option(name: .customLong("max-crash-bytes-in-flight"), help: "Most bytes of crash and minidump upload bodies held in memory at once, across requests (default 256 MiB; 503 with Retry-After above).")
        var maxCrashBytesInFlight: Int?

        @Option(name: .customLong("table-cache-dir"), help: ArgumentHelp("With an s3:// object store: where this node keeps the tables it fetched, to map them (default <data-dir>/table-cache).", valueName: "dir"))
        var tableCacheDirectory: String?

        @Option(name: .customLong("table-cache-dir-mb"), help: "Bound of --table-cache-dir in MiB; least recently used tables are removed first (default 10240).")
        var tableCacheDirectoryMB: Int?

        @Option(name: .customLong("object-grace-hours"), help: "Objects no row names are removed in the background once older than this many hours (default 24): what an upload interrupted between its files and its rows leaves.")
        var objectGraceHours: Double?

        @OptionGroup(title: "Notifications (webhooks)") var notifications: WebhookServeOptions

        var flags: [String: String] {
            var flags: [String: String] = [:]
            flags["table-cache-dir"] = tableCacheDirectory
            flags["table-cache-dir-mb"] = tableCacheDirectoryMB.map(String.init)
            flags["object-grace-hours"] = objectGraceHours.map { String($0) }
            flags["host"] = host
            flags["port"] = port.map(String.init)
            flags["max-body-bytes"] = maxBodyBytes.map(String.init)
            flags["max-concurrent-uploads"] = maxConcurrentUploads.map(String.init)
            flags["request-timeout"] = requestTimeout.map { String($0) }
            flags["header-timeout"] = headerTimeout.map { String($0) }
            flags["max-connections"] = maxConnections.map(String.init)
            flags["max-entries"] = maxEntries.map(String.init)
            flags["max-uncompressed-bytes"] = maxUncompressedBytes.map(String.init)
            flags["max-ratio"] = maxRatio.map(String.init)
            flags["log-level"] = logLevel
            flags["max-report-bytes"] = maxReportBytes.map(String.init)
            flags["max-report-frames"] = maxReportFrames.map(String.init)
            flags["max-crashes-per-minute"] = maxCrashesPerMinute.map(String.init)
            flags["retention-days"] = retentionDays.map { String($0) }
            flags["table-cache-mb"] = tableCacheMB.map(String.init)
            flags["crash-workers"] = crashWorkers.map(String.init)
            flags["max-minidump-bytes"] = maxMinidumpBytes.map(String.init)
            flags["job-lease-seconds"] = jobLeaseSeconds.map { String($0) }
            flags["max-crash-cpu-seconds"] = maxCrashCPUSeconds.map { String($0) }
            flags["pack-compaction-seconds"] = packCompactionSeconds.map { String($0) }
            flags["max-crash-bytes-in-flight"] = maxCrashBytesInFlight.map(String.init)
            flags.merge(notifications.flags) { given, _ in given }
            return flags
        }

        func run() async throws {
            // A process setting, made by the executable (as `dump` makes its own): requests free
            // tens of kilobytes next to a heap's top, which glibc would hand back and fault in again.
            HeapTuning.keepFreedHeap()
            let configuration: ServerConfiguration
            let crashConfiguration: CrashServiceConfiguration
            let webhooks: WebhookConfiguration
            do {
                let settings = try location.settings(flags)
                configuration = try ServerConfiguration.resolve(settings)
                crashConfiguration = try CrashServiceConfiguration.resolve(settings)
                webhooks = try WebhookConfiguration.resolve(settings)
            } catch {
                throw ValidationError("\(error)")
            }
            guard let level = Logger.Level(rawValue: configuration.logLevel) else {
                throw ValidationError("log-level: \"\(configuration.logLevel)\" is not a swift-log level")
            }
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
            // Every swift-metrics metric of the process (the server's, Hummingbird's, any
            // library's) goes to this registry, which `/metrics` renders.
            let registry = PrometheusCollectorRegistry()
            MetricsSystem.bootstrap(SymbolServer.metricsFactory(registry: registry))
            let logger = Logger(label: "crashsym.serve")
            if let database = configuration.database {
                try await serveShared(database: database, configuration: configuration, crashConfiguration: crashConfiguration,
                                      webhooks: webhooks, logger: logger, registry: registry)
                return
            }
            let server: SymbolServer
            do {
                server = try SymbolServer(configuration: configuration, logger: logger, metrics: registry,
                                          crashConfiguration: crashConfiguration, webhooks: webhooks)
            } catch {
                let reason = (error as? SymbolStore.OpenError)?.message ?? "cannot open the data directory \(configuration.dataDirectory): \(error)"
                FileOutput.standardError("crashsym: \(reason)\n")
                throw ExitCode.failure
            }
            try await Self.serve(server, configuration: configuration)
        }

        private static func serve(_ server: SymbolServer, configuration: ServerConfiguration) async throws {
            do {
                try await server.run { port in
                    // One line on stdout, so scripts starting the server on port 0 learn the port.
                    FileOutput.standardOutput("listening on http://\(configuration.host):\(port)\n")
                }
            } catch {
                FileOutput.standardError("crashsym: \(SymbolServer.startupFailure(error, host: configuration.host, port: configuration.port))\n")
                throw ExitCode.failure
            }
        }

        /// Serves with the metadata in PostgreSQL (files in the object store of `--object-store`, else under `--data-dir`).
        private func serveShared(database: String, configuration: ServerConfiguration, crashConfiguration: CrashServiceConfiguration,
                                 webhooks: WebhookConfiguration, logger: Logger, registry: PrometheusCollectorRegistry) async throws {
            let password = ProcessInfo.processInfo.environment["CRASHSYM_DATABASE_PASSWORD"]
            let store: PostgresMetadataStore
            do {
                store = PostgresMetadataStore(location: try PostgresMetadataStore.Location(url: database, password: password), logger: logger)
            } catch {
                FileOutput.standardError("crashsym: \((error as? StoreError)?.message ?? "\(error)")\n")
                throw ExitCode.failure
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await store.run() }
                defer { group.cancelAll() }
                do {
                    try await store.migrate()
                } catch {
                    FileOutput.standardError("crashsym: cannot open the database \(database): \((error as? StoreError)?.message ?? "\(error)")\n")
                    throw ExitCode.failure
                }
                let server: SymbolServer
                do {
                    let objects = try configuration.objectStorage.makeStore(dataDirectory: configuration.dataDirectory, logger: logger)
                        ?? DirectoryObjectStore(root: configuration.dataDirectory)
                    server = try SymbolServer(configuration: configuration, metadata: store, objects: objects,
                                              logger: logger, metrics: registry, crashConfiguration: crashConfiguration, webhooks: webhooks)
                } catch {
                    FileOutput.standardError("crashsym: cannot prepare the object store: \((error as? StoreError)?.message ?? "\(error)")\n")
                    throw ExitCode.failure
                }
                try await Self.serve(server, configuration: configuration)
            }
        }
    }
}
