import Foundation
import Hummingbird
import Logging
import NIOCore
import Prometheus
import ServiceLifecycle
import SymBundle

/// The `crashsym serve` application: the HTTP API of docs/http-api.md over a `SymbolStore`.
///
/// Runs as one `ServiceGroup`; SIGTERM and SIGINT stop accepting connections and let in-flight
/// requests finish.
public struct SymbolServer: Sendable {
    /// The resolved configuration.
    public let configuration: ServerConfiguration
    /// Apps, symbols, crashes, groups, people and webhooks (SQLite or PostgreSQL).
    let metadata: any MetadataStore
    /// Files: tables, debug files, raw crashes.
    let objects: ObjectStore
    let logger: Logger
    let metrics: ServerMetrics
    /// What `/metrics` renders: the registry of the process's metrics factory (`metricsFactory`).
    let registry: PrometheusCollectorRegistry
    let uploads: UploadLimiter
    /// The crash service: ingestion, processing, symbolication, groups.
    let crashes: CrashService
    /// App key hashes read from the store, remembered for a second.
    let keyCache = AppKeyCache()

    /// Notifications: spike rule, links, delivery limits.
    let webhooks: WebhookConfiguration

    /// Opens the data directory (removing scratch files an interrupted run left) and prepares
    /// the routes; `run()` starts serving. The server's metrics are created here, through
    /// swift-metrics' factory: bootstrap it first (`metricsFactory(registry:)` over `metrics`).
    public init(configuration: ServerConfiguration, logger: Logger, metrics: PrometheusCollectorRegistry,
                crashConfiguration: CrashServiceConfiguration = CrashServiceConfiguration(),
                webhooks: WebhookConfiguration = WebhookConfiguration()) throws {
        let store = try SymbolStore(dataDirectory: configuration.dataDirectory,
                                    objects: configuration.objectStorage.makeStore(dataDirectory: configuration.dataDirectory, logger: logger))
        try self.init(configuration: configuration, metadata: CrashStore(symbols: store), objects: store.objects, logger: logger,
                      metrics: metrics, crashConfiguration: crashConfiguration, webhooks: webhooks)
    }

    /// The server over an opened metadata store (`PostgresMetadataStore` for several nodes) and
    /// object store.
    public init(configuration: ServerConfiguration, metadata: any MetadataStore, objects: any ObjectStore, logger: Logger,
                metrics: PrometheusCollectorRegistry, crashConfiguration: CrashServiceConfiguration = CrashServiceConfiguration(),
                webhooks: WebhookConfiguration = WebhookConfiguration()) throws {
        self.configuration = configuration
        self.logger = logger
        self.metadata = metadata
        self.objects = objects
        try objects.removeLeftovers()
        registry = metrics
        self.metrics = ServerMetrics()
        uploads = UploadLimiter(limit: configuration.maxConcurrentUploads)
        crashes = CrashService(metadata: metadata, objects: objects, configuration: crashConfiguration, logger: logger,
                               spike: CrashStore.SpikeRule(factor: webhooks.spikeFactor, minimum: webhooks.spikeMinimum))
        self.webhooks = webhooks
    }

    /// Serves until SIGTERM or SIGINT, then drains in-flight requests. `onListening` receives the
    /// bound port (useful with port 0).
    ///
    /// Connections over `maxConnections` are not accepted until one closes (they wait in the
    /// kernel's accept queue); each connection gets `headerTimeout` for each request's head
    /// (`ConnectionGuard`) and `requestTimeout` of silence inside a body (Hummingbird's idle
    /// timeout, which counts only once a head has arrived or a response is written).
    public func run(onListening: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let idle = TimeAmount.nanoseconds(Int64(configuration.requestTimeout * 1e9))
        let header = TimeAmount.nanoseconds(Int64(configuration.headerTimeout * 1e9))
        let maxBodyBytes = configuration.maxBodyBytes
        let metrics = metrics
        let application = Application(
            router: makeRouter(),
            server: .http1(configuration: .init(
                additionalChannelHandlers: [
                    ContinueHandler(maxBodyBytes: maxBodyBytes), ConnectionGuard(headerTimeout: header, metrics: metrics),
                ],
                idleTimeout: idle)),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "crashsym",
                                 availableConnectionsDelegate: .maximum(configuration.maxConnections, logger: logger)),
            onServerRunning: { channel in
                // One connection per accept, so that `maxConnections` is exact (NIO accepts up to
                // four at a time, past the limit).
                try? await channel.setOption(ChannelOptions.maxMessagesPerRead, value: 1).get()
                await onListening(channel.localAddress?.port ?? 0)
            },
            logger: logger
        )
        let group = ServiceGroup(configuration: .init(
            services: [application,
                       CrashProcessor(service: crashes, workers: crashes.configuration.workers),
                       RetentionService(service: crashes, days: crashes.configuration.retentionDays),
                       RegroupService(service: crashes),

                       WebhookDeliveryService(store: crashes.store, configuration: webhooks, logger: logger,
                                              signal: crashes.webhookSignal),
                       ObjectSweeper(objects: objects, crashes: crashes.store,
                                     graceSeconds: Int64(configuration.objectStorage.graceHours * 3600), logger: logger),
                       PackCompactor(objects: objects, store: crashes.store,
                                     interval: .milliseconds(Int64(crashes.configuration.packCompactionSeconds * 1000)), logger: logger),
                       SignInFailureSweeper(store: crashes.store, logger: logger)],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }

    func makeRouter() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: RequestMiddleware(metrics: metrics))
        router.add(middleware: MetricsMiddleware())
        // A store that cannot be reached (PostgreSQL down) is a 503 with Retry-After on every route.
        router.add(middleware: StoreErrorMiddleware())
        router.get("healthz") { _, _ in Self.json(["status": "ok"]) }
        router.get("metrics") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
        let apps = router.group("api/v1/apps/:appId")
        apps.post("symbols/missing") { request, context in try await missing(request, context) }
        apps.post("symbols") { request, context in try await upload(request, context) }
        apps.get("versions") { request, context in try await versions(request, context) }
        apps.get("versions/:version/modules") { request, context in try await modules(request, context) }
        router.get("buildid/:buildId/debuginfo") { request, context in try await debugFile(request, context) }
        router.get("buildid/:buildId/executable") { request, context in try await debugFile(request, context) }
        addCrashServiceRoutes(to: router)
        addWebhookRoutes(to: router)
        addConsoleRoutes(to: router)
        return router
    }

    // MARK: Auth

    /// The app id of the URL once the bearer key is checked; an unknown app and a wrong key both
    /// get the same 401.
    func authenticate(_ request: Request, _ context: BasicRequestContext) async throws -> String {
        let appID = try context.parameters.require("appId")
        let key = Self.bearerToken(request.headers[.authorization] ?? "") ?? ""
        // The stored hash, remembered for a second (AppKeyCache: a rotated key works that much longer).
        let stored = BundleManifest.isIdentifier(appID)
            ? try await keyCache.hash(appID: appID) { try await metadata.keyHash(appID: appID) } : nil
        guard AppKey.matches(key, stored: stored) else {
            metrics.rejected("unauthorized")
            throw ServerError(.unauthorized, "missing or invalid app key")
        }
        return appID
    }

    /// The token of an `Authorization: Bearer <token>` value. The scheme is matched without
    /// regard to case (RFC 7235 §2.1: `bearer`, `BEARER`); spaces around the token are ignored.
    /// The token is trimmed of what Foundation's `CharacterSet.whitespaces` holds on Linux (tab,
    /// the Unicode space separators and ZERO WIDTH SPACE), scalar by scalar without Foundation:
    /// `trimmingCharacters` took a fiftieth of the server's time on `POST …/symbolicate`.
    static func bearerToken(_ value: String) -> String? {
        let trimmed = value.drop { $0 == " " || $0 == "\t" }
        guard let space = trimmed.firstIndex(where: { $0 == " " || $0 == "\t" }) else { return nil }
        // ASCII letters only: `| 0x20` lowercases them and maps nothing else onto "bearer".
        let scheme = trimmed[..<space].unicodeScalars
        guard scheme.count == 6, zip(scheme, "bearer".unicodeScalars).allSatisfy({ $0.value | 0x20 == $1.value }) else { return nil }
        func isSpace(_ scalar: Unicode.Scalar) -> Bool {
            scalar == "\t" || scalar == "\u{200B}" || scalar.properties.generalCategory == .spaceSeparator
        }
        var token = trimmed[space...].unicodeScalars
        while let first = token.first, isSpace(first) { token = token.dropFirst() }
        while let last = token.last, isSpace(last) { token = token.dropLast() }
        return String(token)
    }

    // MARK: Helpers

    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = (try? encoder.encode(value)) ?? Data()
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}
