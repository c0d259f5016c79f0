import Foundation
import Testing

/// The server remembers app key hashes for one second (AppKeyCache): a rotated key stops
/// working within that lag, and the new key works.
struct AppKeyCacheTests {
    @Test("a key replaced by `apps rotate-key` while the server runs stops working after the one-second lag")
    func rotatedKeyStopsAfterLag() throws {
        let server = try TestServer()
        let route = "/api/v1/apps/\(server.appID)/crashes"
        #expect(try server.request("GET", route).status == 200)  // the old key's hash is now remembered
        let rotated = try Binary.crashsym(["apps", "rotate-key", server.appID, "--data-dir", server.dataDirectory, "--format", "json"])
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(rotated.stdout.utf8)) as? [String: Any]
        let newKey = try #require(object?["key"] as? String)
        Thread.sleep(forTimeInterval: 1.2)
        let old = try server.request("GET", route)
        #expect(old.status == 401)
        #expect(old.errorCode == "unauthorized")
        #expect(try server.request("GET", route, key: .some(newKey)).status == 200)
        // A wrong key is refused at once, remembered hash or not.
        #expect(try server.request("GET", route, key: .some("csk_" + String(repeating: "0", count: 64))).status == 401)
    }
}
