import SymELF
import SymReport

/// Debug files fetched by build-id from debuginfod servers (elfutils' protocol: `GET
/// <server>/buildid/<id>/debuginfo`, then `/executable`), into elfutils' own client cache, so
/// crashsym, gdb and `debuginfod-find` share what was downloaded.
///
/// As elfutils' client does: `DEBUGINFOD_URLS` (space-separated) names the servers, asked in
/// order; `DEBUGINFOD_CACHE_PATH` the cache (else `$XDG_CACHE_HOME/debuginfod_client`, else
/// `~/.cache/debuginfod_client`), laid out as `<cache>/<build-id>/debuginfo`; a miss on every server
/// is remembered as an empty file with no permissions, for `<cache>/cache_miss_s` seconds (600
/// by default), so a module no server has is not asked for on every run; `DEBUGINFOD_TIMEOUT`
/// (seconds, default 90) is how long a server may take to start sending before it is skipped;
/// `DEBUGINFOD_MAXSIZE` caps a download. Files arrive whole or not at all (written beside the
/// cache entry and renamed), and each is checked to carry the build-id asked for.
public struct DebuginfodProvider: SymbolProvider {
    /// The servers and the client cache.
    public struct Configuration: Sendable {
        /// Server base URLs, asked in order.
        public var servers: [String]
        /// The client cache directory.
        public var cacheDirectory: String
        /// How long a server may take to accept a connection and start sending.
        public var timeout: Duration
        /// How long a miss on every server is remembered (overridden by `<cache>/cache_miss_s`).
        public var missExpiry: Duration
        /// The largest file downloaded.
        public var maxBytes: UInt64
        /// Told of each download as it starts (a progress line on a terminal); nil: silent.
        public var progress: (@Sendable (String) -> Void)?

        /// A configuration for `servers` and `cacheDirectory`.
        public init(servers: [String], cacheDirectory: String, timeout: Duration = .seconds(90),
                    missExpiry: Duration = .seconds(600), maxBytes: UInt64 = 8 << 30,
                    progress: (@Sendable (String) -> Void)? = nil) {
            self.servers = servers.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
            self.cacheDirectory = cacheDirectory
            self.timeout = timeout
            self.missExpiry = missExpiry
            self.maxBytes = maxBytes
            self.progress = progress
        }

        /// The configuration elfutils' client would use: `extraServers` (from `--debuginfod`)
        /// first, then `DEBUGINFOD_URLS`; nil when no server is named or no cache can be formed.
        public static func fromEnvironment(extraServers: [String] = []) -> Configuration? {
            let listed = SymbolSources.environment("DEBUGINFOD_URLS").map {
                $0.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).map(String.init)
            } ?? []
            let servers = extraServers + listed
            guard !servers.isEmpty else { return nil }
            let cache: String
            if let explicit = SymbolSources.environment("DEBUGINFOD_CACHE_PATH") {
                cache = explicit
            } else if let xdg = SymbolSources.environment("XDG_CACHE_HOME"), xdg.hasPrefix("/") {
                cache = xdg + "/debuginfod_client"
            } else if let home = SymbolSources.environment("HOME") {
                cache = home + "/.cache/debuginfod_client"
            } else {
                return nil
            }
            var configuration = Configuration(servers: servers, cacheDirectory: cache)
            if let text = SymbolSources.environment("DEBUGINFOD_TIMEOUT"), let seconds = Int(text), seconds > 0 {
                configuration.timeout = .seconds(seconds)
            }
            if let text = SymbolSources.environment("DEBUGINFOD_MAXSIZE"), let bytes = UInt64(text), bytes > 0 {
                configuration.maxBytes = bytes
            }
            return configuration
        }
    }

    /// The settings.
    public let configuration: Configuration

    /// A provider fetching from `configuration.servers`.
    public init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// The candidates' source.
    public static let source = SymbolCandidate.Source(rawValue: "debuginfod")

    /// The artifacts asked for, in order: the separate debug file, then the binary itself (which
    /// may carry DWARF or at least its symbol table).
    static let artifacts = ["debuginfo", "executable"]

    public var fetchesOverNetwork: Bool { true }

    public func find(_ module: ModuleQuery) -> SymbolAnswer {
        // Only for a verified build-id, and only while nothing with DWARF has been found.
        guard let id = module.buildID, Self.isBuildID(id), !module.tableFound,
              !module.objects.contains(where: { $0.hasDWARF }) else { return SymbolAnswer() }
        var candidates: [SymbolCandidate] = []
        for artifact in Self.artifacts {
            // The binary is worth fetching only when no provider found it.
            if artifact == "executable" && !module.objects.isEmpty { continue }
            if let object = fetch(artifact, of: module, candidates: &candidates) {
                return SymbolAnswer(objects: [object], candidates: candidates)
            }
        }
        return .notFound(candidates)
    }

    /// The separate debug file of the module with `buildID` (lowercase hex), from the cache or a
    /// server; nil when none has it (for `DebugFileLocator`, which checks it is `binary`'s).
    public func debugFile(buildID: String, name: String, path: String) -> ELFFile? {
        guard Self.isBuildID(buildID) else { return nil }
        var candidates: [SymbolCandidate] = []
        return fetch("debuginfo", of: ModuleQuery(buildID: buildID, name: name, path: path), candidates: &candidates)
    }

    /// `artifact` of `module` from the cache, else from the first server that has it, checked to
    /// be the module's; every place tried is added to `candidates`.
    func fetch(_ artifact: String, of module: ModuleQuery, candidates: inout [SymbolCandidate]) -> ELFFile? {
        guard let id = module.buildID else { return nil }
        let directory = "\(configuration.cacheDirectory)/\(id)"
        let entry = CachedDownload(path: "\(directory)/\(artifact)", directory: directory, missMarker: .emptyEntry,
                                   missExpiry: missExpirySeconds)
        switch entry.state() {
        case .present:
            let inspection = module.inspect(entry.path, source: Self.source)
            candidates.append(inspection.candidate)
            return inspection.object
        case .miss:
            candidates.append(SymbolCandidate(source: Self.source, location: entry.path,
                                              outcome: .unreadable(reason: "no server had it (a remembered miss)")))
            return nil
        case .absent:
            break
        }
        var everyServerMissed = true
        for server in configuration.servers {
            let url = "\(server)/buildid/\(id)/\(artifact)"
            switch entry.download(url, maxBytes: configuration.maxBytes, connectTimeout: configuration.timeout,
                                  progress: configuration.progress) {
            case .success(200):
                let inspection = module.inspect(entry.path, source: Self.source)
                candidates.append(SymbolCandidate(source: Self.source, location: url, outcome: inspection.candidate.outcome))
                if let object = inspection.object { return object }
                // Not the module's after all (a server answering with another build): not kept.
                entry.discard()
            case .success(let status):
                if status != 404 { everyServerMissed = false }
                candidates.append(SymbolCandidate(source: Self.source, location: url,
                                                  outcome: status == 404 ? .absent : .unreadable(reason: "HTTP \(status)")))
            case .failure(let failure):
                everyServerMissed = false
                candidates.append(SymbolCandidate(source: Self.source, location: url, outcome: .unreadable(reason: failure.message)))
            }
        }
        if everyServerMissed { entry.rememberMiss() }
        return nil
    }

    /// `<cache>/cache_miss_s` when it holds a number, else the configuration's expiry.
    var missExpirySeconds: Int64 {
        if let bytes = FileSystem.prefix(of: configuration.cacheDirectory + "/cache_miss_s", count: 32),
           let seconds = Int64(String(decoding: bytes.filter { $0 >= 0x30 && $0 <= 0x39 }, as: UTF8.self)) {
            return seconds
        }
        return configuration.missExpiry.components.seconds
    }

    /// Whether `text` is a build-id as a server path may carry it (hex digits only).
    static func isBuildID(_ text: String) -> Bool {
        !text.isEmpty && text.count <= 128 && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}
