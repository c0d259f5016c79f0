/// The JSON bodies of the symbol API (`docs/http-api.md`), shared by the client (SymClient) and the
/// server (SymServer) so the two cannot drift apart.

/// `POST /api/v1/apps/{appId}/symbols/missing` request body (`docs/http-api.md`).
public struct MissingSymbolsRequest: Codable, Sendable, Equatable {
    /// One module the client has.
    public struct Module: Codable, Sendable, Equatable {
        /// Lowercase hex build-id.
        public var buildID: String
        /// File name.
        public var name: String
        /// Architecture name.
        public var arch: String
        /// Whether the client's files carry DWARF (nil: not said, as by clients before 0.2).
        public var hasDWARF: Bool?
        /// Whether the client's upload would include the debug file (nil: not said).
        public var hasDebugFile: Bool?

        /// Creates a module entry.
        public init(buildID: String, name: String, arch: String, hasDWARF: Bool? = nil, hasDebugFile: Bool? = nil) {
            self.buildID = buildID
            self.name = name
            self.arch = arch
            self.hasDWARF = hasDWARF
            self.hasDebugFile = hasDebugFile
        }

        enum CodingKeys: String, CodingKey {
            case buildID = "build_id", name, arch, hasDWARF = "has_dwarf", hasDebugFile = "has_debug_file"
        }

        /// Decodes a module entry; only `build_id` is required (`name` and `arch` default to "").
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            buildID = try container.decode(String.self, forKey: .buildID)
            name = try container.decodeIfPresent(String.self, forKey: .name) ?? ""
            arch = try container.decodeIfPresent(String.self, forKey: .arch) ?? ""
            hasDWARF = try container.decodeIfPresent(Bool.self, forKey: .hasDWARF)
            hasDebugFile = try container.decodeIfPresent(Bool.self, forKey: .hasDebugFile)
        }
    }

    /// Application version the modules belong to.
    public var version: String
    /// Package identifier, may be empty.
    public var package: String
    /// `linux` or `android`.
    public var platform: String
    /// Every module of the version, missing or not: the server links the present ones.
    public var modules: [Module]

    /// Creates a request.
    public init(version: String, package: String, platform: String, modules: [Module]) {
        self.version = version
        self.package = package
        self.platform = platform
        self.modules = modules
    }

    enum CodingKeys: String, CodingKey {
        case version, package, platform, modules
    }

    /// Decodes a request; `package` defaults to "" and `platform` to `linux`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(String.self, forKey: .version)
        package = try container.decodeIfPresent(String.self, forKey: .package) ?? ""
        platform = try container.decodeIfPresent(String.self, forKey: .platform) ?? "linux"
        modules = try container.decode([Module].self, forKey: .modules)
    }
}

/// `POST /api/v1/apps/{appId}/symbols/missing` answer.
public struct MissingSymbolsResponse: Codable, Sendable, Equatable {
    /// Build-ids the server lacks: upload these.
    public var missing: [String]
    /// Build-ids it has (now linked to the version).
    public var present: [String]
    /// Build-ids among `present` whose stored symbols the client's would improve (its modules
    /// said `has_dwarf` where the stored table has no DWARF, or `has_debug_file` where no debug
    /// file is stored): upload these too. Absent from older servers' answers (decoded as empty).
    public var improvable: [String]

    /// Creates an answer.
    public init(missing: [String], present: [String], improvable: [String] = []) {
        self.missing = missing
        self.present = present
        self.improvable = improvable
    }

    enum CodingKeys: String, CodingKey {
        case missing, present, improvable
    }

    /// Decodes an answer; `improvable` defaults to empty.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        missing = try container.decode([String].self, forKey: .missing)
        present = try container.decode([String].self, forKey: .present)
        improvable = try container.decodeIfPresent([String].self, forKey: .improvable) ?? []
    }
}

/// `POST /api/v1/apps/{appId}/symbols` answer (201).
public struct UploadResponse: Codable, Sendable, Equatable {
    /// The version the bundle was stored under.
    public var version: String
    /// Build-ids stored by this upload: new ones, and those in `improved`.
    public var stored: [String]
    /// Build-ids the server had, whose table this upload replaced with a richer one or to which
    /// it added the missing debug file (a subset of `stored`, so older clients count them as
    /// stored). Absent from older servers' answers (decoded as empty).
    public var improved: [String]
    /// Build-ids the server had already, left as they were.
    public var alreadyPresent: [String]

    /// Creates an answer.
    public init(version: String, stored: [String], improved: [String] = [], alreadyPresent: [String]) {
        self.version = version
        self.stored = stored
        self.improved = improved
        self.alreadyPresent = alreadyPresent
    }

    enum CodingKeys: String, CodingKey {
        case version, stored, improved, alreadyPresent = "already_present"
    }

    /// Decodes an answer; `improved` defaults to empty.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        version = try container.decode(String.self, forKey: .version)
        stored = try container.decode([String].self, forKey: .stored)
        improved = try container.decodeIfPresent([String].self, forKey: .improved) ?? []
        alreadyPresent = try container.decode([String].self, forKey: .alreadyPresent)
    }
}

/// The JSON error body of any non-2xx answer: `{"error": {"code": …, "message": …}}`.
public struct ErrorResponse: Codable, Sendable, Equatable {
    /// The error's stable code and message.
    public struct Detail: Codable, Sendable, Equatable {
        /// Stable machine-readable code (`unauthorized`, `too-large`, …).
        public var code: String
        /// Human-readable explanation.
        public var message: String

        /// Creates a detail.
        public init(code: String, message: String) {
            self.code = code
            self.message = message
        }
    }

    /// The error.
    public var error: Detail

    /// Creates an error body.
    public init(code: String, message: String) {
        error = Detail(code: code, message: message)
    }
}
