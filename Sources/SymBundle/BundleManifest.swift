import Foundation
import SymBytes

/// `manifest.json` of a symbol bundle: who the symbols belong to and one entry per module.
///
/// A bundle is a zip holding `manifest.json`, `symbols/<build-id>.csym` for every module and, when
/// the debug file was included, `debug/<build-id>.debug`. The layout is documented in
/// `docs/http-api.md` ("Symbol bundles"). JSON keys are snake_case.
public struct BundleManifest: Codable, Sendable, Equatable {
    /// The bundle format this manifest follows.
    public static let currentFormatVersion = 1
    /// The value of `format`, so a stray JSON file is not taken for a manifest.
    public static let formatName = "crashsym-bundle"
    /// The name of the manifest entry inside the zip.
    public static let entryName = "manifest.json"

    /// Always `crashsym-bundle`.
    public var format: String
    /// Format version (1).
    public var formatVersion: Int
    /// Application id the symbols belong to.
    public var appID: String
    /// Package / bundle identifier (`com.example.app`), may be empty.
    public var package: String
    /// Application version (`1.4.2`).
    public var version: String
    /// `linux` or `android`.
    public var platform: String
    /// The tool that wrote the bundle (`crashsym 0.1.0`).
    public var tool: String
    /// Creation time, RFC 3339 UTC (`2026-11-22T15:04:05Z`).
    public var created: String
    /// One entry per module, unique by build-id.
    public var modules: [Module]

    /// One module (ELF file) of the bundle.
    public struct Module: Codable, Sendable, Equatable {
        /// Lowercase hex GNU build-id.
        public var buildID: String
        /// File name of the module (`libfoo.so`).
        public var name: String
        /// Architecture name (`x86_64`, `aarch64`, ...).
        public var arch: String
        /// Whether the table has DWARF (false: names from the ELF symbol table only).
        public var hasDWARF: Bool
        /// The `.csym` table: always present.
        public var symbols: File
        /// The original debug file, with `--include-debug`.
        public var debug: File?

        /// Creates a module entry.
        public init(buildID: String, name: String, arch: String, hasDWARF: Bool, symbols: File, debug: File? = nil) {
            self.buildID = buildID
            self.name = name
            self.arch = arch
            self.hasDWARF = hasDWARF
            self.symbols = symbols
            self.debug = debug
        }

        enum CodingKeys: String, CodingKey {
            case buildID = "build_id", name, arch, hasDWARF = "has_dwarf", symbols, debug
        }
    }

    /// A file inside the bundle.
    public struct File: Codable, Sendable, Equatable {
        /// Entry path inside the zip (`symbols/<build-id>.csym`, `debug/<build-id>.debug`).
        public var path: String
        /// Size in bytes (uncompressed).
        public var size: UInt64
        /// Lowercase hex SHA-256 of the contents.
        public var sha256: String

        /// Creates a file entry.
        public init(path: String, size: UInt64, sha256: String) {
            self.path = path
            self.size = size
            self.sha256 = sha256
        }
    }

    /// Creates a manifest.
    public init(appID: String, package: String, version: String, platform: String, tool: String,
                created: String, modules: [Module]) {
        self.format = Self.formatName
        self.formatVersion = Self.currentFormatVersion
        self.appID = appID
        self.package = package
        self.version = version
        self.platform = platform
        self.tool = tool
        self.created = created
        self.modules = modules
    }

    enum CodingKeys: String, CodingKey {
        case format, formatVersion = "format_version", appID = "app_id", package, version, platform, tool, created, modules
    }

    /// The expected entry path of a module's table.
    public static func symbolsPath(buildID: String) -> String { "symbols/\(buildID).csym" }
    /// The expected entry path of a module's debug file.
    public static func debugPath(buildID: String) -> String { "debug/\(buildID).debug" }
}
