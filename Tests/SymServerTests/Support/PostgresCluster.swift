import Foundation

/// A throw-away PostgreSQL 15 cluster for one test: `initdb` in a temporary directory and
/// the server on a free port of 127.0.0.1, run as the unprivileged user `nobody` when the tests run
/// as root (PostgreSQL refuses root). `with` removes it afterwards, whatever happens.
///
/// Needs Debian's `postgresql-15` (`scripts/deps test` installs it).
final class PostgresCluster {
    static let binaries = "/usr/lib/postgresql/15/bin"
    let directory: String
    let port: Int
    /// The postmaster (under `runuser` when root).
    private(set) var server: Process

    init(directory: String, port: Int, server: Process) {
        self.directory = directory
        self.port = port
        self.server = server
    }
    /// The superuser that the tests connect as (trust authentication on 127.0.0.1).
    static let user = "crashsym"

    /// `postgres://crashsym@127.0.0.1:PORT/DATABASE`.
    func url(database: String = "postgres") -> String { "postgres://\(Self.user)@127.0.0.1:\(port)/\(database)" }

    /// Runs `body` with a started cluster, then stops and deletes it.
    static func with<T>(_ body: (PostgresCluster) async throws -> T) async throws -> T {
        let cluster = try start()
        defer { cluster.stop() }
        return try await body(cluster)
    }

    /// Initialises and starts a cluster (about a second with `--no-sync`).
    static func start() throws -> PostgresCluster {
        guard FileManager.default.isExecutableFile(atPath: binaries + "/initdb") else {
            throw TestFailure("PostgreSQL 15 is not installed (\(binaries)/initdb): run scripts/deps test")
        }
        let directory = try Binary.temporaryDirectory()
        if getuid() == 0 {
            guard chown(directory, 65534, 65534) == 0 else { throw TestFailure("chown nobody \(directory) failed") }
        }
        let initdb = try run(binaries + "/initdb", ["-D", directory + "/data", "-U", user, "--auth=trust", "-E", "UTF8",
                                                    "--locale=C.UTF-8", "--no-sync"])
        guard initdb.status == 0 else {
            try? FileManager.default.removeItem(atPath: directory)
            throw TestFailure("initdb failed: \(initdb.stderr)")
        }
        // The server runs as this process's child, not daemonised by `pg_ctl start`: Foundation's
        // Process never sees a `pg_ctl start` end while the server it forked lives. A port that is
        // free now; a clash with another test's cluster is retried.
        for _ in 0..<5 {
            let port = try freePort()
            if let server = try launch(directory: directory, port: port) {
                return PostgresCluster(directory: directory, port: port, server: server)
            }
        }
        let log = (try? String(contentsOfFile: directory + "/log", encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: directory)
        throw TestFailure("postgres did not start: \(log)")
    }

    /// Starts the postmaster on `port` and waits until it accepts connections; nil when it exits
    /// first (the port was taken meanwhile).
    private static func launch(directory: String, port: Int) throws -> Process? {
        let server = Process()
        server.executableURL = URL(fileURLWithPath: getuid() == 0 ? "/usr/sbin/runuser" : binaries + "/postgres")
        server.arguments = (getuid() == 0 ? ["-u", "nobody", "--", binaries + "/postgres"] : [])
            + ["-D", directory + "/data", "-p", String(port), "-k", directory, "-h", "127.0.0.1", "-F", "-c", "max_connections=200"]
        server.standardInput = FileHandle.nullDevice
        if !FileManager.default.fileExists(atPath: directory + "/log") {
            _ = FileManager.default.createFile(atPath: directory + "/log", contents: nil)
        }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/log"))
        try log.seekToEnd()
        server.standardOutput = log
        server.standardError = log
        try server.run()
        try log.close()
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline && server.isRunning {
            if try Binary.run(binaries + "/pg_isready", ["-h", "127.0.0.1", "-p", String(port), "-t", "1"]).status == 0 {
                return server
            }
            usleep(100_000)
        }
        if server.isRunning { kill(server.processIdentifier, SIGKILL) }
        server.waitUntilExit()
        return nil
    }

    /// Stops the server at once (SIGQUIT to the postmaster), keeping the cluster's files.
    func stopServer() {
        if let pid = (try? String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8))?
            .split(separator: "\n").first.flatMap({ Int32($0) }) {
            kill(pid, SIGQUIT)
        }
        server.waitUntilExit()
    }

    /// Starts the server again on the same port.
    func restartServer() throws {
        guard let server = try Self.launch(directory: directory, port: port) else {
            throw TestFailure("postgres did not restart: \((try? String(contentsOfFile: directory + "/log", encoding: .utf8)) ?? "")")
        }
        self.server = server
    }

    /// Stops the cluster at once and deletes its directory.
    func stop() {
        stopServer()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs SQL through `psql` (for test setup such as `CREATE DATABASE`).
    func psql(_ sql: String, database: String = "postgres") throws -> Binary.Output {
        try Binary.run("/usr/bin/psql", ["-h", "127.0.0.1", "-p", String(port), "-U", Self.user, "-d", database,
                                         "-v", "ON_ERROR_STOP=1", "-At", "-c", sql])
    }

    /// Runs a PostgreSQL program, as `nobody` when this process is root.
    private static func run(_ program: String, _ arguments: [String]) throws -> Binary.Output {
        if getuid() == 0 {
            return try Binary.run("/usr/sbin/runuser", ["-u", "nobody", "--", program] + arguments)
        }
        return try Binary.run(program, arguments)
    }

    /// A TCP port of 127.0.0.1 that nothing listens on now.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw TestFailure("bind failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
