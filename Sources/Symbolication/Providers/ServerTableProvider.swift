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

    public var fetchesOverNetwork: Bool { true }

    public func find(_ module: ModuleQuery) -> SymbolAnswer {
        // A table is only fetched by build-id, and only when no provider before found one.
        guard let id = module.buildID, DebuginfodProvider.isBuildID(id), !module.tableFound else { return SymbolAnswer() }
        let source = SymbolCandidate.Source(rawValue: configuration.displayServer)
        let directory = configuration.directory
        let entry = CachedDownload(path: "\(directory)/\(id).csym", directory: directory,
                                   missMarker: .file("\(directory)/\(id).missing"),
                                   missExpiry: configuration.missExpiry.components.seconds)
        let url = "\(configuration.server)/api/v1/apps/\(configuration.appID)/symbols/\(id)"
        let display = "\(configuration.displayServer)/api/v1/apps/\(configuration.appID)/symbols/\(id)"
        switch entry.state() {
        case .present:
            return fetched(module.table(at: entry.path, source: source, opening: tables), display, earlier: true)
        case .miss:
            return .notFound([SymbolCandidate(source: source, location: display,
                                              outcome: .unreadable(reason: "the server had no table for it (remembered for \(configuration.missExpiry.components.seconds) s)"))])
        case .absent:
            break
        }
        switch entry.download(url, headers: ["Authorization: Bearer \(configuration.appKey)"], maxBytes: 8 << 30,
                              connectTimeout: configuration.timeout) {
        case .success(200):
            let answer = module.table(at: entry.path, source: source, opening: tables)
            if answer.table == nil { entry.discard() }
            return fetched(answer, display, earlier: false)
        case .success(404):
            entry.rememberMiss()
            return .notFound([SymbolCandidate(source: source, location: display, outcome: .absent)])
        case .success(let status):
            let hint = status == 401
                ? "the server refused the key (HTTP 401): check that --app-id is the id printed by `crashsym apps create` and the key is its key"
                : "HTTP \(status)"
            return .notFound([SymbolCandidate(source: source, location: display, outcome: .unreadable(reason: hint))])
        case .failure(let failure):
            return .notFound([SymbolCandidate(source: source, location: display, outcome: .unreadable(reason: failure.message))])
        }
    }

    /// `answer` (the cached download at `display` opened and checked) with its candidates placed
    /// at `display`, and a matching table's said to be fetched from the server (`--explain`:
    /// "fetched from <server>", by this run or, `earlier`, by one before it).
    private func fetched(_ answer: SymbolAnswer, _ display: String, earlier: Bool) -> SymbolAnswer {
        let source = SymbolCandidate.Source(rawValue: configuration.displayServer)
        let candidates = answer.candidates.map { candidate in
            SymbolCandidate(source: source, location: display,
                            outcome: candidate.isMatch && answer.table != nil
                                ? .fetched(server: configuration.displayServer, earlier: earlier) : candidate.outcome)
        }
        return SymbolAnswer(table: answer.table, tableLocation: answer.table == nil ? nil : display, candidates: candidates)
    }
}
