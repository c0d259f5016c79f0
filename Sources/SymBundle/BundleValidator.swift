import Foundation
import SymBytes
import SymELF
import SymTable

/// Limits protecting the validator against hostile bundles (zip bombs, entry floods).
public struct BundleLimits: Sendable, Equatable {
    /// Maximum number of zip entries.
    public var maxEntries: Int
    /// Maximum total uncompressed size of all entries, declared and actually inflated.
    public var maxUncompressedBytes: UInt64
    /// Maximum ratio of uncompressed to compressed size of one entry.
    public var maxCompressionRatio: UInt64
    /// Entries smaller than this are exempt from the ratio check.
    public var ratioFloorBytes: UInt64
    /// Maximum size of `manifest.json`.
    public var maxManifestBytes: Int

    /// Creates limits; the defaults suit bundles of a few GiB.
    public init(maxEntries: Int = 10_000, maxUncompressedBytes: UInt64 = 8 << 30, maxCompressionRatio: UInt64 = 100,
                ratioFloorBytes: UInt64 = 1 << 20, maxManifestBytes: Int = 16 << 20) {
        self.maxEntries = maxEntries
        self.maxUncompressedBytes = maxUncompressedBytes
        self.maxCompressionRatio = maxCompressionRatio
        self.ratioFloorBytes = ratioFloorBytes
        self.maxManifestBytes = maxManifestBytes
    }
}

/// Why a bundle was refused: a stable code, a message, and the entry concerned.
public struct BundleValidationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable error classes.
    public enum Code: String, Sendable {
        case notZip = "not-zip"
        case corruptZip = "corrupt-zip"
        case tooManyEntries = "too-many-entries"
        case tooLarge = "too-large"
        case suspiciousRatio = "suspicious-ratio"
        case badEntryName = "bad-entry-name"
        case badEntryType = "bad-entry-type"
        case duplicateEntry = "duplicate-entry"
        case missingEntry = "missing-entry"
        case unexpectedEntry = "unexpected-entry"
        case badManifest = "bad-manifest"
        case sizeMismatch = "size-mismatch"
        case checksumMismatch = "checksum-mismatch"
        case badTable = "bad-table"
        case badDebugFile = "bad-debug-file"
        case buildIDMismatch = "build-id-mismatch"
        case io
    }

    /// The error class.
    public var code: Code
    /// One line saying what is wrong.
    public var message: String
    /// The zip entry concerned, when there is one.
    public var entry: String?

    /// Creates an error.
    public init(_ code: Code, _ message: String, entry: String? = nil) {
        self.code = code
        self.message = message
        self.entry = entry
    }

    public var description: String {
        (entry.map { "\($0): " } ?? "") + message + " [\(code.rawValue)]"
    }
}

/// A bundle that passed validation, its files inflated into a staging directory.
public struct ValidatedBundle: Sendable {
    /// The manifest as uploaded.
    public var manifest: BundleManifest
    /// One entry per manifest module, in manifest order.
    public var modules: [Module]

    /// A module whose files were checked.
    public struct Module: Sendable {
        /// The manifest entry.
        public var manifest: BundleManifest.Module
        /// Path of the inflated, verified `.csym` table.
        public var symbolsPath: String
        /// Path of the inflated, verified debug file, when the bundle has one.
        public var debugPath: String?
        /// Statistics of the table (read fully during validation).
        public var statistics: SymbolTable.Statistics
    }
}

/// Validates an uploaded bundle on disk before it is accepted.
///
/// Checks, in order: zip structure; entry count, names (only `manifest.json`,
/// `symbols/<build-id>.csym`, `debug/<build-id>.debug`; no links or directories), declared sizes
/// and ratios; the manifest schema and values; that the entries are exactly the manifest's files;
/// then inflates every file (counting bytes, stopping at the limits), checks size and SHA-256,
/// reads every table fully with its build-id equal to its name, and every debug file as ELF with
/// the same build-id.
public struct BundleValidator: Sendable {
    /// The limits applied.
    public var limits: BundleLimits

    /// Creates a validator.
    public init(limits: BundleLimits = BundleLimits()) {
        self.limits = limits
    }

    /// Validates the zip at `path`, inflating its files into `stagingDirectory` (which must exist
    /// and be empty; the caller removes it).
    public func validate(zipAt path: String, stagingDirectory: String) throws(BundleValidationError) -> ValidatedBundle {
        var reader = try BundleReader(path: path, limits: limits)
        let listed = try reader.list()
        var byName: [String: BundleReader.ListedEntry] = [:]
        for entry in listed { byName[entry.path] = entry }
        guard let manifestEntry = byName[BundleManifest.entryName] else {
            throw BundleValidationError(.missingEntry, "the bundle has no manifest", entry: BundleManifest.entryName)
        }
        let manifestData = try reader.readSmall(manifestEntry, cap: limits.maxManifestBytes)
        let manifest = try Self.decodeManifest(manifestData)

        // The entries must be exactly the files the manifest names.
        var expected = Set([BundleManifest.entryName])
        for module in manifest.modules {
            expected.insert(module.symbols.path)
            if let debug = module.debug { expected.insert(debug.path) }
        }
        for entry in listed where !expected.contains(entry.path) {
            throw BundleValidationError(.unexpectedEntry, "entry not listed in the manifest", entry: entry.path)
        }
        for name in expected where byName[name] == nil {
            throw BundleValidationError(.missingEntry, "listed in the manifest but not in the zip", entry: name)
        }

        var modules: [ValidatedBundle.Module] = []
        for module in manifest.modules {
            let symbolsEntry = byName[module.symbols.path]!
            let symbolsPath = stagingDirectory + "/" + module.buildID + ".csym"
            try Self.check(reader.extract(symbolsEntry, to: symbolsPath), against: module.symbols)
            let statistics = try Self.checkTable(at: symbolsPath, module: module)
            var debugPath: String?
            if let debug = module.debug {
                let path = stagingDirectory + "/" + module.buildID + ".debug"
                try Self.check(reader.extract(byName[debug.path]!, to: path), against: debug)
                try Self.checkDebugFile(at: path, module: module)
                debugPath = path
            }
            modules.append(ValidatedBundle.Module(manifest: module, symbolsPath: symbolsPath, debugPath: debugPath,
                                                  statistics: statistics))
        }
        return ValidatedBundle(manifest: manifest, modules: modules)
    }

    /// Decodes and checks the manifest's schema and values.
    public static func decodeManifest(_ data: Data) throws(BundleValidationError) -> BundleManifest {
        let manifest: BundleManifest
        do {
            manifest = try JSONDecoder().decode(BundleManifest.self, from: data)
        } catch {
            throw BundleValidationError(.badManifest, "not a valid manifest: \(Self.describe(error))", entry: BundleManifest.entryName)
        }
        func fail(_ message: String) -> BundleValidationError {
            BundleValidationError(.badManifest, message, entry: BundleManifest.entryName)
        }
        guard manifest.format == BundleManifest.formatName else { throw fail("format is \"\(manifest.format)\", expected \"\(BundleManifest.formatName)\"") }
        guard manifest.formatVersion == BundleManifest.currentFormatVersion else {
            throw fail("format_version \(manifest.formatVersion) is not supported (expected \(BundleManifest.currentFormatVersion))")
        }
        guard BundleManifest.isIdentifier(manifest.appID) else { throw fail("app_id is empty or has characters outside [A-Za-z0-9._-]") }
        guard BundleManifest.isVersion(manifest.version) else { throw fail("version is empty, longer than 128 bytes or has characters outside [A-Za-z0-9._+-]") }
        guard BundleManifest.isPackage(manifest.package) else { throw fail("package is longer than 255 bytes or has a control character") }
        guard ["linux", "android"].contains(manifest.platform) else { throw fail("platform must be linux or android, not \"\(manifest.platform)\"") }
        guard !manifest.modules.isEmpty else { throw fail("no modules") }
        var ids = Set<String>()
        for module in manifest.modules {
            let id = module.buildID
            guard BundleManifest.isBuildID(id) else { throw fail("build_id \"\(id.prefix(140))\" is not lowercase hex") }
            guard ids.insert(id).inserted else { throw fail("build_id \(id) appears twice") }
            guard !module.name.isEmpty, module.name.utf8.count <= 255, !module.name.contains("/"),
                  !module.name.contains(where: { $0.isNewline }) else {
                throw fail("module \(id): name must be a file name of 1 to 255 bytes")
            }
            guard !module.arch.isEmpty, module.arch.utf8.count <= 32, BundleManifest.isIdentifier(module.arch) else {
                throw fail("module \(id): arch must be 1 to 32 characters of [A-Za-z0-9._-]")
            }
            guard module.symbols.path == BundleManifest.symbolsPath(buildID: id) else {
                throw fail("module \(id): symbols.path must be \(BundleManifest.symbolsPath(buildID: id))")
            }
            guard BundleManifest.isSHA256(module.symbols.sha256) else { throw fail("module \(id): symbols.sha256 is not 64 lowercase hex digits") }
            if let debug = module.debug {
                guard debug.path == BundleManifest.debugPath(buildID: id) else {
                    throw fail("module \(id): debug.path must be \(BundleManifest.debugPath(buildID: id))")
                }
                guard BundleManifest.isSHA256(debug.sha256) else { throw fail("module \(id): debug.sha256 is not 64 lowercase hex digits") }
            }
        }
        return manifest
    }

    private static func check(_ extracted: (size: UInt64, sha256: String), against file: BundleManifest.File) throws(BundleValidationError) {
        guard extracted.size == file.size else {
            throw BundleValidationError(.sizeMismatch, "is \(extracted.size) bytes, the manifest says \(file.size)", entry: file.path)
        }
        guard extracted.sha256 == file.sha256 else {
            throw BundleValidationError(.checksumMismatch, "SHA-256 is \(extracted.sha256), the manifest says \(file.sha256)", entry: file.path)
        }
    }

    /// Opens the table and reads every range's frames, so a corrupt record anywhere is found now
    /// rather than at symbolication time.
    private static func checkTable(at path: String, module: BundleManifest.Module) throws(BundleValidationError) -> SymbolTable.Statistics {
        let entry = module.symbols.path
        do {
            let table = try SymbolTable(file: MappedFile(path: path))
            let tableID = table.module.buildIDHex
            guard tableID == module.buildID else {
                throw BundleValidationError(.buildIDMismatch, "the table's build-id is \(tableID.isEmpty ? "empty" : tableID), its name and the manifest say \(module.buildID)", entry: entry)
            }
            try walk(table)
            return table.statistics
        } catch let error as BundleValidationError {
            throw error
        } catch let error as FormatError {
            var error = error
            error.path = nil
            throw BundleValidationError(.badTable, "not a valid .csym table: \(error)", entry: entry)
        } catch {
            throw BundleValidationError(.badTable, "not a valid .csym table: \(error)", entry: entry)
        }
    }

    /// Visits every range of `table` in address order and every frame of every range.
    static func walk(_ table: SymbolTable) throws(FormatError) {
        let rangeCount = table.statistics.ranges
        guard rangeCount > 0 else { return }
        guard try table.range(containing: .max) != nil else {
            throw FormatError(.invalidValue, "no range starts at or below the highest address")
        }
        // The first range start: the lowest address that lies in a range (64 probes at most).
        var low: UInt64 = 0
        var high: UInt64 = .max
        while low < high {
            let middle = low + (high - low) / 2
            if try table.range(containing: middle) != nil { high = middle } else { low = middle + 1 }
        }
        var address = low
        var visited = 0
        while true {
            guard let range = try table.range(containing: address) else {
                throw FormatError(.invalidValue, "address 0x\(String(address, radix: 16)) falls in no range")
            }
            visited += 1
            guard visited <= rangeCount else { throw FormatError(.invalidValue, "range starts are not sorted") }
            if range.hasFrames {
                try table.forEachFrame(at: range.start) { _ in }
            }
            guard let end = range.end else { return }
            guard end > address else { throw FormatError(.invalidValue, "range starts are not sorted") }
            address = end
        }
    }

    private static func checkDebugFile(at path: String, module: BundleManifest.Module) throws(BundleValidationError) {
        let entry = module.debug?.path
        let file: ELFFile
        do {
            file = try ELFFile(path: path)
        } catch {
            var error = error
            error.path = nil
            throw BundleValidationError(.badDebugFile, "not a valid ELF file: \(error)", entry: entry)
        }
        guard let id = file.buildIDHex else {
            throw BundleValidationError(.buildIDMismatch, "the ELF file has no build-id, the manifest says \(module.buildID)", entry: entry)
        }
        guard id == module.buildID else {
            throw BundleValidationError(.buildIDMismatch, "the ELF file's build-id is \(id), its name and the manifest say \(module.buildID)", entry: entry)
        }
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "missing field \(key.stringValue)"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "wrong type at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        case DecodingError.dataCorrupted(let context): context.debugDescription
        default: "\(error)"
        }
    }
}
