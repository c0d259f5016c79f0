import Foundation
import HTTPTypes
import Hummingbird

/// The console's webhooks page (docs/console.md, "Webhooks"): everyone who may see the app sees
/// its webhooks (never their secrets) and their last deliveries; only an admin adds or removes
/// one, because a webhook sends the app's crash data to a server of its creator's choosing.
extension SymbolServer {
    /// Deliveries shown per webhook.
    static let consoleDeliveries = 10

    func addConsoleWebhookRoutes(to router: Router<BasicRequestContext>) {
        router.get("apps/:appId/webhooks") { request, context in try await consolePage { try await consoleWebhooks(request, context) } }
        router.post("apps/:appId/webhooks") { request, context in try await consolePage { try await consoleAddWebhook(request, context) } }
        router.post("apps/:appId/webhooks/:webhookId/remove") { request, context in
            try await consolePage { try await consoleRemoveWebhook(request, context) }
        }
    }

    private func consoleWebhooks(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let session = try await requireSession(request)
        let app = try await visibleApp(session, context)
        return try await webhooksPage(session: session, app: app)
    }

    /// The page, with the add form filled with `form` and `message` above it after a refusal.
    private func webhooksPage(session: CrashStore.ConsoleSession, app: SymbolStore.App, form: ConsoleForm? = nil,
                              message: String? = nil, status: HTTPResponse.Status = .ok) async throws -> Response {
        var rows: [[String: Any]] = []
        for hook in try await crashes.store.webhooks(appID: app.id) {
            let deliveries = try await crashes.store.deliveries(appID: app.id, webhookID: hook.id, limit: Self.consoleDeliveries)
            rows.append([
                "appID": app.id, "id": hook.id, "url": hook.url, "events": hook.events.map(\.rawValue).joined(separator: ", "),
                "format": hook.format.rawValue, "signed": hook.hasSecret ? "yes, with a secret" : "no",
                "created": Self.short(hook.created), "canEdit": session.admin, "csrf": session.csrf,
                "hasDeliveries": !deliveries.isEmpty,
                "deliveries": deliveries.map { delivery -> [String: Any] in
                    [
                        "appID": app.id, "groupID": delivery.groupID, "event": delivery.event.rawValue,
                        "created": Self.short(delivery.created), "state": delivery.state.rawValue,
                        "stateClass": delivery.state == .delivered ? "resolved" : delivery.state == .failed ? "open" : "ignored",
                        "attempts": delivery.attempts, "status": delivery.lastStatus.map(String.init) ?? "–",
                        "latency": delivery.lastLatencyMilliseconds.map { "\($0) ms" } ?? "–",
                        "error": delivery.lastError ?? "", "next": delivery.nextAttempt.map(Self.short) ?? "–",
                    ]
                },
            ])
        }
        let chosen = form.map { Set($0.values("events")) } ?? []
        let format = form?["format"] ?? Webhook.Format.json.rawValue
        let data: [String: Any] = [
            "app": ["id": app.id, "name": app.name], "webhooks": rows, "canEdit": session.admin, "csrf": session.csrf,
            "message": message as Any, "form": ["url": form?["url"] ?? ""],
            "events": Webhook.Event.allCases.map { ["value": $0.rawValue, "checked": chosen.contains($0.rawValue)] as [String: Any] },
            "formats": [("json", "JSON (the event object)"), ("slack", "Slack-compatible {\"text\": …}")]
                .map { ["value": $0.0, "label": $0.1, "selected": $0.0 == format] as [String: Any] },
        ]
        return renderer.page("webhooks", title: "\(app.name): webhooks", data: data, session: session,
                             crumbs: [("Apps", "/apps"), (app.name, "/apps/\(app.id)"), ("Webhooks", "/apps/\(app.id)/webhooks")],
                             status: status)
    }

    /// Refuses a change by someone who is not an admin.
    private static func requireAdmin(_ session: CrashStore.ConsoleSession) throws {
        guard session.admin else {
            throw ConsoleFailure(.forbidden, "Only an admin adds or removes webhooks.")
        }
    }

    private func consoleAddWebhook(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let session = try await requireSession(request)
        let app = try await visibleApp(session, context)
        let form = try await checkedForm(request, session)
        try Self.requireAdmin(session)
        let secret = form["secret"].flatMap { $0.isEmpty ? nil : $0 }
        do {
            _ = try await createWebhook(appID: app.id, url: form["url"] ?? "", events: form.values("events"), secret: secret,
                                        format: form["format"])
        } catch let error as ServerError {
            return try await webhooksPage(session: session, app: app, form: form, message: "Not added: \(error.message).",
                                          status: error.code.status)
        }
        return ConsoleRenderer.redirect("/apps/\(app.id)/webhooks")
    }

    private func consoleRemoveWebhook(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let session = try await requireSession(request)
        let app = try await visibleApp(session, context)
        _ = try await checkedForm(request, session)
        try Self.requireAdmin(session)
        let id = try context.parameters.require("webhookId")
        guard id.utf8.count == 16, id.allSatisfy(\.isHexDigit) else { throw ConsoleFailure(.notFound, "There is no such webhook.") }
        try await crashes.store.removeWebhook(appID: app.id, id: id)
        return ConsoleRenderer.redirect("/apps/\(app.id)/webhooks")
    }
}
