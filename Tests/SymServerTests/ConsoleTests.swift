import Foundation
import Testing

/// The web console over real HTTP against `crashsym serve`: accounts, sessions, CSRF, access
/// between people and apps, escaping of hostile report content, every page.
@Suite(.serialized)
struct ConsoleTests {
    static let asan = CrashFixtures.reports + "/asan-use-after-free.txt"

    @Test("users create/grant/list/reset-password through the crashsym binary; bad names and unknown users fail")
    func usersCommands() throws {
        let server = try TestServer()
        let password = try server.createUser("alice", admin: true)
        #expect(password.count == 20)
        _ = try server.createUser("bob")
        let duplicate = try Binary.crashsym(["users", "create", "bob", "--data-dir", server.dataDirectory])
        #expect(duplicate.status == 1)
        #expect(duplicate.stderr.contains("already exists"))
        #expect(try Binary.crashsym(["users", "create", "bad name", "--data-dir", server.dataDirectory]).status == 2)
        #expect(try Binary.crashsym(["users", "grant", "bob", server.appID, "--data-dir", server.dataDirectory]).status == 0)
        #expect(try Binary.crashsym(["users", "grant", "bob", "no-such-app", "--data-dir", server.dataDirectory]).status == 1)
        #expect(try Binary.crashsym(["users", "grant", "carol", server.appID, "--data-dir", server.dataDirectory]).status == 1)
        let list = try Binary.crashsym(["users", "list", "--data-dir", server.dataDirectory, "--format", "json"])
        let users = list.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(users.map { $0["name"] as? String } == ["alice", "bob"])
        #expect(users.map { $0["admin"] as? Bool } == [true, false])
        #expect(users.last?["apps"] as? [String] == [server.appID])
        #expect(!list.stdout.contains(password))
        let reset = try Binary.crashsym(["users", "reset-password", "alice", "--data-dir", server.dataDirectory, "--format", "json"])
        let newPassword = (try JSONSerialization.jsonObject(with: Data(reset.stdout.utf8)) as? [String: Any])?["password"] as? String
        #expect(reset.status == 0 && newPassword != nil && newPassword != password)
        let console = ConsoleClient(server)
        #expect(try console.signIn("alice", password).status == 401)
        #expect(try console.signIn("alice", newPassword ?? "").status == 303)
        #expect(try Binary.crashsym(["users", "reset-password", "nobody", "--data-dir", server.dataDirectory]).status == 1)
    }

    @Test("a wrong password is refused; five in a row lock the name (known or not) until reset-password")
    func wrongPasswordAndLockout() throws {
        let server = try TestServer()
        let password = try server.createUser("alice")
        let console = ConsoleClient(server)
        let wrong = try console.signIn("alice", password + "x")
        #expect(wrong.status == 401)
        #expect(wrong.text.contains("Wrong name or password."))
        #expect(wrong.headers["set-cookie"]?.contains("crashsym_session") != true)
        #expect(try console.get("/apps").status == 303)
        for _ in 0..<3 { #expect(try console.signIn("alice", "nope").status == 401) }
        let locked = try console.signIn("alice", "nope")
        #expect(locked.status == 429)
        #expect(locked.text.contains("Too many wrong passwords"))
        // Locked: even the right password is refused now.
        #expect(try console.signIn("alice", password).status == 429)
        // A name without an account locks the same way, so the lockout tells nothing about names.
        for _ in 0..<4 { #expect(try console.signIn("mallory", "nope").status == 401) }
        #expect(try console.signIn("mallory", "nope").status == 429)
        let reset = try Binary.crashsym(["users", "reset-password", "alice", "--data-dir", server.dataDirectory, "--format", "json"])
        let newPassword = (try JSONSerialization.jsonObject(with: Data(reset.stdout.utf8)) as? [String: Any])?["password"] as? String ?? ""
        let signedIn = try console.signIn("alice", newPassword)
        #expect(signedIn.status == 303)
        #expect(signedIn.headers["location"] == "/apps")
        #expect(try console.get("/apps").status == 200)
    }

    @Test("the session cookie is HTTP-only and SameSite=Strict, survives a server restart, and ends at sign-out")
    func sessionLifecycle() throws {
        let server = try TestServer()
        let password = try server.createUser("alice", admin: true)
        let console = ConsoleClient(server)
        #expect(try console.get("/").headers["location"] == "/signin")
        let unsigned = try console.get("/apps/\(server.appID)")
        #expect(unsigned.status == 303)
        #expect(unsigned.headers["location"]?.hasPrefix("/signin?next=") == true)
        // The way back keeps a query with &, + and %: the sign-in form's `next` is the page asked for.
        let back = "/apps/\(server.appID)?q=a+b%2Bc&state=all"
        let signInPage = try console.get(try console.get(back).headers["location"] ?? "")
        #expect(signInPage.text.contains("name=\"next\" value=\"\(back.replacingOccurrences(of: "&", with: "&amp;"))\""))
        let signedIn = try console.signIn("alice", password)
        #expect(signedIn.status == 303)
        let cookie = signedIn.headers["set-cookie"] ?? ""  // the last Set-Cookie: the session's
        #expect(cookie.contains("crashsym_session="))
        #expect(cookie.contains("HttpOnly"))
        #expect(cookie.contains("SameSite=Strict"))
        #expect(!cookie.contains("Secure"))
        let apps = try console.get("/apps")
        #expect(apps.status == 200)
        #expect(apps.text.contains("alice (admin)"))

        #expect(server.terminate() == 0)
        try server.start()
        let afterRestart = try console.get("/apps")
        #expect(afterRestart.status == 200)
        #expect(afterRestart.text.contains("alice (admin)"))

        guard let token = ConsoleClient.csrf(in: afterRestart.text) else { throw TestFailure("no sign-out form") }
        #expect(try console.post("/signout", []).status == 403)
        let out = try console.post("/signout", [("csrf", token)])
        #expect(out.status == 303)
        #expect(out.headers["location"] == "/signin")
        #expect(try console.get("/apps").status == 303)
    }

    @Test("with an https public URL the session cookie is Secure")
    func secureCookie() throws {
        let server = try TestServer(arguments: ["--public-url", "https://crashes.example.com"])
        let password = try server.createUser("alice", admin: true)
        let signedIn = try ConsoleClient(server).signIn("alice", password)
        #expect(signedIn.headers["set-cookie"]?.contains("crashsym_session=") == true)
        #expect(signedIn.headers["set-cookie"]?.contains("Secure") == true)
    }

    @Test("forms without the session's CSRF token are refused and change nothing")
    func csrf() throws {
        let server = try TestServer()
        let crash = try server.postProcessed(Self.asan)
        let password = try server.createUser("alice", admin: true)
        let console = ConsoleClient(server)
        // Sign-in itself needs the token of the sign-in page's cookie.
        #expect(try console.post("/signin", [("name", "alice"), ("password", password)]).status == 403)
        #expect(try console.signIn("alice", password).status == 303)
        let page = try console.get("/apps/\(server.appID)/groups/\(crash.group)")
        #expect(page.status == 200)
        guard let token = ConsoleClient.csrf(in: page.text) else { throw TestFailure("no form") }
        let path = "/apps/\(server.appID)/groups/\(crash.group)/state"
        #expect(try console.post(path, [("state", "resolved")]).status == 403)
        #expect(try console.post(path, [("state", "resolved"), ("csrf", String(repeating: "0", count: 64))]).status == 403)
        #expect(try server.get("groups/\(crash.group)").json["state"] as? String == "open")
        let resolved = try console.post(path, [("state", "resolved"), ("csrf", token)])
        #expect(resolved.status == 303)
        #expect(resolved.headers["location"] == "/apps/\(server.appID)/groups/\(crash.group)")
        #expect(try server.get("groups/\(crash.group)").json["state"] as? String == "resolved")
        #expect(try console.post(path, [("state", "open"), ("csrf", token)]).status == 303)
        #expect(try server.get("groups/\(crash.group)").json["state"] as? String == "open")
        #expect(try console.post(path, [("state", "bogus"), ("csrf", token)]).status == 400)
        // Another person's token is not this session's.
        let other = ConsoleClient(server)
        #expect(try other.signIn("alice", password).status == 303)
        let otherToken = ConsoleClient.csrf(in: try other.get("/apps").text) ?? ""
        #expect(otherToken != token)
        #expect(try console.post(path, [("state", "ignored"), ("csrf", otherToken)]).status == 403)
        let again = "/apps/\(server.appID)/crashes/\(crash.crash)/symbolicate"
        #expect(try console.post(again, []).status == 403)
        #expect(try console.post(again, [("csrf", token)]).status == 303)
    }

    @Test("a user sees only granted apps: others answer 404 like unknown ones; an admin sees all")
    func accessControl() throws {
        let server = try TestServer()
        let crash = try server.postProcessed(Self.asan)
        let bobPassword = try server.createUser("bob")
        let adminPassword = try server.createUser("root", admin: true)
        let bob = ConsoleClient(server)
        #expect(try bob.signIn("bob", bobPassword).status == 303)
        let paths = ["/apps/\(server.appID)", "/apps/\(server.appID)/symbols", "/apps/\(server.appID)/groups/\(crash.group)",
                     "/apps/\(server.appID)/crashes/\(crash.crash)", "/apps/\(server.appID)/crashes/\(crash.crash)/raw",
                     "/apps/\(server.appID)/crashes/\(crash.crash)/json"]
        for path in paths { #expect(try bob.get(path).status == 404, "\(path)") }
        #expect(try bob.get("/apps/no-such-app").status == 404)
        let token = ConsoleClient.csrf(in: try bob.get("/apps").text) ?? ""
        #expect(try bob.post("/apps/\(server.appID)/groups/\(crash.group)/state", [("state", "ignored"), ("csrf", token)]).status == 404)
        #expect(try server.get("groups/\(crash.group)").json["state"] as? String == "open")
        #expect(!(try bob.get("/apps").text.contains("/apps/\(server.appID)\"")))

        #expect(try Binary.crashsym(["users", "grant", "bob", server.appID, "--data-dir", server.dataDirectory]).status == 0)
        for path in paths { #expect(try bob.get(path).status == 200, "\(path)") }
        #expect(try bob.get("/apps").text.contains("href=\"/apps/\(server.appID)\""))

        let admin = ConsoleClient(server)
        #expect(try admin.signIn("root", adminPassword).status == 303)
        for path in paths { #expect(try admin.get(path).status == 200, "\(path)") }
    }

    @Test("hostile names from a report, host and system labels and an app name are shown as text, never as markup")
    func escaping() throws {
        let server = try TestServer()
        let report = server.scratch + "/hostile.txt"
        try """
            /tmp/x/libevil.so(<script>alert(1)</script>+0x2d)[0x7f7d10b228dd]
            /tmp/<b>bold</b>/libevil2.so(+0x17)[0x7f7d10b228c7]

            """.write(toFile: report, atomically: true, encoding: .utf8)
        let crash = try server.postProcessed(report, query: "version=1.0&host=%3Cimg%20src%3Dx%20onerror%3Dalert(2)%3E"
                                                 + "&system=%3Cscript%3Ealert(3)%3C%2Fscript%3E")
        let created = try Binary.crashsym(["apps", "create", "<i>evil app</i>", "--id", "evil", "--data-dir", server.dataDirectory])
        #expect(created.status == 0)
        let password = try server.createUser("alice", admin: true)
        let console = ConsoleClient(server)
        #expect(try console.signIn("alice", password).status == 303)
        let pages = [
            "/apps", "/apps/\(server.appID)", "/apps/\(server.appID)/groups/\(crash.group)",
            "/apps/\(server.appID)/crashes/\(crash.crash)", "/apps/\(server.appID)/symbols",
        ]
        var sawReportName = false
        for path in pages {
            let page = try console.get(path)
            #expect(page.status == 200, "\(path)")
            #expect(!page.text.contains("<script"), "\(path)")
            #expect(!page.text.contains("<img"), "\(path)")
            #expect(!page.text.contains("<b>"), "\(path)")
            #expect(!page.text.contains("<i>"), "\(path)")
            if page.text.contains("libevil.so(&lt;script&gt;alert") { sawReportName = true }
            #expect(page.headers["content-security-policy"]?.contains("default-src 'none'") == true)
        }
        #expect(sawReportName)
        #expect(try console.get("/apps").text.contains("&lt;i&gt;evil app&lt;/i&gt;"))
        let group = try console.get("/apps/\(server.appID)/groups/\(crash.group)").text
        #expect(group.contains("&lt;img src=x onerror=alert(2)&gt;"))
        let crashPage = try console.get("/apps/\(server.appID)/crashes/\(crash.crash)").text
        #expect(crashPage.contains("/tmp/&lt;b&gt;bold&lt;/b&gt;/libevil2.so"))
        #expect(crashPage.contains("<dt>System</dt><dd>&lt;script&gt;alert(3)"))
        // The raw report is served as sandboxed plain text.
        let raw = try console.get("/apps/\(server.appID)/crashes/\(crash.crash)/raw")
        #expect(raw.headers["content-type"] == "text/plain; charset=utf-8")
        #expect(raw.headers["content-security-policy"]?.contains("sandbox") == true)
        #expect(raw.headers["x-content-type-options"] == "nosniff")
    }

    @Test("every page renders: groups filtered, sorted and paged by cursor; a group; a crash with inlined frames; symbols")
    func pages() throws {
        let server = try TestServer()
        let tables = try CrashFixtures.tables(into: server.scratch + "/tables")
        try CrashFixtures.upload(tables, to: server, version: "1.0")
        var groups = Set<String>()
        var asanCrash = ""
        for (index, file) in CrashFixtures.reportFiles.enumerated() where file.hasSuffix(".txt") {
            let crash = try server.postProcessed(CrashFixtures.reports + "/" + file,
                                                 query: "version=\(index % 2 == 0 ? "1.0" : "2.0")&host=h\(index % 3)")
            groups.insert(crash.group)
            if file == "asan-use-after-free.txt" { asanCrash = crash.crash }
        }
        #expect(groups.count > 5)
        let password = try server.createUser("alice", admin: true)
        let console = ConsoleClient(server)
        #expect(try console.signIn("alice", password).status == 303)

        let apps = try console.get("/apps")
        #expect(apps.text.contains("<svg class=\"sparkline\""))
        let base = "/apps/\(server.appID)"
        let all = try console.get(base)
        #expect(all.status == 200)
        #expect(all.text.contains("<svg class=\"chart\""))
        #expect(Self.groupLinks(all.text).count == groups.count)
        // Pages of 50 are too many for these fixtures; the cursor is checked on the store's own
        // order: the first page's groups sorted by count, then the same order resumed after one.
        let v1 = try console.get(base + "?version=1.0&state=all")
        let v2 = try console.get(base + "?version=2.0&state=all")
        #expect(Set(Self.groupLinks(v1.text)).union(Self.groupLinks(v2.text)) == Set(Self.groupLinks(all.text)))
        let text = try console.get(base + "?q=checksum+%7C")  // "checksum |", as a browser's form sends it
        #expect(!Self.groupLinks(text.text).isEmpty && Self.groupLinks(text.text).count < groups.count)
        #expect(try console.get(base + "?q=%25%25no-such-signature").text.contains("No group matches."))
        #expect(Self.groupLinks(try console.get(base + "?state=resolved").text).isEmpty)
        #expect(Set(Self.groupLinks(try console.get(base + "?sort=recent&since=1d").text)) == Set(Self.groupLinks(all.text)))
        #expect(try console.get(base + "?after=garbage").status == 200)

        let crashPage = try console.get("\(base)/crashes/\(asanCrash)")
        #expect(crashPage.status == 200)
        // The ASan fixture's first frame has checksum inlined into fault_use_after_free.
        #expect(crashPage.text.contains("class=\"inlined\""))
        #expect(crashPage.text.contains("fault.c:12"))
        #expect(crashPage.text.contains("uploaded"))
        #expect(try console.get("\(base)/crashes/\(asanCrash)/json").headers["content-type"] == "application/json")
        let group = try console.get("\(base)/groups/\(try server.crash(asanCrash)["group_id"] as? String ?? "")")
        #expect(group.text.contains("role-signature"))
        #expect(group.text.contains("Resolve"))
        let symbols = try console.get("\(base)/symbols")
        #expect(symbols.text.contains("libfault-asan.so"))
        #expect(symbols.text.contains("crashsym upload BUILD-DIR --server http://127.0.0.1:\(server.port) --app-id \(server.appID)"))
        let css = try console.get(String(apps.text.split(separator: "\"").first { $0.hasPrefix("/static/console-") } ?? ""))
        #expect(css.status == 200)
        #expect(css.headers["cache-control"]?.contains("immutable") == true)
        #expect(try console.get("/static/console-0000000000000000.css").status == 404)
    }

    @Test("keyset paging of groups: 120 groups in pages of 50, each once, in count order")
    func paging() throws {
        let server = try TestServer()
        let directory = server.scratch + "/many"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for index in 0..<120 {
            let path = directory + "/\(index).txt"
            try "/tmp/x/libgroup\(index).so(+0x2d)[0x7f7d10b228dd]\n".write(toFile: path, atomically: true, encoding: .utf8)
            _ = try server.post("crashes", file: path, query: "version=1.0")
        }
        #expect(try CrashFixtures.eventually(within: 120) {
            (try server.get("groups?limit=1000").json["groups"] as? [Any])?.count == 120
        })
        let password = try server.createUser("alice", admin: true)
        let console = ConsoleClient(server)
        #expect(try console.signIn("alice", password).status == 303)
        var seen: [String] = []
        var next: String? = "/apps/\(server.appID)"
        var pages = 0
        while let path = next, pages < 10 {
            let page = try console.get(path)
            #expect(page.status == 200)
            seen += Self.groupLinks(page.text)
            next = page.text.range(of: "rel=\"next\" href=\"").map { range in
                String(page.text[range.upperBound...].prefix { $0 != "\"" }).replacingOccurrences(of: "&amp;", with: "&")
            }
            pages += 1
        }
        #expect(pages == 3)
        #expect(seen.count == 120)
        #expect(Set(seen).count == 120)
    }

    @Test("bcrypt and Mustache are linked into crashsym-net only, never into the lean crashsym")
    func leanBinary() throws {
        let lean = try Data(contentsOf: URL(fileURLWithPath: Binary.crashsym))
        let net = try Data(contentsOf: URL(fileURLWithPath: URL(fileURLWithPath: Binary.crashsym).deletingLastPathComponent()
            .appendingPathComponent("crashsym-net").path))
        for marker in ["bcrypt_hashpass", "MustacheTemplate"] {
            #expect(net.range(of: Data(marker.utf8)) != nil, "crashsym-net lacks \(marker)")
            #expect(lean.range(of: Data(marker.utf8)) == nil, "crashsym contains \(marker)")
        }
    }

    static func groupLinks(_ html: String) -> [String] {
        html.components(separatedBy: "/groups/").dropFirst().map { String($0.prefix { $0.isHexDigit }) }
            .filter { !$0.isEmpty }
    }
}
