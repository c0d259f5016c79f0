import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import NIOPosix
import SymBundle
import SymReport

/// Turns storage errors into the API's errors for the crash service's routes.
struct StoreErrorMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as StoreError {
            throw error.serverError
        }
    }
}

extension SymbolServer {
    /// Registers the routes of the crash service (docs/http-api.md: "Symbolication", "Crashes",
    /// "Groups") and the debuginfod additions.
    func addCrashServiceRoutes(to router: Router<BasicRequestContext>) {
        let apps = router.group("api/v1/apps/:appId").add(middleware: StoreErrorMiddleware())
        apps.post("crashes") { request, context in try await submitCrash(request, context) }
        apps.post("minidump") { request, context in try await submitMinidump(request, context) }
        // sentry-native's Crashpad backend: `/api/{PROJECT}/minidump/?sentry_key=KEY` (the DSN's
        // project and public key), so that a Sentry DSN naming this server works as it is.
        router.group("api/:appId").add(middleware: StoreErrorMiddleware())
            .post("minidump") { request, context in try await submitMinidump(request, context) }
        apps.get("crashes") { request, context in try await listCrashes(request, context) }
        apps.get("crashes/:crashId") { request, context in try await showCrash(request, context) }
        apps.get("crashes/:crashId/raw") { request, context in try await rawCrash(request, context) }
        apps.get("crashes/:crashId/attachments/:index") { request, context in try await minidumpAttachment(request, context) }
        apps.delete("crashes/:crashId") { request, context in try await deleteCrash(request, context) }
        apps.post("symbolicate") { request, context in try await symbolicateReport(request, context) }
        apps.get("symbolicate") { request, context in try await lookupAddresses(request, context) }
        apps.get("symbols/missing-seen") { request, context in try await missingSeen(request, context) }
        apps.get("symbols/:buildId") { request, context in try await table(request, context, head: false) }
        apps.head("symbols/:buildId") { request, context in try await table(request, context, head: true) }
        apps.get("groups") { request, context in try await listGroups(request, context) }
        apps.get("groups/:groupId") { request, context in try await showGroup(request, context) }
        apps.patch("groups/:groupId") { request, context in try await updateGroup(request, context) }
        apps.get("grouping-rules") { request, context in try await groupingRules(request, context) }
        apps.get("agents") { request, context in try await listAgents(request, context) }
        apps.get("builds/:buildId") { request, context in try await buildVersions(request, context) }
        apps.put("grouping-rules") { request, context in try await setGroupingRules(request, context) }
        router.head("buildid/:buildId/debuginfo") { request, context in try await debugFileHead(request, context) }
        router.head("buildid/:buildId/executable") { request, context in try await debugFileHead(request, context) }
        router.get("buildid/:buildId/source/**") { request, context in try await debugSource(request, context) }
        router.head("buildid/:buildId/source/**") { request, context in try await debugSource(request, context) }
    }

    // MARK: Crashes

    /// `POST …/crashes`: bytes durable, row and job committed, then 201.
    func submitCrash(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        var token = try CrashToken(appID, from: crashes.limiter)
        let query = request.uri.queryParameters
        var submission = CrashService.Submission()
        submission.version = try Self.identifier(query, "version", check: BundleManifest.isVersion)
        submission.host = try Self.label(query, "host")
        submission.system = try Self.label(query, "system")
        submission.environment = try Self.label(query, "environment")
        submission.inputFormat = try Self.inputFormat(query)
        if let key = request.headers[HTTPField.Name("Idempotency-Key")!] {
            guard !key.isEmpty, key.utf8.count <= 255 else { throw ServerError(.badRequest, "Idempotency-Key must be 1 to 255 bytes") }
            submission.idempotencyKey = key
        }
        let wait = try Self.waitSeconds(query)
        let charge = UploadLimiter.Charge(crashes.bodyBytes, setting: "--max-crash-bytes-in-flight")
        defer { charge.release() }
        let body = try await reportBody(request, charge: charge)
        var receipt = try await crashes.ingest(appID: appID, body: body, submission: submission)
        if !receipt.replayed { token.keep() }
        if let counts = Self.agentCounts(request) {
            try await crashes.store.recordAgentCounts(appID: appID, agentID: counts.agentID, host: submission.host,
                                                      dropped: counts.dropped, suppressed: counts.suppressed, queue: counts.queue)
        }
        receipt = try await crashes.waitForProcessing(appID: appID, receipt: receipt, seconds: wait)
        struct Answer: Encodable {
            var id: String
            var state: CrashStore.State
            var groupID: String?
            enum CodingKeys: String, CodingKey { case id, state, groupID = "group_id" }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(id, forKey: .id)
                try container.encode(state, forKey: .state)
                try container.encode(groupID, forKey: .groupID)  // null while pending
            }
        }
        return Self.json(Answer(id: receipt.id, state: receipt.state, groupID: receipt.groupID), status: .created)
    }

    /// The `Crashsym-Agent-Counts: agent=ID; dropped=N; suppressed=M[; queue=Q]` header of an
    /// agent's submission (docs/http-api.md); nil when absent or malformed (the crash is stored
    /// all the same: telemetry never costs a crash).
    static func agentCounts(_ request: Request) -> (agentID: String, dropped: Int64, suppressed: Int64, queue: Int64?)? {
        guard let header = request.headers[HTTPField.Name("Crashsym-Agent-Counts")!], header.utf8.count <= 200 else { return nil }
        var fields: [String: Substring] = [:]
        for part in header.split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { return nil }
            fields[pair[0].trimmingCharacters(in: .whitespaces)] = pair[1].drop { $0 == " " }
        }
        guard let id = fields["agent"], (8...64).contains(id.utf8.count),
              id.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }),
              let dropped = fields["dropped"].flatMap({ Int64($0) }), dropped >= 0,
              let suppressed = fields["suppressed"].flatMap({ Int64($0) }), suppressed >= 0 else { return nil }
        var queue: Int64?
        if let text = fields["queue"] {
            guard let value = Int64(text), value >= 0 else { return nil }
            queue = value
        }
        return (String(id), dropped, suppressed, queue)
    }

    /// `GET …/builds/{build-id}`: the module the app uploaded with this build-id and the versions
    /// that hold it, newest first (the agent's version of a crash whose report states none).
    func buildVersions(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        let id = try context.parameters.require("buildId").lowercased()
        guard BundleManifest.isBuildID(id) else { throw ServerError(.badRequest, "invalid build-id") }
        guard let build = try await crashes.store.buildVersions(appID: appID, buildID: id) else {
            throw ServerError(.notFound, "no module with build-id \(id) was uploaded for this app")
        }
        return Self.json(build)
    }

    /// `GET …/agents`: what each agent of the app could not send (dropped, storm-suppressed).
    func listAgents(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        struct Answer: Encodable { var agents: [CrashStore.AgentCounts] }
        return Self.json(Answer(agents: try await crashes.store.agentCounts(appID: appID)))
    }

    /// `GET …/crashes`: newest first, one page after `cursor`.
    func listCrashes(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        let query = request.uri.queryParameters
        let limit = try Self.integer(query, "limit", default: 50, range: 1...1000)
        var cursor: Int64?
        if let text = query["cursor"] {
            guard let value = Int64(text), value > 0 else { throw ServerError(.badRequest, "cursor must come from next_cursor") }
            cursor = value
        }
        let filter = CrashStore.CrashFilter(groupID: query["group"].map(String.init), version: query["version"].map(String.init),
                                            sinceMilliseconds: try Self.since(query))
        let page = try await crashes.store.crashes(appID: appID, filter: filter, limit: limit, cursor: cursor)
        struct Answer: Encodable {
            var crashes: [CrashStore.CrashSummary]
            var nextCursor: String?
            enum CodingKeys: String, CodingKey { case crashes, nextCursor = "next_cursor" }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(crashes, forKey: .crashes)
                try container.encode(nextCursor, forKey: .nextCursor)  // null on the last page
            }
        }
        return Self.json(Answer(crashes: page.crashes, nextCursor: page.next.map(String.init)))
    }

    /// `GET …/crashes/{id}`: the crash and its symbolicated report.
    func showCrash(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        let (summary, report) = try await crashes.store.crash(appID: appID, id: try Self.crashID(context))
        // The stored report is spliced in as it was written (it is the engine's JSON model).
        var bytes = Array(try Self.encoder.encode(summary))
        bytes.removeLast()  // "}"
        bytes.append(contentsOf: #","report":"#.utf8)
        if let report { bytes.append(contentsOf: report) } else { bytes.append(contentsOf: "null".utf8) }
        if let details = try await crashes.store.minidumpDetails(appID: appID, id: summary.id) {
            // What a Crashpad/Breakpad client sent with the minidump (POST …/minidump).
            bytes.append(contentsOf: #","minidump":"#.utf8)
            bytes.append(contentsOf: try Self.encoder.encode(details))
        }
        bytes.append(UInt8(ascii: "}"))
        return Self.raw(bytes, contentType: "application/json")
    }

    /// `GET …/crashes/{id}/raw`: the bytes as received.
    func rawCrash(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        let id = try Self.crashID(context)
        let object = try await crashes.store.rawObject(appID: appID, id: id)
        let minidump = try await crashes.store.minidumpDetails(appID: appID, id: id) != nil
        // A pack compacted meanwhile: the row is read again (PackCompactor).
        let body = try await rawBody(object, context) { try? await crashes.store.rawObject(appID: appID, id: id) }
        var headers = HTTPFields()
        headers[.contentType] = minidump ? "application/octet-stream" : "text/plain; charset=utf-8"
        headers[.contentLength] = String(object.size)
        return Response(status: .ok, headers: headers, body: body)
    }

    /// The raw bytes of a crash as a response body: the object itself, or the crash's member
    /// of its pack (read with a ranged read and checked against its SHA-256); `relocate` reads the
    /// crash's row again when its pack was compacted meanwhile.
    func rawBody(_ raw: CrashStore.RawLocation, _ context: BasicRequestContext,
                 relocate: () async throws -> CrashStore.RawLocation?) async throws -> ResponseBody {
        guard raw.pack != nil else { return try await objectBody(try await objects.file(sha256: raw.sha256), context) }
        do {
            return ResponseBody(byteBuffer: ByteBuffer(bytes: try await objects.read(raw: raw, limit: CrashPack.memberLimit,
                                                                                   relocate: relocate)))
        } catch StoreError.notFound {
            throw StoreError.corrupt("the pack holding this crash's raw bytes is missing (\(raw.object))")
        }
    }

    /// `DELETE …/crashes/{id}`.
    func deleteCrash(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        let object = try await crashes.store.deleteCrash(appID: appID, id: try Self.crashID(context))
        let unused = (object.map { [$0] } ?? []) + (try await crashes.store.collectOrphanAttachments())
        // An object left behind (the store is down) is the sweeper's.
        _ = try? await objects.removeUnused(unused, in: crashes.store)
        return Response(status: .noContent)
    }

    // MARK: Symbolication

    /// `POST …/symbolicate`: what `crashsym symbolicate` prints for the report and the app's tables.
    func symbolicateReport(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        let query = request.uri.queryParameters
        let output: CrashService.Output
        switch query["format"].map(String.init) ?? "json" {
        case "json": output = .json
        case "text": output = .text
        case let other: throw ServerError(.badRequest, "format must be json or text, not \(other.prefix(40))")
        }
        let explain = ["1", "true", "yes"].contains(query["explain"].map(String.init) ?? "0")
        let version = try Self.identifier(query, "version", check: BundleManifest.isVersion)
        let charge = UploadLimiter.Charge(crashes.bodyBytes, setting: "--max-crash-bytes-in-flight")
        defer { charge.release() }
        let body = try await reportBody(request, charge: charge)
        let bytes = try await crashes.symbolicate(appID: appID, body: body, format: try Self.inputFormat(query), version: version,
                                                  output: output, explain: explain)
        return Self.raw(bytes, contentType: output == .json ? "application/json" : "text/plain; charset=utf-8")
    }

    /// `GET …/symbolicate?build_id=…&address=0x…`: as `crashsym lookup --format json` prints.
    func lookupAddresses(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        let query = request.uri.queryParameters
        guard let id = query["build_id"].map({ $0.lowercased() }), BundleManifest.isBuildID(id) else {
            throw ServerError(.badRequest, "build_id must be a build-id in hex")
        }
        let texts = query.getAll("address")
        guard !texts.isEmpty else { throw ServerError(.badRequest, "give at least one address=0x…") }
        guard texts.count <= 1000 else { throw ServerError(.badRequest, "at most 1000 addresses, not \(texts.count)") }
        let addresses = try texts.map { text in
            let digits = text.hasPrefix("0x") || text.hasPrefix("0X") ? text.dropFirst(2) : Substring(text)
            guard !digits.isEmpty, let value = UInt64(digits, radix: 16) else {
                throw ServerError(.badRequest, "address \"\(text.prefix(40))\" is not a hex number")
            }
            return value
        }
        return Self.raw(try await crashes.lookup(appID: appID, buildID: id, addresses: addresses), contentType: "application/json")
    }

    /// `GET` and `HEAD …/symbols/{buildId}`: the stored table, its SHA-256 as ETag.
    func table(_ request: Request, _ context: BasicRequestContext, head: Bool) async throws -> Response {
        let appID = try await authenticate(request, context)
        let id = try context.parameters.require("buildId").lowercased()
        guard BundleManifest.isBuildID(id) else { throw ServerError(.badRequest, "invalid build-id") }
        guard let table = try await crashes.store.table(appID: appID, buildID: id) else {
            throw ServerError(.notFound, "no symbols for build-id \(id)")
        }
        var headers = HTTPFields()
        headers[.eTag] = "\"\(table.sha256)\""
        headers[.contentType] = "application/octet-stream"
        if let match = request.headers[.ifNoneMatch],
           match.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == "\"\(table.sha256)\"" || $0 == "*" }) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentLength] = String(table.size)
        if head { return Response(status: .ok, headers: headers) }
        // Through the node's table cache (S3), so a table is fetched once per node.
        let path = try await NIOThreadPool.singleton.runIfActive { try objects.localFile(sha256: table.sha256) }
        let body = try await FileIO().loadFile(path: path, context: context)
        return Response(status: .ok, headers: headers, body: body)
    }

    /// `GET …/symbols/missing-seen`: build-ids crashes needed and the app lacks.
    func missingSeen(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        struct Answer: Encodable { var missing: [CrashStore.MissingSymbols] }
        return Self.json(Answer(missing: try await crashes.store.missingSeen(appID: appID)))
    }

    // MARK: Groups

    /// `GET …/groups`.
    func listGroups(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        let query = request.uri.queryParameters
        let order: CrashStore.GroupOrder
        switch query["sort"].map(String.init) ?? "count" {
        case "count": order = .count
        case "last_seen": order = .lastSeen
        case let other: throw ServerError(.badRequest, "sort must be count or last_seen, not \(other.prefix(40))")
        }
        let groups = try await crashes.store.groups(appID: appID, version: query["version"].map(String.init),
                                                    sinceMilliseconds: try Self.since(query), order: order,
                                                    limit: try Self.integer(query, "limit", default: 100, range: 1...1000))
        struct Answer: Encodable { var groups: [CrashStore.GroupSummary] }
        return Self.json(Answer(groups: groups))
    }

    /// `GET …/groups/{id}`.
    func showGroup(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        return Self.json(try await crashes.store.group(appID: appID, id: try context.parameters.require("groupId")))
    }

    /// `PATCH …/groups/{id}` with `{"state": "open"|"resolved"|"ignored"}`.
    func updateGroup(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        struct Change: Decodable { var state: CrashStore.GroupState }
        let body = try await smallBody(request)
        let change: Change
        do {
            change = try JSONDecoder().decode(Change.self, from: Data(body))
        } catch {
            throw ServerError(.badRequest, "the body must be {\"state\": \"open\" | \"resolved\" | \"ignored\"}")
        }
        let group = try await crashes.store.setGroupState(appID: appID, id: try context.parameters.require("groupId"),
                                                          state: change.state)
        return Self.json(group)
    }

    /// `GET …/grouping-rules`: the app's rules document (`{}` when it has none of its own).
    func groupingRules(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        let rules = try await crashes.store.groupingRules(appID: appID) ?? "{}"
        return Self.raw(Array(rules.utf8), contentType: "application/json")
    }

    /// `PUT …/grouping-rules`: a rules document (docs/grouping.md), validated, used for the app's
    /// signatures from then on; answers it in canonical form.
    func setGroupingRules(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let appID = try await authenticate(request, context)
        let document = try await crashes.setGroupingRules(appID: appID, document: try await smallBody(request))
        return Self.raw(Array(document.utf8), contentType: "application/json")
    }

    // MARK: debuginfod

    /// `HEAD /buildid/{id}/debuginfo|executable`: the GET's headers.
    func debugFileHead(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let response = try await debugFile(request, context)
        return Response(status: response.status, headers: response.headers)
    }

    /// `/buildid/{id}/source/{path}`: sources are not stored (yet).
    func debugSource(_ request: Request, _ context: BasicRequestContext) async throws -> Response {
        let id = try context.parameters.require("buildId").lowercased()
        guard BundleManifest.isBuildID(id) else { throw ServerError(.badRequest, "invalid build-id") }
        throw ServerError(.notFound, "no sources are stored for build-id \(id)")
    }

    // MARK: Helpers

    /// A report body, at most `--max-report-bytes` (413 above).
    /// The report's bytes, each charged to `charge` as it arrives (the bytes of all requests'
    /// bodies in memory are bounded by `--max-crash-bytes-in-flight`).
    private func reportBody(_ request: Request, charge: UploadLimiter.Charge) async throws -> [UInt8] {
        let limit = crashes.configuration.maxReportBytes
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > limit {
            throw ServerError(.tooLarge, "the report is \(length) bytes, over the limit of \(limit)")
        }
        var bytes: [UInt8] = []
        do {
            for try await buffer in request.body {
                guard buffer.readableBytes <= limit - bytes.count else {
                    throw ServerError(.tooLarge, "the report is over the limit of \(limit) bytes")
                }
                try charge.take(buffer.readableBytes)
                bytes.append(contentsOf: buffer.readableBytesView)
            }
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw ServerError(.tooLarge, "the report is over the limit of \(limit) bytes")
        }
        return bytes
    }

    private func smallBody(_ request: Request) async throws -> [UInt8] {
        do {
            return Array(try await request.body.collect(upTo: 1 << 20).readableBytesView)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw ServerError(.tooLarge, "the body is over 1 MiB")
        }
    }

    static func crashID(_ context: BasicRequestContext) throws -> String {
        let id = try context.parameters.require("crashId")
        guard id.utf8.count == 32, id.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else {
            throw ServerError(.badRequest, "invalid crash id")
        }
        return id
    }

    private static func identifier(_ query: FlatDictionary<Substring, Substring>, _ name: String,
                                   check: (String) -> Bool) throws -> String? {
        guard let value = query[Substring(name)].map(String.init) else { return nil }
        guard check(value) else { throw ServerError(.badRequest, "\(name) must be 1 to 128 characters of [A-Za-z0-9._+-]") }
        return value
    }

    /// A free-text label (host, system, environment): 1 to 255 printable bytes.
    private static func label(_ query: FlatDictionary<Substring, Substring>, _ name: String) throws -> String? {
        guard let value = query[Substring(name)].map(String.init) else { return nil }
        guard isLabel(value) else { throw ServerError(.badRequest, "\(name) must be 1 to 255 printable characters") }
        return value
    }

    /// Whether `value` may be stored as a label: 1 to 255 bytes, no control characters (which
    /// PostgreSQL's text refuses in the case of NUL, and which no console line should carry).
    static func isLabel(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.count <= 255 && !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f })
    }

    private static func inputFormat(_ query: FlatDictionary<Substring, Substring>) throws -> ReportFormat? {
        guard let text = query["input_format"].map(String.init) else { return nil }
        guard let format = ReportFormat(rawValue: text) else {
            throw ServerError(.badRequest, "input_format must be one of \(ReportFormat.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return format
    }

    private static func waitSeconds(_ query: FlatDictionary<Substring, Substring>) throws -> Double {
        guard let text = query["wait"] else { return 0 }
        guard let seconds = Double(text), seconds >= 0, seconds <= 30 else {
            throw ServerError(.badRequest, "wait must be a number of seconds from 0 to 30")
        }
        return seconds
    }

    private static func integer(_ query: FlatDictionary<Substring, Substring>, _ name: String, default fallback: Int,
                                range: ClosedRange<Int>) throws -> Int {
        guard let text = query[Substring(name)] else { return fallback }
        guard let value = Int(text), range.contains(value) else {
            throw ServerError(.badRequest, "\(name) must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// `since=`: RFC 3339 or seconds since 1970, as milliseconds.
    private static func since(_ query: FlatDictionary<Substring, Substring>) throws -> Int64? {
        guard let text = query["since"].map(String.init) else { return nil }
        if let seconds = Double(text), seconds.isFinite, seconds >= 0 { return Int64(seconds * 1000) }
        if let date = try? Date(text, strategy: .iso8601) { return Int64(date.timeIntervalSince1970 * 1000) }
        throw ServerError(.badRequest, "since must be an RFC 3339 time or seconds since 1970")
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    static func raw(_ bytes: [UInt8], contentType: String, status: HTTPResponse.Status = .ok) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = contentType
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
