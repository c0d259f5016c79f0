#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import SymHTTP
import SymReport

/// Symbol tables fetched from a crashsym server (`GET /api/v1/apps/{app}/symbols/{build-id}`,
/// docs/http-api.md), for modules that no local source has: what `crashsym upload` sent is then
/// enough to symbolicate on any machine.
///
/// Each table is downloaded once into `<cache>/servers/<host>/<app>/<build-id>.csym` (whole or
/// not at all) and opened from there on later runs; a table the server lacks (404) is remembered
/// for `missExpiry`, so a module nobody uploaded costs one request per expiry, not one per run.
/// Every table is checked to carry the build-id asked for.
public struct ServerTableProvider: SymbolProvider {
    /// Where the server is and how to authenticate.
    public struct Configuration: Sendable {
        /// The server's base URL (`http://host:8080`).
        public var server: String
        /// The app whose tables are fetched.
        public var appID: String
        /// The app's key (sent as a Bearer token, never printed).
        public var appKey: String
        /// Where fetched tables are kept (the crashsym cache directory).
        public var cacheDirectory: String
        /// How long a server may take to connect or to keep sending.
        public var timeout: Duration
        /// How long a table the server lacks is remembered as missing.
        public var missExpiry: Duration

        /// A configuration.
        public init(server: String, appID: String, appKey: String, cacheDirectory: String,
                    timeout: Duration = .seconds(30), missExpiry: Duration = .seconds(600)) {
            var base = server
            while base.hasSuffix("/") { base.removeLast() }
            self.server = base
            self.appID = appID
            self.appKey = appKey
            self.cacheDirectory = cacheDirectory
            self.timeout = timeout
            self.missExpiry = missExpiry
        }

        /// The server with any `user:password@` replaced, for messages.
        public var displayServer: String {
            let parts = server.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
            // "http:", "", "user:password@host:port", rest
            guard parts.count >= 3, let at = parts[2].lastIndex(of: "@") else { return server }
            var shown = parts.map(String.init)
            shown[2] = "***@" + parts[2][parts[2].index(after: at)...]
            return shown.joined(separator: "/")
        }

        /// `<cache>/servers/<host and port>/<app id>`: one directory per server and app, named
        /// with characters safe in a path.
        var directory: String {
            let host = server.split(separator: "/", omittingEmptySubsequences: true).dropFirst().first.map(String.init) ?? "server"
            let hostName = host.split(separator: "@").last.map(String.init) ?? host
            return "\(cacheDirectory)/servers/\(Self.safe(hostName))/\(Self.safe(appID))"
        }

        static func safe(_ text: String) -> String {
            String(text.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_" ? $0 : "_" })
        }
    }

    /// The settings.
    public let configuration: Configuration
    /// Opened tables, shared by the symbolicators of a process.
    let tables = OpenedTableCache(budget: 256 << 20)

    /// A provider fetching from `configuration.server`.
    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    public func find(_ module: ModuleQuery) -> SymbolAnswer {
        // A table is only fetched by build-id, and only when no provider before found one.
        guard let id = module.buildID, DebuginfodProvider.isBuildID(id), !module.tableFound else { return SymbolAnswer() }
        let source = SymbolCandidate.Source(rawValue: configuration.displayServer)
        let directory = configuration.directory
        let path = "\(directory)/\(id).csym"
        let missPath = "\(directory)/\(id).missing"
        let url = "\(configuration.server)/api/v1/apps/\(configuration.appID)/symbols/\(id)"
        let display = "\(configuration.displayServer)/api/v1/apps/\(configuration.appID)/symbols/\(id)"
        if FileSystem.kind(of: path) == .file {
            return module.table(at: path, source: source, opening: tables)
        }
        if let age = Self.age(of: missPath), age < configuration.missExpiry.components.seconds {
            return .notFound([SymbolCandidate(source: source, location: display,
                                              outcome: .unreadable(reason: "the server had no table for it (remembered for \(configuration.missExpiry.components.seconds) s)"))])
        }
        do {
            try FileSystem.createDirectory(directory)
        } catch {
            return .notFound([SymbolCandidate(source: source, location: display, outcome: .unreadable(reason: "\(error)"))])
        }
        let transfer: CurlTransfer
        do {
            transfer = try CurlTransfer()
        } catch {
            return .notFound([SymbolCandidate(source: source, location: display, outcome: .unreadable(reason: error.message))])
        }
        let outcome = transfer.download(url, headers: ["Authorization: Bearer \(configuration.appKey)"], to: path,
                                        maxBytes: 8 << 30, userAgent: "crashsym", timeout: .seconds(3600),
                                        connectTimeout: configuration.timeout, stallTimeout: configuration.timeout)
        switch outcome {
        case .success(let download) where download.status == 200:
            unlink(missPath)
            let answer = module.table(at: path, source: source, opening: tables)
            if answer.table == nil { unlink(path) }
            return SymbolAnswer(table: answer.table, tableLocation: answer.table == nil ? nil : display,
                                candidates: answer.candidates.map { SymbolCandidate(source: source, location: display, outcome: $0.outcome) })
        case .success(let download):
            if download.status == 404 {
                let descriptor = open(missPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                if descriptor >= 0 { close(descriptor) }
                return .notFound([SymbolCandidate(source: source, location: display, outcome: .absent)])
            }
            let hint = download.status == 401
                ? "the server refused the key (HTTP 401): check that --app-id is the id printed by `crashsym apps create` and the key is its key"
                : "HTTP \(download.status)"
            return .notFound([SymbolCandidate(source: source, location: display, outcome: .unreadable(reason: hint))])
        case .failure(let failure):
            return .notFound([SymbolCandidate(source: source, location: display, outcome: .unreadable(reason: failure.message))])
        }
    }

    /// Seconds since `path` was last written; nil when there is no such file.
    static func age(of path: String) -> Int64? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return Int64(time(nil)) - Int64(status.st_mtim.tv_sec)
    }
}
