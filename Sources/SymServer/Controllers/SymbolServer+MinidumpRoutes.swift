import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SymBundle

extension SymbolServer {
    /// `POST …/minidump`: a minidump as Crashpad's `crashpad_handler` and Breakpad's `HTTPUpload`
    /// send it (multipart form, optionally gzip-compressed as a whole), or a bare minidump body.
    /// Answers the crash id as plain text (what Crashpad keeps as the report's id), or JSON when
    /// the client accepts JSON and not plain text. A minidump sent again answers the first id.
    func submitMinidump(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticateUpload(request, context)
        var token = try CrashToken(appID, from: crashes.limiter)
        let query = request.uri.queryParameters
        let charge = UploadLimiter.Charge(crashes.bodyBytes, setting: "--max-crash-bytes-in-flight")
        defer { charge.release() }
        var submission = try await MinidumpBody.read(request, limit: crashes.configuration.maxMinidumpBytes, charge: charge)
        try submission.takeVersion(query: query["version"].map(String.init))
        // The product is a label (listed, filtered on); a `prod` that is not one stays only an annotation.
        submission.product = submission.annotations["prod"].flatMap { Self.isLabel($0) ? $0 : nil }
        let receipt = try await crashes.ingestMinidump(appID: appID, submission: submission)
        if !receipt.replayed { token.keep() }
        guard Self.wantsJSON(request.headers[.accept]) else {
            return Self.raw(Array(receipt.id.utf8), contentType: "text/plain; charset=utf-8")
        }
        struct Answer: Encodable {
            var id: String
            var state: CrashStore.State
            var duplicate: Bool
        }
        return Self.json(Answer(id: receipt.id, state: receipt.state, duplicate: receipt.replayed))
    }

    /// `GET …/crashes/{id}/attachments/{index}`: a file a crash client attached to a minidump
    /// (`minidump.attachments[index]` of the crash), as a download: always
    /// `application/octet-stream` with `nosniff` (the client chose the part's type; it is in the
    /// crash's JSON), its file name in `Content-Disposition` with anything but
    /// `[A-Za-z0-9._-]` replaced by `_`.
    func minidumpAttachment(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        let attachment = try await minidumpAttachment(appID: appID, id: try Self.crashID(context),
                                                      index: try context.parameters.require("index"))
        return try await attachmentResponse(attachment, context)
    }

    /// The attachment at `index` (the route's text: its place in `minidump.attachments`, from
    /// 0) of the minidump crash `id`: the one lookup of the API's route and the console's. An
    /// index that is not decimal digits is `400`; a number past the last, however large (past
    /// `MinidumpBody.maximumAttachments` no crash has one), is `404`, as is a crash that is not
    /// a minidump's.
    func minidumpAttachment(appID: String, id: String, index text: String) async throws -> CrashStore.MinidumpAttachment {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            throw ServerError(.badRequest, "the attachment index must be a number from 0 (its place in minidump.attachments)")
        }
        guard let details = try await crashes.store.minidumpDetails(appID: appID, id: id) else {
            throw ServerError(.notFound, "no minidump crash \(id)")
        }
        // Digits only: `Int` fails on a number too large for it, which is past the last too.
        guard let index = Int(text), index < min(details.attachments.count, MinidumpBody.maximumAttachments) else {
            throw ServerError(.notFound, "crash \(id) has \(details.attachments.count) attachments")
        }
        return details.attachments[index]
    }

    /// An attachment's bytes as a download (the API's route and the console's).
    func attachmentResponse(_ attachment: CrashStore.MinidumpAttachment, _ context: BasicRequestContext) async throws -> Response {
        let body = try await objectBody(try await objects.file(sha256: attachment.sha256), context)
        let filename = String(attachment.filename.unicodeScalars.prefix(200).map { scalar -> Character in
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", ".", "_", "-": Character(scalar)
            default: "_"
            }
        })
        var headers = HTTPFields()
        headers[.contentType] = "application/octet-stream"
        headers[.contentLength] = String(attachment.size)
        headers[.contentDisposition] = "attachment; filename=\"\(filename.isEmpty ? "attachment" : filename)\""
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        return Response(status: .ok, headers: headers, body: body)
    }

    /// The app of an upload route, authenticated by `Authorization: Bearer KEY`, or, because a
    /// crash client's upload URL is often all an app can configure, by `?key=KEY` or
    /// `?sentry_key=KEY` (as Sentry's minidump endpoint takes it, and sentry-native sends it).
    /// Only the path is ever logged, never the query.
    func authenticateUpload(_ request: Request, _ context: BasicRequestContext) async throws -> String {
        if request.headers[.authorization] != nil { return try await authenticate(request, context) }
        let appID = try context.parameters.require("appId")
        let query = request.uri.queryParameters
        let key = (query["key"] ?? query["sentry_key"]).map(String.init) ?? ""
        let stored = BundleManifest.isIdentifier(appID) ? try await metadata.keyHash(appID: appID) : nil
        guard AppKey.matches(key, stored: stored) else {
            metrics.rejected("unauthorized")
            throw ServerError(.unauthorized, "missing or invalid app key (give it as Authorization: Bearer KEY, ?key=KEY or ?sentry_key=KEY)")
        }
        return appID
    }

    /// Whether an `Accept` header asks for JSON rather than text (Crashpad sends none).
    static func wantsJSON(_ accept: String?) -> Bool {
        guard let accept else { return false }
        let types = accept.split(separator: ",").map { $0.split(separator: ";")[0].trimmingCharacters(in: .whitespaces).lowercased() }
        return types.contains("application/json") && !types.contains("text/plain")
    }
}
