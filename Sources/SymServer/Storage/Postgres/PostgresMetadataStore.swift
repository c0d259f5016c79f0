import Foundation
import Logging
import NIOCore
import PostgresNIO
import SymBundle

/// The shared metadata store: PostgreSQL through postgres-nio's `PostgresClient`, for several
/// `crashsym serve` nodes (`--database postgres://user@host/database`).
///
/// The same behaviour as the SQLite store (`MetadataStoreConformanceTests` runs against both),
/// with what several nodes need: migrations at start under an advisory lock, jobs leased with
/// `SELECT … FOR UPDATE SKIP LOCKED` for a time that expires unless renewed, and
/// `NOTIFY crashsym_jobs` in the transaction that queues work, which wakes idle workers of every
/// node (`jobNotifications`).
public final class PostgresMetadataStore: MetadataStore {
    let client: PostgresClient
    let logger: Logger
    let location: Location
    /// Wakes idle workers when a node queued jobs.
    let notifications: PostgresJobNotifications
    /// Commits the crashes of concurrent ingestion requests together.
    let ingestBatcher = PostgresIngestBatcher()

    /// Where to connect, read from a `postgres://user[:password]@host[:port]/database[?sslmode=…&sslrootcert=…]`
    /// URL (TLS: PostgresMetadataStore+TLS.swift).
    public struct Location: Sendable, Equatable {
        public var host: String
        public var port: Int
        public var user: String
        public var password: String?
        public var database: String
        /// TLS to the server, libpq's `sslmode` (default `prefer`).
        public var sslMode: SSLMode = .prefer
        /// PEM file of the certificate authorities to trust (`sslrootcert=`); nil: the system's.
        public var sslRootCertificate: String?

        /// Parses `url`; the password comes from the URL, else from `password` (the caller passes
        /// `CRASHSYM_DATABASE_PASSWORD`). Errors say what is wrong in one line.
        public init(url: String, password: String? = nil) throws {
            guard let components = URLComponents(string: url), components.scheme == "postgres" || components.scheme == "postgresql"
            else { throw StoreError.conflict("--database \(url): not a postgres://user@host/database URL") }
            guard let host = components.host, !host.isEmpty else { throw StoreError.conflict("--database \(url): no host") }
            guard let user = components.user, !user.isEmpty else { throw StoreError.conflict("--database \(url): no user (postgres://user@host/database)") }
            let database = String(components.path.drop { $0 == "/" })
            guard !database.isEmpty else { throw StoreError.conflict("--database \(url): no database name (postgres://user@host/database)") }
            self.host = host
            port = components.port ?? 5432
            self.user = user
            self.password = components.password ?? password
            self.database = database
            try readQuery(components.queryItems ?? [], url: url)
        }
    }

    /// A store over `location`; call `run()` (it keeps the connections) and then `migrate()`.
    /// `location`'s `sslrootcert` is read by `Location.init` (a missing or bad file fails there).
    public init(location: Location, logger: Logger) {
        var configuration = PostgresClient.Configuration(host: location.host, port: location.port, username: location.user,
                                                         password: location.password, database: location.database,
                                                         tls: location.clientTLS)
        configuration.options.maximumConnections = 16
        client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.logger = logger
        self.location = location
        notifications = PostgresJobNotifications()
    }

    /// Keeps the connection pool (and the LISTEN of idle workers) until the task is cancelled.
    public func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.client.run() }
            group.addTask { await self.listen() }
        }
    }

    /// Runs `body` with a store over `url`, migrated, its connections kept meanwhile.
    public static func with<T: Sendable>(url: String, password: String?, logger: Logger,
                                         _ body: @Sendable (PostgresMetadataStore) async throws -> T) async throws -> T {
        let store = PostgresMetadataStore(location: try Location(url: url, password: password), logger: logger)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                await store.run()
                return nil
            }
            defer { group.cancelAll() }
            try await store.migrate()
            return try await body(store)
        }
    }

    // MARK: Plumbing

    /// How long a request waits for a connection of the pool (PostgreSQL down or saturated)
    /// before it fails with `StoreError.unavailable`, which the API answers 503 with `Retry-After`.
    static let connectionWait: Duration = .seconds(15)

    /// All rows of `query` (outside a transaction).
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
        let (client, logger) = (client, logger)
        return try await mapped {
            try await client.withConnection { connection in
                var rows: [PostgresRow] = []
                for try await row in try await connection.query(query, logger: logger) { rows.append(row) }
                return rows
            }
        }
    }

    /// Runs `body` in one transaction.
    func transaction<T: Sendable>(_ body: @Sendable @escaping (Transaction) async throws -> T) async throws -> T {
        let (client, logger) = (client, logger)
        return try await mapped {
            try await client.withTransaction(logger: logger) { connection in
                try await body(Transaction(connection: connection, logger: logger))
            }
        }
    }

    /// A connection inside a transaction.
    struct Transaction: RowSource {
        let connection: PostgresConnection
        let logger: Logger

        @discardableResult
        func rows(_ query: PostgresQuery) async throws -> [PostgresRow] {
            var rows: [PostgresRow] = []
            for try await row in try await connection.query(query, logger: logger) { rows.append(row) }
            return rows
        }

        /// Whether `query` returns a row.
        func exists(_ query: PostgresQuery) async throws -> Bool { try await !rows(query).isEmpty }
    }

    /// Runs `body`, its failures as `StoreError`s; a wait for a connection longer than
    /// `connectionWait` ends it (the pool retries connecting to a server that is down for ever).
    private func mapped<T: Sendable>(_ body: @Sendable @escaping () async throws -> T) async throws -> T {
        do {
            return try await bounded(body)
        } catch {
            throw Self.storeError(error)
        }
    }

    /// Runs `body`, ended by a wait longer than `connectionWait` (`StoreError.unavailable`); its
    /// own failures are thrown as they are (PostgreSQL's), for callers that tell them apart.
    func bounded<T: Sendable>(_ body: @Sendable @escaping () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: Self.connectionWait)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let value = first else {
                throw StoreError.unavailable("PostgreSQL at \(location.host):\(location.port) did not answer within "
                    + "\(Self.connectionWait.components.seconds) s")
            }
            return value
        }
    }

    /// A failure of PostgreSQL or of the connection as a `StoreError`.
    static func storeError(_ error: any Error) -> StoreError {
        if let error = error as? StoreError { return error }
        if let error = error as? PostgresTransactionError {
            return storeError(error.closureError ?? error.commitError ?? error.beginError ?? StoreError.unavailable("transaction failed"))
        }
        if let error = error as? PSQLError {
            let message = error.serverInfo?[.message] ?? String(reflecting: error)
            // Class 23 (integrity) and 22 (data exception: a NUL byte in text, a value out of range)
            // are the request's fault and will fail again: 400, not 503 with a retry.
            if let state = error.serverInfo?[.sqlState], state.hasPrefix("23") || state.hasPrefix("22") { return .conflict(message) }
            return .unavailable("PostgreSQL: \(message)")
        }
        if error is CancellationError { return .unavailable("cancelled") }
        return .unavailable("PostgreSQL: \(String(reflecting: error))")
    }

    static func bytes(_ buffer: ByteBuffer?) -> [UInt8]? { buffer.map { Array($0.readableBytesView) } }

    // MARK: Schema

    /// Brings the schema up to date, under an advisory lock so that nodes starting together do
    /// not race; each migration runs once, recorded in `crashsym_migration`.
    ///
    /// It connects on its own (not through the pool, which retries for ever), so that a server
    /// that cannot be reached, a refused login or a missing database is a `StoreError` at once,
    /// with PostgreSQL's reason.
    public func migrate() async throws {
        let connection: PostgresConnection
        do {
            var configuration = PostgresConnection.Configuration(host: location.host, port: location.port, username: location.user,
                                                                 password: location.password, database: location.database,
                                                                 tls: try location.connectionTLS())
            configuration.options.connectTimeout = .seconds(10)
            connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
        } catch {
            throw StoreError.unavailable("cannot connect to PostgreSQL at \(location.host):\(location.port) as \(location.user) "
                + "(database \(location.database), sslmode=\(location.sslMode.rawValue)): \(location.connectionFailure(error))")
        }
        do {
            // A session lock, released when the connection closes even if a migration fails.
            _ = try await connection.query("SELECT pg_advisory_lock(\(Self.migrationLock))", logger: logger).collect()
            try await Self.applyMigrations(connection, logger: logger)
            try? await connection.close()
        } catch {
            try? await connection.close()
            throw Self.storeError(error)
        }
    }

    /// The advisory-lock key of migrations ("crashsym" in ASCII).
    static let migrationLock: Int64 = 0x6372_6173_6873_796d

    private static func applyMigrations(_ connection: PostgresConnection, logger: Logger) async throws {
        _ = try await connection.query("CREATE TABLE IF NOT EXISTS crashsym_migration (name TEXT PRIMARY KEY, applied_ms BIGINT NOT NULL)",
                                       logger: logger).collect()
        var applied = Set<String>()
        for try await name in try await connection.query("SELECT name FROM crashsym_migration", logger: logger).decode(String.self) {
            applied.insert(name)
        }
        for (name, statements) in PostgresSchema.migrations where !applied.contains(name) {
            try await connection.withTransaction(logger: logger) { connection in
                for statement in statements {
                    _ = try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger).collect()
                }
                _ = try await connection.query("INSERT INTO crashsym_migration (name, applied_ms) VALUES (\(name), \(currentMilliseconds()))",
                                               logger: logger).collect()
            }
        }
    }

    // MARK: Notifications

    private func listen() async {
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    // UNLISTEN is sent when the closure returns (the connection goes back to the pool).
                    try await connection.listen(on: "crashsym_jobs") { received in
                        for try await _ in received {
                            notifications.notify()
                        }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("LISTEN crashsym_jobs failed; retrying", metadata: ["error": "\(String(reflecting: error))"])
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    public var jobNotifications: (any JobNotifications)? { notifications }

    /// Reports wait for tables read asynchronously.
    public var immediateTables: (any ImmediateTableReader)? { nil }
}

/// Where a query's rows come from: the store's pool, or a transaction's connection.
protocol RowSource {
    func rows(_ query: PostgresQuery) async throws -> [PostgresRow]
}

extension PostgresMetadataStore: RowSource {}

/// Wakes workers waiting for jobs when `NOTIFY crashsym_jobs` arrives.
final class PostgresJobNotifications: JobNotifications {
    let events: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init() {
        (events, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func notify() { continuation.yield() }
}
