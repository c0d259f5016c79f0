import HTTPTypes
import Hummingbird
import Logging

/// Gives every request an id (`X-Request-Id`, `crashsym.request_id` in logs), maps errors to the
/// JSON error body of the API, logs one line per request and counts it. A refused request
/// (`refusals`) is answered with `Connection: close`: the rest of its body is never read
/// (`ConnectionGuard`).
struct RequestMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let metrics: ServerMetrics

    /// Statuses given before the body is read (or while it still arrives): the connection is
    /// closed instead of reading what the client goes on sending. 401 unknown key, 408 body too
    /// slow, 413 body too large, 415 unsupported body, 429 too many uploads, 503 too many body
    /// bytes in memory.
    static let refusals: Set<Int> = [401, 408, 413, 415, 429, 503]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let requestID = context.id
        // Setting a logger's metadata renders all of it again (StreamLogHandler), a cost on every
        // request: only when lines under `error` are logged; errors below name the request anyway.
        if context.logger.logLevel < .error { context.logger[metadataKey: "crashsym.request_id"] = "\(requestID)" }
        let logger = context.logger
        func logFailure(_ error: any Error) {
            logger.error("request failed", metadata: ["error": "\(error)", "crashsym.request_id": "\(requestID)"])
        }
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as ServerError {
            if error.code == .internal { logFailure(error) }
            response = error.response()
        } catch let error as StoreError {
            // Any route: a store that is down answers 503 with Retry-After.
            let error = error.serverError
            logFailure(error)
            response = error.response()
        } catch let error as HTTPError {
            let code: ServerError.Code = switch error.status.code {
            case 404: .notFound
            case 413: .tooLarge
            case 408: .timeout
            case 400..<500: .badRequest
            default: .internal
            }
            let message = error.body ?? (code == .notFound ? "no route for \(request.method) \(request.uri.path)" : error.status.reasonPhrase)
            response = ServerError(code, message).response()
            response.status = error.status
        } catch {
            logFailure(error)
            response = ServerError(.internal, "internal error (request id \(requestID))").response()
        }
        response.headers[HTTPField.Name("X-Request-Id")!] = requestID
        if Self.refusals.contains(response.status.code) {
            response.headers[.connection] = "close"
        }
        metrics.request(method: request.method.rawValue, status: response.status.code)
        logger.info("\(request.method) \(request.uri.path) \(response.status.code)")
        return response
    }
}
