import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOPosix

extension SymbolServer {
    /// Registers the webhook routes (docs/http-api.md, "Webhooks"), each behind the app key.
    func addWebhookRoutes(to router: Router<BasicRequestContext>) {
        let apps = router.group("api/v1/apps/:appId").add(middleware: StoreErrorMiddleware())
        apps.get("webhooks") { request, context in try await listWebhooks(request, context) }
        apps.post("webhooks") { request, context in try await addWebhook(request, context) }
        apps.delete("webhooks/:webhookId") { request, context in try await removeWebhook(request, context) }
        apps.get("webhooks/:webhookId/deliveries") { request, context in try await webhookDeliveries(request, context) }
    }

    /// `GET …/webhooks`: the app's webhooks, never their secrets.
    func listWebhooks(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        struct Answer: Encodable { var webhooks: [Webhook] }
        return Self.json(Answer(webhooks: try await crashes.store.webhooks(appID: appID)))
    }

    /// `POST …/webhooks` with `{"url", "events"?, "secret"?, "format"?}`: 201 and the webhook.
    func addWebhook(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        struct Body: Decodable {
            var url: String
            var events: [String]?
            var secret: String?
            var format: String?
        }
        let body: Body
        do {
            let bytes = try await request.body.collect(upTo: 64 << 10)
            body = try JSONDecoder().decode(Body.self, from: Data(bytes.readableBytesView))
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw ServerError(.tooLarge, "a webhook is described in at most 64 KiB")
        } catch {
            throw ServerError(.badRequest, #"the body must be {"url": "https://…", "events": ["group.new", …], "secret": "…", "format": "json" | "slack"}"#)
        }
        return Self.json(try await createWebhook(appID: appID, url: body.url, events: body.events ?? [], secret: body.secret,
                                                 format: body.format), status: .created)
    }

    /// Checks and stores a webhook of `appID` (events by name, every event when empty; format
    /// `json` when nil): the one path of the API's `POST …/webhooks` and the console's form.
    /// Errors are `ServerError(.badRequest)` saying what is wrong.
    func createWebhook(appID: String, url: String, events names: [String], secret: String?, format name: String?) async throws -> Webhook {
        let events = try names.map { name in
            guard let event = Webhook.Event(name: name) else {
                throw ServerError(.badRequest, "unknown event \"\(name.prefix(40))\" (known: group.new, group.regression, group.spike)")
            }
            return event
        }
        var format = Webhook.Format.json
        if let name {
            guard let known = Webhook.Format(rawValue: name) else {
                throw ServerError(.badRequest, "format must be json or slack, not \(name.prefix(40))")
            }
            format = known
        }
        let wanted = Webhook.New(appID: appID, url: url, events: events, secret: secret, format: format)
        let allowPrivate = webhooks.allowPrivate
        // Validation resolves the host name (getaddrinfo blocks): on the thread pool.
        let new = try await NIOThreadPool.singleton.runIfActive { try wanted.validated(allowPrivate: allowPrivate) }
        return try await crashes.store.addWebhook(new)
    }

    /// `DELETE …/webhooks/{id}`: 204; its pending deliveries are dropped.
    func removeWebhook(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        try await crashes.store.removeWebhook(appID: appID, id: try Self.webhookID(context))
        return Response(status: .noContent)
    }

    /// `GET …/webhooks/{id}/deliveries?limit=`: the newest deliveries, newest first.
    func webhookDeliveries(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        var limit = 50
        if let text = request.uri.queryParameters["limit"] {
            guard let value = Int(text), (1...1000).contains(value) else { throw ServerError(.badRequest, "limit must be 1 to 1000") }
            limit = value
        }
        struct Answer: Encodable { var deliveries: [CrashStore.Delivery] }
        let deliveries = try await crashes.store.deliveries(appID: appID, webhookID: try Self.webhookID(context), limit: limit)
        return Self.json(Answer(deliveries: deliveries))
    }

    private static func webhookID(_ context: BasicRequestContext) throws -> String {
        let id = try context.parameters.require("webhookId")
        guard id.count == 16, id.allSatisfy(\.isHexDigit) else { throw ServerError(.badRequest, "invalid webhook id \(id.prefix(40))") }
        return id
    }
}
