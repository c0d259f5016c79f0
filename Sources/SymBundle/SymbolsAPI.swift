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

        /// Creates a module entry.
        public init(buildID: String, name: String, arch: String) {
            self.buildID = buildID
            self.name = name
            self.arch = arch
        }

        enum CodingKeys: String, CodingKey {
            case buildID = "build_id", name, arch
        }

        /// Decodes a module entry; only `build_id` is required (`name` and `arch` default to "").
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            buildID = try container.decode(String.self, forKey: .buildID)
            name = try container.decodeIfPresent(String.self, forKey: .name) ?? ""
            arch = try container.decodeIfPresent(String.self, forKey: .arch) ?? ""
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

    /// Creates an answer.
    public init(missing: [String], present: [String]) {
        self.missing = missing
        self.present = present
    }
}

/// `POST /api/v1/apps/{appId}/symbols` answer (201).
public struct UploadResponse: Codable, Sendable, Equatable {
    /// The version the bundle was stored under.
    public var version: String
    /// Build-ids stored by this upload.
    public var stored: [String]
    /// Build-ids the server had already (not stored again).
    public var alreadyPresent: [String]

    /// Creates an answer.
    public init(version: String, stored: [String], alreadyPresent: [String]) {
        self.version = version
        self.stored = stored
        self.alreadyPresent = alreadyPresent
    }

    enum CodingKeys: String, CodingKey {
        case version, stored, alreadyPresent = "already_present"
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
