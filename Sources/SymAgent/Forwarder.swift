import SymBytes
import SymHTTP
import SymReport
import Symbolication
#if canImport(Glibc)
import Glibc
#endif

/// Sends one queued report to `POST /api/v1/apps/{appId}/crashes` over libcurl (SymHTTP), with
/// an `Idempotency-Key` derived from its bytes, and says what the answer means for the queue.
public final class Forwarder {
    /// What the queue does with a report after one attempt.
    public enum Outcome: Sendable, Equatable {
        /// Stored by the server (2xx): remove it from the queue.
        case delivered(status: Int)
        /// Refused for good (4xx other than 401, 403, 408 and 429): move it to `rejected/` with
        /// this answer.
        case rejected(status: Int, answer: [UInt8])
        /// Worth another attempt later (connection failure, 401/403: a key to fix, 408, 429, 5xx), after `retryAfter`
        /// when the server gave one.
        case transient(reason: String, retryAfter: Duration?)
    }

    private let configuration: AgentConfiguration
    private let transfer: CurlTransfer
    private let userAgent: String
    /// The `?system=` of every crash: the host's OS, kernel and CPU (nil when the server would
    /// refuse it as a label, so that it never costs a crash).
    private let system: String?
    /// `--symbols`: each report symbolicated here and sent as crashsym JSON (nil: sent as taken).
    private let symbolication: LocalSymbolication?

    /// The drop totals reported with each submission until acknowledged (nil: none).
    private let counts: DropCounts?
    /// The versions the server knows for build-ids, shared by the senders.
    private let versions: BuildVersions

    /// A forwarder; fails when libcurl cannot be loaded.
    public init(configuration: AgentConfiguration, host: HostMetadata = .current,
                symbolication: LocalSymbolication? = nil, counts: DropCounts? = nil,
                versions: BuildVersions = BuildVersions()) throws(AgentError) {
        self.configuration = configuration
        self.symbolication = symbolication
        self.counts = counts
        self.versions = versions
        do {
            transfer = try CurlTransfer()
        } catch {
            throw AgentError("cannot send crashes: \(error.message)")
        }
        userAgent = "crashsym-agent (\(host.system))"
        system = AgentConfiguration.isPrintable(host.system) ? host.system : nil
    }

    /// The `Idempotency-Key` of the file at `path`: `sha256:` and the SHA-256 of its bytes, so a
    /// retry after a lost answer (or a file taken twice after a power loss) is stored once.
    public static func idempotencyKey(ofFile path: String) throws(AgentError) -> String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw AgentError("\(path): cannot open: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var hasher = SHA256Hasher()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw AgentError("\(path): cannot read: \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
        }
        return "sha256:" + hexString(hasher.finalize())
    }

    /// The URL a report with `metadata` is posted to, its settings as query parameters.
    func url(for metadata: ReportQueue.Metadata, format: String?) -> String {
        var base = configuration.server
        while base.hasSuffix("/") { base.removeLast() }
        var query = [("host", configuration.host)]
        if let system { query.append(("system", system)) }
        if let version = metadata.version { query.append(("version", version)) }
        if let environment = metadata.environment { query.append(("environment", environment)) }
        if let format { query.append(("input_format", format)) }
        let encoded = query.map { "\($0.0)=\(PercentEncoding.encode($0.1, as: .queryComponent))" }.joined(separator: "&")
        return "\(base)/api/v1/apps/\(PercentEncoding.encode(metadata.appID, as: .pathSegment))/crashes?\(encoded)"
    }

    /// One attempt at sending the report at `path`, to the app and with the version that
    /// `route` decides.
    public func send(path: String, metadata queued: ReportQueue.Metadata) -> Outcome {
        let key: String
        do {
            key = try Self.idempotencyKey(ofFile: path)
        } catch {
            return .rejected(status: 0, answer: Self.refusal(code: "unreadable", message: error.description))
        }
        let metadata: ReportQueue.Metadata
        switch route(queued, path: path) {
        case .send(let routed): metadata = routed
        case .stop(let outcome): return outcome
        }
        // The Idempotency-Key stays the taken file's: symbolicating it again gives the same crash.
        var body = HTTPRequest.Body.file(path: path), format = metadata.format, contentType = "text/plain; charset=utf-8"
        if let symbolication {
            // A file crashsym cannot read as a report is sent as taken: the server says why not.
            if case .success(let json) = symbolication.json(ofFile: path, format: metadata.format.flatMap(ReportFormat.init(rawValue:))) {
                body = .bytes(json)
                format = ReportFormat.crashsymJSON.rawValue
                contentType = "application/json"
            }
        }
        var headers = ["Authorization: Bearer \(configuration.appKey(for: metadata.appID))", "Idempotency-Key: \(key)",
                       "Accept: application/json"]
        let sent = ContinuousClock.now
        let reported = counts?.pending(now: sent)
        if let reported { headers.append("Crashsym-Agent-Counts: \(reported.header)") }
        let request = HTTPRequest(url: url(for: metadata, format: format), body: body, contentType: contentType, headers: headers)
        let outcome = transfer.perform(request, userAgent: userAgent, timeout: configuration.requestTimeout,
                                       connectTimeout: .seconds(10), stallTimeout: .seconds(30))
        switch outcome {
        case .success(let response) where (200..<300).contains(response.status):
            if let reported { counts?.acknowledge(reported, sent: sent) }
            return .delivered(status: response.status)
        case .success(let response) where response.status == 408 || response.status == 429 || response.status >= 500
                                          || response.status < 400:
            let text = String(decoding: response.body.prefix(200), as: UTF8.self).split(whereSeparator: \.isNewline).joined(separator: " ")
            return .transient(reason: "HTTP \(response.status): \(text)", retryAfter: response.retryAfter)
        case .success(let response) where response.status == 401 || response.status == 403:
            // The key, not the report, is wrong (rotated, mistyped): keep every report queued until
            // the configuration is fixed instead of rejecting them all.
            return .transient(reason: "HTTP \(response.status): the server refused the app key for app \(metadata.appID) "
                                + "(check --app-id and --app-key)", retryAfter: nil)
        case .success(let response):
            return .rejected(status: response.status, answer: response.body)
        case .failure(let failure) where failure.kind == .io:
            return .rejected(status: 0, answer: Self.refusal(code: "unreadable", message: failure.message))
        case .failure(let failure):
            return .transient(reason: "\(HTTPRequest.redacting(configuration.server)): \(failure.message)", retryAfter: nil)
        }
    }

    /// Where a report goes, once its program is known.
    enum Routing {
        /// Send it with this metadata.
        case send(ReportQueue.Metadata)
        /// Do not send it now: this is the attempt's outcome.
        case stop(Outcome)
    }

    /// The app, version and environment of the report at `path` (docs/agent.md, "Apps and
    /// versions"): its program's `apps` entry when one matches (over the spool's app; the version
    /// of another app's spool is not carried over), and, when neither the configuration nor the
    /// report states a version, the newest version the server knows for the program's build-id.
    /// The report is read only when the answer depends on it.
    func route(_ queued: ReportQueue.Metadata, path: String) -> Routing {
        var metadata = queued
        guard !configuration.apps.isEmpty || metadata.version == nil else { return .send(metadata) }
        guard let report = Self.report(path: path, format: metadata.format) else {
            return metadata.appID.isEmpty ? .stop(Self.noApp(program: nil)) : .send(metadata)
        }
        let executable = report.executableModule
        if let executable, let app = configuration.app(forExecutable: executable.path) {
            if app.appID != metadata.appID {
                metadata.appID = app.appID
                metadata.version = app.version
            } else {
                metadata.version = app.version ?? metadata.version
            }
            metadata.environment = app.environment ?? metadata.environment
        }
        guard !metadata.appID.isEmpty else { return .stop(Self.noApp(program: executable?.path)) }
        guard metadata.version == nil, report.statedVersion == nil, let buildID = executable?.buildID,
              buildID.utf8.count <= 128, buildID.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else {
            return .send(metadata)
        }
        switch version(ofBuild: buildID, appID: metadata.appID) {
        case .success(.version(let version)): metadata.version = version
        case .success(.unknown): break
        case .failure(let failure): return .stop(failure.outcome)
        }
        return .send(metadata)
    }

    /// The answer kept in `rejected/` for a report no app is configured for.
    static func noApp(program: String?) -> Outcome {
        let message = "no app for this report: its program \(program ?? "(not named by the report)") matches no \"apps\" entry, "
            + "and the agent has no app-id (give app-id, or an \"apps\" entry for the program)"
        return .rejected(status: 0, answer: Self.refusal(code: "no-app", message: message))
    }

    /// Reports read to route them at most this long (a larger one is sent as it is routed by the
    /// configuration alone).
    static let maximumReportBytes = 16 << 20

    /// The report in the file at `path`, parsed; nil when it is not one crashsym reads.
    static func report(path: String, format: String?) -> CrashReport? {
        guard let file = try? MappedFile(path: path), file.count <= maximumReportBytes else { return nil }
        let text = withExtendedLifetime(file) { String(decoding: file.bytes, as: UTF8.self) }
        return try? CrashReport.parse(text, format: format.flatMap(ReportFormat.init(rawValue:)))
    }

    /// The version the server knows for `buildID` of `appID` (`GET …/builds/{build-id}`),
    /// remembered in `versions`; a failure worth retrying (the server down, the key refused)
    /// stops the attempt as sending would.
    func version(ofBuild buildID: String, appID: String) -> Result<BuildVersions.Answer, BuildLookupFailure> {
        if let known = versions.answer(appID: appID, buildID: buildID) { return .success(known) }
        var base = configuration.server
        while base.hasSuffix("/") { base.removeLast() }
        let request = HTTPRequest(.get, url: "\(base)/api/v1/apps/\(PercentEncoding.encode(appID, as: .pathSegment))/builds/\(buildID)",
                                  headers: ["Authorization: Bearer \(configuration.appKey(for: appID))", "Accept: application/json"])
        let answer: BuildVersions.Answer
        switch transfer.perform(request, userAgent: userAgent, timeout: configuration.requestTimeout, connectTimeout: .seconds(10),
                                stallTimeout: .seconds(30)) {
        case .success(let response) where response.status == 200:
            let newest = (try? JSONValue.parse(String(decoding: response.body, as: UTF8.self)))?["versions"]?.array?.first?["version"]?.string
            answer = newest.map(BuildVersions.Answer.version) ?? .unknown
        case .success(let response) where response.status == 401 || response.status == 403:
            return .failure(BuildLookupFailure(outcome: .transient(
                reason: "HTTP \(response.status): the server refused the app key for app \(appID) (check --app-id and --app-key)", retryAfter: nil)))
        case .success(let response) where response.status == 408 || response.status == 429 || response.status >= 500:
            return .failure(BuildLookupFailure(outcome: .transient(reason: "HTTP \(response.status) asking the version of build-id \(buildID)",
                                                                   retryAfter: response.retryAfter)))
        case .success:
            // 404 (not uploaded, or a server without the route), or another refusal: no version.
            answer = .unknown
        case .failure(let failure):
            return .failure(BuildLookupFailure(outcome: .transient(reason: "\(HTTPRequest.redacting(configuration.server)): \(failure.message)",
                                                                   retryAfter: nil)))
        }
        versions.remember(answer, appID: appID, buildID: buildID)
        return .success(answer)
    }

    /// A build-id lookup that failed in a way worth retrying: the attempt's outcome.
    struct BuildLookupFailure: Error {
        var outcome: Outcome
    }
}

/// An agent failure with a message saying what to do.
public struct AgentError: Error, CustomStringConvertible, Sendable {
    public var description: String
    /// An error.
    public init(_ description: String) { self.description = description }
}

extension Forwarder {
    /// The answer kept beside a report the agent refuses itself (`rejected/`), in the server's
    /// error shape: `{"error":{"code":…,"message":…}}`.
    static func refusal(code: String, message: String) -> [UInt8] {
        var json = JSONWriter()
        json.beginObject()
        json.beginObject("error")
        json.field("code", code)
        json.field("message", message)
        json.endObject()
        json.endObject()
        return Array(json.text.utf8)
    }
}
