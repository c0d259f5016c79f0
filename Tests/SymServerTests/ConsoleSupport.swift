import Foundation

/// A browser-like client of the web console: curl with its own cookie jar, never following
/// redirects (tests look at each 303).
final class ConsoleClient {
    let server: TestServer
    let jar: String

    init(_ server: TestServer) {
        self.server = server
        jar = server.scratch + "/cookies-\(UUID().uuidString).txt"
    }

    func get(_ path: String) throws -> HTTPAnswer {
        try server.request("GET", path, key: .some(nil), extra: ["-b", jar, "-c", jar])
    }

    /// POST a form (`application/x-www-form-urlencoded`).
    func post(_ path: String, _ fields: [(String, String)]) throws -> HTTPAnswer {
        var extra = ["-b", jar, "-c", jar]
        for (name, value) in fields { extra += ["--data-urlencode", "\(name)=\(value)"] }
        return try server.request("POST", path, key: .some(nil), extra: extra)
    }

    /// Opens the sign-in page and submits it.
    func signIn(_ name: String, _ password: String) throws -> HTTPAnswer {
        let page = try get("/signin")
        guard page.status == 200, let token = Self.csrf(in: page.text) else { throw TestFailure("sign-in page: \(page.status)") }
        return try post("/signin", [("csrf", token), ("name", name), ("password", password), ("next", "/apps")])
    }

    /// The first form's CSRF token in a page.
    static func csrf(in html: String) -> String? {
        guard let range = html.range(of: "name=\"csrf\" value=\"") else { return nil }
        return String(html[range.upperBound...].prefix { $0 != "\"" })
    }
}

extension TestServer {
    /// `crashsym users create NAME` on this server's data directory; the password.
    func createUser(_ name: String, admin: Bool = false) throws -> String {
        let result = try Binary.crashsym(["users", "create", name, "--data-dir", dataDirectory, "--format", "json"]
            + (admin ? ["--admin"] : []))
        guard result.status == 0,
              let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
              object["name"] as? String == name, let password = object["password"] as? String else {
            throw TestFailure("users create \(name): \(result.status) \(result.stdout) \(result.stderr)")
        }
        return password
    }

    /// Posts `file` as a crash and waits until its group exists; the crash id and group id.
    func postProcessed(_ file: String, query: String = "version=1.0&host=web-1") throws -> (crash: String, group: String) {
        let posted = try post("crashes", file: file, query: query + "&wait=30")
        guard posted.status == 201, let id = posted.json["id"] as? String, let group = posted.json["group_id"] as? String else {
            throw TestFailure("crash not processed: \(posted.status) \(posted.text)")
        }
        return (id, group)
    }
}
