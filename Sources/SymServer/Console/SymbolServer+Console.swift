import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SymReport
import Symbolication
import enum SymHTTP.PercentEncoding

/// The web console (docs/console.md): server-rendered pages for signed-in people under `/`.
///
/// Every page needs a session cookie (else 303 to `/signin`); every form carries the session's
/// CSRF token; an app the person may not see answers 404, as an unknown one does.
extension SymbolServer {
    static let sessionCookie = "crashsym_session"
    /// The double-submit token of the sign-in form (no session exists yet to hold one).
    static let signInCookie = "crashsym_signin"
    static let groupPageSize = 50
    static let chartDays = 30
    /// Agents listed on an app's page at most (the most recently reporting).
    static let agentRows = 50

    func addConsoleRoutes(to router: Router<BasicRequestContext>) {
        router.get("/") { request, _ in
            let signedIn = try await consoleSession(request) != nil
            return ConsoleRenderer.redirect(signedIn ? "/apps" : "/signin")
        }
        router.get("static/:file") { _, context in try consoleStatic(context) }
        router.get("signin") { request, _ in consoleSignInPage(request: request) }
        router.post("signin") { request, _ in try await consolePage { try await consoleSignIn(request) } }
        router.post("signout") { request, _ in try await consolePage { try await consoleSignOut(request) } }
        router.get("apps") { request, _ in try await consolePage { try await consoleApps(request) } }
        router.get("apps/:appId") { request, context in try await consolePage { try await consoleGroups(request, context) } }
        router.get("apps/:appId/symbols") { request, context in try await consolePage { try await consoleSymbols(request, context) } }
        router.get("apps/:appId/groups/:groupId") { request, context in try await consolePage { try await consoleGroup(request, context) } }
        router.post("apps/:appId/groups/:groupId/state") { request, context in
            try await consolePage { try await consoleGroupState(request, context) }
        }
        router.get("apps/:appId/crashes/:crashId") { request, context in try await consolePage { try await consoleCrash(request, context) } }
        router.get("apps/:appId/crashes/:crashId/raw") { request, context in
            try await consolePage { try await consoleCrashDownload(request, context, raw: true) }
        }
        router.get("apps/:appId/crashes/:crashId/json") { request, context in
            try await consolePage { try await consoleCrashDownload(request, context, raw: false) }
        }
        router.get("apps/:appId/crashes/:crashId/attachments/:index") { request, context in
            try await consolePage { try await consoleAttachmentDownload(request, context) }
        }
        router.post("apps/:appId/crashes/:crashId/symbolicate") { request, context in
            try await consolePage { try await consoleResymbolicate(request, context) }
        }
        addConsoleWebhookRoutes(to: router)
    }

    // MARK: Plumbing

    var renderer: ConsoleRenderer { ConsoleRenderer.shared }

    /// Runs a page, turning failures into HTML pages (never the API's JSON).
    func consolePage(_ body: () async throws -> Response) async throws -> Response {
        do {
            return try await body()
        } catch let redirect as ConsoleRedirect {
            return ConsoleRenderer.redirect(redirect.location)
        } catch let failure as ConsoleFailure {
            return renderer.page("message", title: failure.status.reasonPhrase,
                                 data: ["heading": failure.status.reasonPhrase, "text": failure.message], session: nil,
                                 status: failure.status)
        } catch let error as StoreError {
            if case .notFound = error {
                return renderer.page("message", title: "Not found", data: ["heading": "Not found", "text": "There is nothing here."],
                                     session: nil, status: .notFound)
            }
            throw error.serverError
        }
    }

    /// The session of the request's cookie, nil when none is valid.
    func consoleSession(_ request: Request) async throws -> CrashStore.ConsoleSession? {
        guard let token = request.cookies[Self.sessionCookie]?.value else { return nil }
        return try await crashes.store.session(token: token, now: currentMilliseconds())
    }

    /// The session, or a redirect to the sign-in page that comes back here.
    func requireSession(_ request: Request) async throws -> CrashStore.ConsoleSession {
        if let session = try await consoleSession(request) { return session }
        let back = request.uri.path + (request.uri.query.map { "?" + $0 } ?? "")
        throw ConsoleRedirect(location: "/signin?next=" + PercentEncoding.encode(back, as: .queryComponent))
    }

    /// The app of the URL when the person may see it; 404 otherwise (an app one may not see
    /// and an app that does not exist look the same).
    func visibleApp(_ session: CrashStore.ConsoleSession, _ context: BasicRequestContext) async throws -> SymbolStore.App {
        let appID = try context.parameters.require("appId")
        guard let app = try await crashes.store.visibleApp(session, appID: appID) else {
            throw ConsoleFailure(.notFound, "There is no app \(appID) that you may see.")
        }
        return app
    }

    /// The form of a POST, once its CSRF token matches the session's.
    func checkedForm(_ request: Request, _ session: CrashStore.ConsoleSession) async throws -> ConsoleForm {
        let form = try await ConsoleForm(request)
        guard let token = form["csrf"], constantTimeEqual(token, session.csrf) else {
            throw ConsoleFailure(.forbidden, "The form had no valid CSRF token. Reload the page and try again.")
        }
        return form
    }

    private var secureCookies: Bool { configuration.publicURL?.lowercased().hasPrefix("https://") == true }

    private func cookie(_ name: String, _ value: String, maxAge: Int) -> Cookie {
        Cookie(name: name, value: value, maxAge: maxAge, path: "/", secure: secureCookies, httpOnly: true, sameSite: .strict)
    }

    /// `next` when it is a path of this site (never another origin).
    private static func localPath(_ next: String?) -> String {
        guard let next, next.hasPrefix("/"), !next.hasPrefix("//"), !next.contains("\\"),
              !next.unicodeScalars.contains(where: { $0.value < 0x20 }) else { return "/apps" }
        return next
    }

    private func consoleStatic(_ context: BasicRequestContext) throws -> Response {
        let file = try context.parameters.require("file")
        guard "/static/" + file == renderer.stylesheetPath else { throw HTTPError(.notFound) }
        var headers = HTTPFields()
        headers[.contentType] = "text/css; charset=utf-8"
        headers[.cacheControl] = "public, max-age=31536000, immutable"
        ConsoleRenderer.addSecurityHeaders(&headers)
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: renderer.stylesheet)))
    }

    // MARK: Sign-in

    private func consoleSignInPage(request: Request, message: String? = nil, name: String = "",
                                   status: HTTPResponse.Status = .ok) -> Response {
        let token = CrashStore.randomHex(bytes: 32)
        let next = Self.localPath(ConsoleForm(query: request)["next"])
        var response = renderer.page("signin", title: "Sign in",
                                     data: ["csrf": token, "next": next, "name": name, "message": message as Any], session: nil,
                                     status: status)
        response.setCookie(cookie(Self.signInCookie, token, maxAge: 3600))
        return response
    }

    private func consoleSignIn(_ request: Request) async throws -> Response {
        let form = try await ConsoleForm(request)
        guard let expected = request.cookies[Self.signInCookie]?.value, let token = form["csrf"],
              constantTimeEqual(token, expected) else {
            throw ConsoleFailure(.forbidden, "The sign-in form had no valid CSRF token. Open the sign-in page again.")
        }
        let name = form["name"] ?? "", password = form["password"] ?? ""
        switch try await crashes.store.signIn(name: String(name.prefix(64)), password: String(password.prefix(256)),
                                              now: currentMilliseconds()) {
        case .signedIn(let token, _):
            return ConsoleRenderer.redirect(Self.localPath(form["next"]), cookies: [
                cookie(Self.signInCookie, "", maxAge: 0),
                cookie(Self.sessionCookie, token, maxAge: Int(CrashStore.sessionMilliseconds / 1000)),
            ])
        case .refused:
            return consoleSignInPage(request: request, message: "Wrong name or password.", name: name, status: .unauthorized)
        case .locked(let until):
            let minutes = max(1, (until - currentMilliseconds() + 59_999) / 60_000)
            return consoleSignInPage(request: request,
                                     message: "Too many wrong passwords for this name: try again in \(minutes) minutes, or ask an admin for `crashsym users reset-password`.",
                                     name: name, status: .tooManyRequests)
        }
    }

    private func consoleSignOut(_ request: Request) async throws -> Response {
        guard let session = try await consoleSession(request), let token = request.cookies[Self.sessionCookie]?.value else {
            return ConsoleRenderer.redirect("/signin")
        }
        _ = try await checkedForm(request, session)
        try await crashes.store.signOut(token: token)
        return ConsoleRenderer.redirect("/signin", cookies: [cookie(Self.sessionCookie, "", maxAge: 0)])
    }

    // MARK: Apps

    private func consoleApps(_ request: Request) async throws -> Response {
        let session = try await requireSession(request)
        let now = currentMilliseconds()
        var rows: [[String: Any]] = []
        for app in try await crashes.store.visibleApps(session) {
            let overview = try await crashes.store.appOverview(appID: app.id, now: now)
            rows.append([
                "id": app.id, "name": app.name, "day": overview.crashesLastDay, "week": overview.crashesLastWeek,
                "open": overview.openGroups, "latest": overview.latestVersion ?? "–",
                "sparkline": ConsoleChart.sparkline(overview.daily),
            ])
        }
        return renderer.page("apps", title: "Apps", data: ["apps": rows, "hasApps": !rows.isEmpty, "user": session.user],
                             session: session)
    }

    // MARK: Groups

    private func consoleGroups(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let session = try await requireSession(request)
        let app = try await visibleApp(session, context)
        let parameters = ConsoleForm(query: request)
        func parameter(_ name: String) -> String? {
            parameters[name].flatMap { $0.isEmpty ? nil : String($0.prefix(256)) }
        }
        let now = currentMilliseconds()
        var query = CrashStore.GroupQuery()
        query.version = parameter("version")
        query.state = parameter("state").map { CrashStore.GroupState(rawValue: $0) } ?? .open
        if parameter("state") == "all" { query.state = nil }
        let ranges: [(String, String, Int64?)] = [("", "any time", nil), ("1d", "last 24 hours", 1), ("7d", "last 7 days", 7),
                                                  ("30d", "last 30 days", 30), ("90d", "last 90 days", 90)]
        let since = parameter("since") ?? ""
        query.sinceMilliseconds = ranges.first { $0.0 == since }?.2.map { now - $0 * 86_400_000 }
        query.text = parameter("q")
        query.order = parameter("sort") == "recent" ? .lastSeen : .count
        query.cursor = parameter("after")
        let page = try await crashes.store.groupPage(appID: app.id, query: query, limit: Self.groupPageSize)
        let versions = try await crashes.store.crashVersions(appID: app.id)
        let firstDay = now / 86_400_000 - Int64(Self.chartDays - 1)
        let counts = try await ConsoleChartCache.shared.counts(appID: app.id, firstDay: firstDay, now: now) {
            try await crashes.store.dailyCounts(appID: app.id, sinceMilliseconds: firstDay * 86_400_000)
        }

        var nextURL: String?
        if let next = page.next {
            let items = [("q", query.text), ("version", query.version), ("state", parameter("state")), ("since", since),
                         ("sort", parameter("sort")), ("after", next)]
                .compactMap { name, value in value.flatMap { $0.isEmpty ? nil : "\(name)=\(PercentEncoding.encode($0, as: .queryComponent))" } }
            nextURL = "/apps/\(app.id)?" + items.joined(separator: "&")
        }
        let stateChoice = parameter("state") ?? "open"
        let agents = try await crashes.store.agentCounts(appID: app.id)
        let data: [String: Any] = [
            "app": ["id": app.id, "name": app.name], "days": Self.chartDays,
            "chart": ConsoleChart.dailyByVersion(counts, firstDay: firstDay, days: Self.chartDays),
            "q": query.text ?? "",
            "versions": versions.map { ["value": $0, "selected": $0 == query.version] as [String: Any] },
            "states": [("open", "open"), ("resolved", "resolved"), ("ignored", "ignored"), ("all", "all")]
                .map { ["value": $0.0, "label": $0.1, "selected": $0.0 == stateChoice] as [String: Any] },
            "ranges": ranges.map { ["value": $0.0, "label": $0.1, "selected": $0.0 == since] as [String: Any] },
            "sorts": [("count", "most crashes"), ("recent", "most recent")]
                .map { ["value": $0.0, "label": $0.1, "selected": ($0.0 == "recent") == (query.order == .lastSeen)] as [String: Any] },
            "groups": page.groups.map { group -> [String: Any] in
                [
                    "appID": app.id, "id": group.id, "title": group.title, "signature": group.signature, "count": group.count,
                    "firstSeen": group.firstSeen, "lastSeen": group.lastSeen,
                    "firstSeenShort": Self.short(group.firstSeen), "lastSeenShort": Self.short(group.lastSeen),
                    "versions": Self.versionList(group.versions), "hosts": group.hosts, "state": group.state.rawValue,
                ]
            },
            "hasGroups": !page.groups.isEmpty, "next": nextURL as Any, "pageSize": Self.groupPageSize,
            "agents": agents.prefix(Self.agentRows).map { agent -> [String: Any] in
                [
                    "id": agent.agentID, "host": agent.host ?? "–", "reported": agent.reported, "reportedShort": Self.short(agent.reported),
                    "queue": agent.queue.map(String.init) ?? "–", "dropped": agent.dropped, "suppressed": agent.suppressed,
                    "lossClass": agent.dropped > 0 ? "lossy" : "",
                ]
            },
            "hasAgents": !agents.isEmpty, "moreAgents": agents.count > Self.agentRows ? agents.count - Self.agentRows : 0,
        ]
        return renderer.page("groups", title: app.name, data: data, session: session,
                             crumbs: [("Apps", "/apps"), (app.name, "/apps/\(app.id)")])
    }

    /// `2026-11-26 15:30` of an RFC 3339 time.
    static func short(_ time: String) -> String {
        String(time.prefix(16)).replacingOccurrences(of: "T", with: " ")
    }

    /// The newest versions first, at most four, then how many more.
    static func versionList(_ versions: [String]) -> String {
        let newest = versions.reversed().prefix(4)
        return newest.joined(separator: ", ") + (versions.count > 4 ? " +\(versions.count - 4)" : "")
    }

    // MARK: Group

    private func consoleGroup(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let session = try await requireSession(request)
        let app = try await visibleApp(session, context)
        let group = try await crashes.store.group(appID: app.id, id: try context.parameters.require("groupId"))
        let before = ConsoleForm(query: request)["before"].flatMap { Int64($0) }
        let list = try await crashes.store.crashes(appID: app.id, filter: .init(groupID: group.id), limit: 50, cursor: before)
        let spread = try await crashes.store.groupSpread(groupID: group.id)
        let now = currentMilliseconds()
        let firstDay = now / 86_400_000 - Int64(Self.chartDays - 1)
        let counts = try await crashes.store.dailyCounts(appID: app.id, groupID: group.id, sinceMilliseconds: firstDay * 86_400_000)

        var latestHTML: String?
        var explanation: [[String: Any]] = []
        var explanationMissing = "This group has no crash left to explain it (they expired)."
        let newest = before == nil ? list.crashes.first : try await crashes.store.crashes(
            appID: app.id, filter: .init(groupID: group.id), limit: 1, cursor: nil).crashes.first
        if let newest {
            let (summary, report) = try await crashes.store.crash(appID: app.id, id: newest.id)
            latestHTML = renderer.render("report", ConsoleReportView.report(summary: summary, report: report, link: true, appID: app.id))
            do {
                let signature = try await explainSignature(appID: app.id, summary: summary)
                explanation = signature.frames.map { frame in
                    [
                        "frame": frame.frameIndex, "inlined": frame.inlined, "text": frame.text, "module": frame.module ?? "",
                        "role": frame.role.rawValue, "reason": frame.reason, "rowClass": "role-\(frame.role.rawValue)",
                    ]
                }
                if signature.signature != group.signature {
                    explanationMissing = "The rules now give this crash the signature “\(signature.signature)”: it will move when processed again."
                }
            } catch {
                explanationMissing = "The latest crash could not be analysed again: \(error)"
            }
        }
        let actions: [(String, String)] = switch group.state {
        case .open: [("resolved", "Resolve"), ("ignored", "Ignore")]
        case .resolved, .ignored: [("open", "Reopen")]
        }
        let data: [String: Any] = [
            "group": [
                "title": group.title, "signature": group.signature, "state": group.state.rawValue, "count": group.count,
                "firstSeen": group.firstSeen, "lastSeen": group.lastSeen, "resolvedIn": group.resolvedIn as Any,
                "reopenedIn": group.reopenedIn as Any,
            ] as [String: Any],
            "actions": actions.map { ["appID": app.id, "groupID": group.id, "csrf": session.csrf, "state": $0.0, "label": $0.1] },
            "explanation": explanation, "hasExplanation": !explanation.isEmpty, "explanationMissing": explanationMissing,
            "chart": ConsoleChart.dailyByVersion(counts, firstDay: firstDay, days: Self.chartDays),
            "versions": spread.versions.map { ["version": $0.0, "count": $0.1] as [String: Any] },
            "hosts": spread.hosts,
            "latest": latestHTML as Any,
            "crashes": list.crashes.map {
                ["appID": app.id, "id": $0.id, "received": Self.short($0.received), "version": $0.version, "host": $0.host ?? "",
                 "state": $0.state.rawValue]
            },
            "next": list.next.map { "/apps/\(app.id)/groups/\(group.id)?before=\($0)" } as Any,
        ]
        return renderer.page("group", title: group.title, data: data, session: session,
                             crumbs: [("Apps", "/apps"), (app.name, "/apps/\(app.id)"), ("Group", "/apps/\(app.id)/groups/\(group.id)")])
    }

    /// The signature of a stored crash with every frame's role: as kept when it was processed,
    /// else (a crash processed before they were kept) its raw report parsed and symbolicated
    /// again through the crash service's one path, then the app's rules.
    private func explainSignature(appID: String, summary: CrashStore.CrashSummary) async throws -> CrashSignature {
        if let kept = try await crashes.store.grouping(appID: appID, crashID: summary.id) { return kept }
        let raw = try await crashes.store.rawObject(appID: appID, id: summary.id)
        let data: [UInt8]
        do {
            // A pack compacted meanwhile: the row is read again (PackCompactor).
            data = try await crashes.objects.read(raw: raw, limit: Int(max(raw.size, 0)) + 1) {
                try? await crashes.store.rawObject(appID: appID, id: summary.id)
            }
        } catch StoreError.notFound {
            throw StoreError.corrupt("the raw bytes of crash \(summary.id) are missing")
        }
        let report = try await crashes.parse(data, format: summary.format.flatMap(ReportFormat.init(rawValue:))).get()
        let result = try await crashes.symbolication.symbolicate(report, appID: appID, version: summary.version, renderings: .json)
        return CrashSignature.compute(for: result, rules: try await crashes.groupingRules(appID: appID))
    }

    private func consoleGroupState(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let session = try await requireSession(request)
        let app = try await visibleApp(session, context)
        let form = try await checkedForm(request, session)
        guard let state = form["state"].flatMap(CrashStore.GroupState.init(rawValue:)) else {
            throw ConsoleFailure(.badRequest, "The state must be open, resolved or ignored.")
        }
        let id = try context.parameters.require("groupId")
        _ = try await crashes.store.setGroupState(appID: app.id, id: id, state: state)
        return ConsoleRenderer.redirect("/apps/\(app.id)/groups/\(id)")
    }

    // MARK: Crash

    private func consoleCrash(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let session = try await requireSession(request)
        let app = try await visibleApp(session, context)
        let id = try Self.consoleCrashID(context)
        let (summary, report) = try await crashes.store.crash(appID: app.id, id: id)
        let view = ConsoleReportView.report(summary: summary, report: report, link: false, appID: app.id)
        let buildIDs = (view["buildIDs"] as? [String]) ?? []
        let present = try await crashes.store.presentTables(appID: app.id, buildIDs: buildIDs)
        let unnamed = ((view["modules"] as? [[String: String]]) ?? []).filter { ($0["buildID"] ?? "").isEmpty }.compactMap { $0["name"] }
        let named = try await crashes.store.namedTableCounts(appID: app.id, version: summary.version, names: unnamed)

        let modules = ((view["modules"] as? [[String: String]]) ?? []).map { module -> [String: Any] in
            var row: [String: Any] = module
            if let buildID = module["buildID"], !buildID.isEmpty {
                let have = present.contains(buildID)
                row["symbols"] = have ? "uploaded" : "missing"
                row["symbolsClass"] = have ? "have" : "missing"
            } else {
                // Matched by name among the version's tables: one is a match (not verified), none
                // or several (ambiguous, not guessed) leave the module without symbols.
                switch named[module["name"] ?? ""] ?? 0 {
                case 0:
                    row["symbols"] = "no build-id, and no uploaded table of this version has the name"
                    row["symbolsClass"] = "missing"
                case 1:
                    row["symbols"] = "no build-id: matched by name, not verified"
                    row["symbolsClass"] = ""
                case let count:
                    row["symbols"] = "no build-id: ambiguous, \(count) uploaded tables of this version have the name"
                    row["symbolsClass"] = "missing"
                }
            }
            return row
        }
        let title = summary.title ?? summary.signal.map { "\($0) (not grouped)" } ?? "Crash \(id)"
        var data: [String: Any] = [
            "title": title, "appID": app.id, "id": id, "groupID": summary.groupID as Any, "csrf": session.csrf,
            "failure": summary.failure as Any, "report": renderer.render("report", view), "modules": modules,
        ]
        if let details = try await crashes.store.minidumpDetails(appID: app.id, id: id) {
            data["minidump"] = ConsoleReportView.minidump(details)
        }
        var crumbs = [("Apps", "/apps"), (app.name, "/apps/\(app.id)")]
        if let group = summary.groupID { crumbs.append(("Group", "/apps/\(app.id)/groups/\(group)")) }
        crumbs.append(("Crash", "/apps/\(app.id)/crashes/\(id)"))
        return renderer.page("crash", title: title, data: data, session: session, crumbs: crumbs.map { (label: $0.0, href: $0.1) })
    }

    private static func consoleCrashID(_ context: BasicRequestContext) throws -> String {
        let id = try context.parameters.require("crashId")
        guard id.utf8.count == 32, id.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else {
            throw ConsoleFailure(.notFound, "There is no such crash.")
        }
        return id
    }

    /// A file a crash client attached to a minidump, as a download (never rendered: sandboxed,
    /// `application/octet-stream`, its name reduced to `[A-Za-z0-9._-]`).
    private func consoleAttachmentDownload(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let session = try await requireSession(request)
        let app = try await visibleApp(session, context)
        let id = try Self.consoleCrashID(context)
        let attachment: CrashStore.MinidumpAttachment
        do {
            // The API's lookup and rule: both answer the same for every index.
            attachment = try await minidumpAttachment(appID: app.id, id: id, index: try context.parameters.require("index"))
        } catch let error as ServerError where error.code == .notFound || error.code == .badRequest {
            throw ConsoleFailure(error.code.status, error.code == .notFound ? "There is no such attachment."
                                                                            : "An attachment's number is its place from 0.")
        }
        var response = try await attachmentResponse(attachment, context)
        ConsoleRenderer.addSecurityHeaders(&response.headers)
        response.headers[HTTPField.Name("Content-Security-Policy")!] = "default-src 'none'; sandbox"
        response.headers[.cacheControl] = "no-store"
        return response
    }

    private func consoleCrashDownload(_ request: Request, _ context: BasicRequestContext, raw: Bool) async throws -> Response {
        let session = try await requireSession(request)
        let app = try await visibleApp(session, context)
        let id = try Self.consoleCrashID(context)
        var headers = HTTPFields()
        ConsoleRenderer.addSecurityHeaders(&headers)
        headers[HTTPField.Name("Content-Security-Policy")!] = "default-src 'none'; sandbox"
        headers[.cacheControl] = "no-store"
        if raw {
            let object = try await crashes.store.rawObject(appID: app.id, id: id)
            // A pack compacted meanwhile: the row is read again (PackCompactor).
            let body = try await rawBody(object, context) { try? await crashes.store.rawObject(appID: app.id, id: id) }
            if try await crashes.store.minidumpDetails(appID: app.id, id: id) != nil {
                headers[.contentType] = "application/octet-stream"
                headers[.contentDisposition] = "attachment; filename=\"crash-\(id).dmp\""
            } else {
                headers[.contentType] = "text/plain; charset=utf-8"
                headers[.contentDisposition] = "inline; filename=\"crash-\(id).txt\""
            }
            return Response(status: .ok, headers: headers, body: body)
        }
        let (_, report) = try await crashes.store.crash(appID: app.id, id: id)
        headers[.contentType] = "application/json"
        headers[.contentDisposition] = "inline; filename=\"crash-\(id).json\""
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: report ?? Array("null".utf8))))
    }

    private func consoleResymbolicate(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let session = try await requireSession(request)
        let app = try await visibleApp(session, context)
        _ = try await checkedForm(request, session)
        let id = try Self.consoleCrashID(context)
        guard try await crashes.store.requestResymbolication(appID: app.id, id: id, now: currentMilliseconds()) else {
            throw ConsoleFailure(.notFound, "There is no such crash.")
        }
        crashes.doorbell.ring()
        return ConsoleRenderer.redirect("/apps/\(app.id)/crashes/\(id)")
    }

    // MARK: Symbols

    private func consoleSymbols(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let session = try await requireSession(request)
        let app = try await visibleApp(session, context)
        let missing = try await crashes.store.missingSeen(appID: app.id, limit: 500)
        var versions: [[String: Any]] = []
        for version in try await metadata.versions(appID: app.id).reversed() {
            let modules = try await metadata.modules(appID: app.id, version: version.version) ?? []
            versions.append([
                "version": version.version, "created": Self.short(version.created),
                "modules": modules.map {
                    ["name": $0.name, "buildID": $0.buildID, "arch": $0.arch, "dwarf": $0.hasDWARF ? "yes" : "no",
                     "debug": $0.hasDebugFile ? "yes" : "no", "size": ByteCountFormatter.string(fromByteCount: $0.symbolsSize, countStyle: .binary)]
                },
            ])
        }
        // The address the person reached this server at, unless a public URL is configured.
        let authority = request.head.authority.flatMap { $0.isEmpty ? nil : $0 } ?? "\(configuration.host):\(configuration.port)"
        let server = configuration.publicURL ?? "http://\(authority)"
        let data: [String: Any] = [
            "app": ["id": app.id, "name": app.name],
            "missing": missing.map { ["name": $0.name, "buildID": $0.buildID, "crashes": $0.crashes] as [String: Any] },
            "hasMissing": !missing.isEmpty, "versions": versions, "server": server,
        ]
        return renderer.page("symbols", title: "\(app.name): symbols", data: data, session: session,
                             crumbs: [("Apps", "/apps"), (app.name, "/apps/\(app.id)"), ("Symbols", "/apps/\(app.id)/symbols")])
    }
}
