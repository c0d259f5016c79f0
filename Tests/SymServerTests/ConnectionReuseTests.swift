import Foundation
import Logging
import SymBundle
import SymClient
import Testing

/// The upload client keeps its libcurl handle, and with it the connection, between requests: a
/// run's requests to `crashsym serve` share one connection instead of opening one each (counted
/// by the server: `crashsym_http_connections_total`).
@Suite struct ConnectionReuseTests {
    /// The server's count of accepted connections, this scrape's own included.
    static func connections(_ server: TestServer) throws -> Int {
        let text = try server.request("GET", "/metrics", key: .some(nil)).text
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("crashsym_http_connections_total ") })
        return try #require(Double(line.split(separator: " ").last ?? "").map { Int($0) })
    }

    @Test("requests in a row from one SymbolClient go over one connection")
    func uploadClientReusesItsConnection() throws {
        let server = try TestServer()
        let client = try SymbolClient(configuration: ClientConfiguration(
            server: "http://127.0.0.1:\(server.port)", appID: server.appID, appKey: server.key, userAgent: "crashsym-tests",
            deadline: .now + .seconds(120)), logger: Logger(label: "test"))
        let request = MissingSymbolsRequest(version: "1.0", package: "com.example.app", platform: "linux",
                                            modules: [.init(buildID: "0123456789abcdef0123456789abcdef01234567", name: "libfoo.so", arch: "x86_64")])
        let before = try Self.connections(server)
        let requests = 12
        for _ in 0..<requests {
            #expect(try client.missingSymbols(request).missing.count == 1)
        }
        // Less the second scrape's own connection.
        let opened = try Self.connections(server) - before - 1
        #expect((1...2).contains(opened), "\(opened) connections for \(requests) requests")
    }
}
