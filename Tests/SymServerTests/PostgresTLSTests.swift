import Foundation
import Logging
import PostgresNIO
@testable import SymServer
import Testing

/// TLS to PostgreSQL (`sslmode`, `sslrootcert` in the `--database` URL) against a throw-away
/// cluster started with `ssl=on` and a certificate signed by a certificate authority this test
/// makes with openssl; a second authority stands for the wrong one.
struct PostgresTLSTests {
    /// The authority, the server's certificate (for 127.0.0.1) and key, and another authority.
    static func certificates(in directory: String) throws {
        let steps: [[String]] = [
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=crashsym test CA"],
            ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"],
            ["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem",
             "-days", "2", "-extfile", "san.ext"],
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "other.key", "-out", "other.pem", "-days", "2", "-subj", "/CN=another CA"],
        ]
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\n".write(toFile: directory + "/san.ext", atomically: true, encoding: .utf8)
        for step in steps {
            let result = try Binary.run("/bin/sh", ["-c", "cd '\(directory)' && exec openssl \"$@\"", "openssl"] + step)
            guard result.status == 0 else { throw TestFailure("openssl \(step.joined(separator: " ")): \(result.stderr)") }
        }
    }

    /// Whether the pool's connection of a store over `url` is encrypted (`pg_stat_ssl`).
    static func encrypted(_ url: String) async throws -> Bool {
        var logger = Logger(label: "test.tls")
        logger.logLevel = .critical
        return try await PostgresMetadataStore.with(url: url, password: nil, logger: logger) { store in
            let rows = try await store.rows("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            return try rows.first?.decode(Bool.self) ?? false
        }
    }

    /// Sets `ssl` and reloads, then waits until a new session sees it.
    static func setSSL(_ cluster: PostgresCluster, _ on: Bool) throws {
        _ = try cluster.psql("ALTER SYSTEM SET ssl = \(on ? "on" : "off")")
        _ = try cluster.psql("SELECT pg_reload_conf()")
        guard CrashFixtures.eventually(within: 60, { (try? cluster.psql("SHOW ssl").stdout.hasPrefix(on ? "on" : "off")) == true }) else {
            throw TestFailure("ssl did not become \(on)")
        }
    }

    @Test("sslmode: require and verify-full encrypt; verify-full with the wrong CA and require without TLS fail clearly")
    func tlsModes() async throws {
        try await PostgresCluster.with { cluster in
            let directory = cluster.directory + "/tls"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try Self.certificates(in: directory)
            // The key must be the server's own and private to it.
            for file in ["server.pem", "server.key"] {
                if getuid() == 0 { #expect(chown(directory + "/" + file, 65534, 65534) == 0) }
                #expect(chmod(directory + "/" + file, 0o600) == 0)
            }
            _ = try cluster.psql("ALTER SYSTEM SET ssl_cert_file = '\(directory)/server.pem'")
            _ = try cluster.psql("ALTER SYSTEM SET ssl_key_file = '\(directory)/server.key'")
            try Self.setSSL(cluster, true)

            let url = cluster.url()
            #expect(try await Self.encrypted(url + "?sslmode=require"))
            #expect(try await Self.encrypted(url + "?sslmode=verify-full&sslrootcert=\(directory)/ca.pem"))
            #expect(try await Self.encrypted(url + "?sslmode=verify-ca&sslrootcert=\(directory)/ca.pem"))
            #expect(try await Self.encrypted(url))  // prefer, the default
            #expect(try await !Self.encrypted(url + "?sslmode=disable"))

            // The command line, and a server, over verified TLS.
            let created = try Binary.crashsym(["apps", "create", "tls", "--id", "tls", "--database",
                                               url + "?sslmode=verify-full&sslrootcert=\(directory)/ca.pem"])
            #expect(created.status == 0, "\(created.stderr)")
            let server = try TestServer(database: url + "?sslmode=verify-full&sslrootcert=\(directory)/ca.pem")
            #expect(try server.get("versions").status == 200)
            #expect(try cluster.psql("SELECT count(*) FROM pg_stat_ssl WHERE ssl").stdout.trimmingCharacters(in: .whitespacesAndNewlines) != "0")

            let wrong = try Binary.crashsym(["apps", "list", "--database", url + "?sslmode=verify-full&sslrootcert=\(directory)/other.pem"])
            #expect(wrong.status == 1 && wrong.stderr.contains("TLS handshake failed") && wrong.stderr.contains("other.pem"), "\(wrong.stderr)")
            // Without a CA of its own, verify-full asks the system's, which do not know this one.
            let system = try Binary.crashsym(["apps", "list", "--database", url + "?sslmode=verify-full"])
            #expect(system.status == 1 && system.stderr.contains("TLS handshake failed"), "\(system.stderr)")
            let missing = try Binary.crashsym(["apps", "list", "--database", url + "?sslmode=verify-full&sslrootcert=\(directory)/none.pem"])
            #expect(missing.status != 0 && missing.stderr.contains("none.pem"), "\(missing.stderr)")
            let mode = try Binary.crashsym(["apps", "list", "--database", url + "?sslmode=verify"])
            #expect(mode.status != 0 && mode.stderr.contains("verify-full"), "\(mode.stderr)")

            try Self.setSSL(cluster, false)
            let plain = try Binary.crashsym(["apps", "list", "--database", url + "?sslmode=require"])
            #expect(plain.status == 1 && plain.stderr.contains("does not accept TLS"), "\(plain.stderr)")
            #expect(try await !Self.encrypted(url))
        }
    }
}
