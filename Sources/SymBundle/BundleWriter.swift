import Foundation
import SymBytes
import ZIPFoundation

/// A converted module to put into a bundle: its `.csym` table (and optionally its debug file) on disk.
public struct BundleInput: Sendable, Equatable {
    /// Lowercase hex GNU build-id.
    public var buildID: String
    /// File name of the module (`libfoo.so`).
    public var name: String
    /// Architecture name (`x86_64`, `aarch64`, ...).
    public var arch: String
    /// Whether the table has DWARF.
    public var hasDWARF: Bool
    /// Path of the `.csym` table on disk.
    public var symbolsPath: String
    /// Path of the original debug file on disk, to be included as `debug/<build-id>.debug`.
    public var debugPath: String?

    /// Creates an input.
    public init(buildID: String, name: String, arch: String, hasDWARF: Bool, symbolsPath: String, debugPath: String? = nil) {
        self.buildID = buildID
        self.name = name
        self.arch = arch
        self.hasDWARF = hasDWARF
        self.symbolsPath = symbolsPath
        self.debugPath = debugPath
    }
}

/// Who the symbols of a bundle belong to: everything in the manifest except the modules.
public struct BundleMetadata: Sendable, Equatable {
    /// Application id.
    public var appID: String
    /// Package / bundle identifier, may be empty.
    public var package: String
    /// Application version.
    public var version: String
    /// `linux` or `android`.
    public var platform: String
    /// The writing tool (`crashsym 0.1.0`).
    public var tool: String
    /// Creation time; also the modification time of every entry.
    public var created: Date

    /// Creates metadata; `created` defaults to now.
    public init(appID: String, package: String, version: String, platform: String, tool: String, created: Date = Date()) {
        self.appID = appID
        self.package = package
        self.version = version
        self.platform = platform
        self.tool = tool
        self.created = created
    }

    /// `created` in RFC 3339 UTC with whole seconds (`2026-11-22T15:04:05Z`).
    public var createdText: String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: created)
    }
}

/// A bundle file written by `BundleWriter`.
public struct WrittenBundle: Sendable, Equatable {
    /// Where it is.
    public var path: String
    /// Its manifest (the modules it holds).
    public var manifest: BundleManifest
    /// Size of the zip file.
    public var byteCount: UInt64
    /// Sum of the uncompressed sizes of its module files (the quantity the split bound limits).
    public var uncompressedModuleBytes: UInt64
}

/// Writes symbol bundles: zip files (deflate) with `manifest.json` first, then
/// `symbols/<build-id>.csym` and `debug/<build-id>.debug` per module (layout: `docs/http-api.md`).
///
/// Entries are streamed from disk in fixed-size chunks, so memory does not grow with the files.
/// Each bundle is written to a temporary file next to its destination, flushed to disk and renamed,
/// so a reader never sees half a bundle. A set of modules whose files exceed
/// `maximumUncompressedSize` in total is split into several bundles (`name-1.zip`, `name-2.zip`, …);
/// a single module larger than the bound gets a bundle of its own.
public struct BundleWriter: Sendable {
    /// Default bound on the uncompressed module bytes per bundle: 256 MiB.
    public static let defaultMaximumUncompressedSize: UInt64 = 256 << 20
    /// Read and compression chunk size.
    static let chunkSize = 1 << 20

    /// Bound on the uncompressed module bytes per bundle.
    public var maximumUncompressedSize: UInt64

    /// Creates a writer.
    public init(maximumUncompressedSize: UInt64 = Self.defaultMaximumUncompressedSize) {
        self.maximumUncompressedSize = max(1, maximumUncompressedSize)
    }

    /// Splits modules of the given sizes, in order, into consecutive groups whose total stays within
    /// the bound (a module over the bound alone forms a group). Returns index ranges.
    public func split(sizes: [UInt64]) -> [Range<Int>] {
        var groups: [Range<Int>] = []
        var start = 0
        var total: UInt64 = 0
        for (index, size) in sizes.enumerated() {
            let (sum, overflow) = total.addingReportingOverflow(size)
            if index > start && (overflow || sum > maximumUncompressedSize) {
                groups.append(start..<index)
                start = index
                total = size
            } else {
                total = overflow ? .max : sum
            }
        }
        if start < sizes.count { groups.append(start..<sizes.count) }
        return groups
    }

    /// The file names used for `count` bundles written to `path`: `path` itself for one, else
    /// `stem-1.ext` … `stem-N.ext`.
    public static func partPaths(for path: String, count: Int) -> [String] {
        guard count > 1 else { return [path] }
        let slash = path.lastIndex(of: "/")
        let nameStart = slash.map { path.index(after: $0) } ?? path.startIndex
        let dot = path[nameStart...].lastIndex(of: ".")
        let stem = dot.map { String(path[..<$0]) } ?? path
        let suffix = dot.map { String(path[$0...]) } ?? ""
        return (1...count).map { "\(stem)-\($0)\(suffix)" }
    }

    /// Writes `modules` into one or more bundles at `path` (see `partPaths`). Files are hashed, then
    /// streamed into the zip. On failure nothing of this call is left behind.
    public func write(_ modules: [BundleInput], metadata: BundleMetadata, to path: String) throws(FormatError) -> [WrittenBundle] {
        var seen = Set<String>()
        for module in modules where !seen.insert(module.buildID).inserted {
            throw FormatError(.invalidValue, "build-id \(module.buildID) given twice", path: module.symbolsPath)
        }
        var entries: [BundleManifest.Module] = []
        var sizes: [UInt64] = []
        for module in modules {
            let symbols = try FileDigest(path: module.symbolsPath)
            let debug = try module.debugPath.map { (path) throws(FormatError) in try FileDigest(path: path) }
            entries.append(BundleManifest.Module(
                buildID: module.buildID, name: module.name, arch: module.arch, hasDWARF: module.hasDWARF,
                symbols: BundleManifest.File(path: BundleManifest.symbolsPath(buildID: module.buildID),
                                             size: symbols.size, sha256: symbols.sha256),
                debug: debug.map { BundleManifest.File(path: BundleManifest.debugPath(buildID: module.buildID),
                                                       size: $0.size, sha256: $0.sha256) }))
            sizes.append(symbols.size &+ (debug?.size ?? 0))
        }
        let groups = split(sizes: sizes)
        let paths = Self.partPaths(for: path, count: max(1, groups.count))
        var written: [WrittenBundle] = []
        do throws(FormatError) {
            for (part, group) in (groups.isEmpty ? [0..<0] : groups).enumerated() {
                let manifest = BundleManifest(
                    appID: metadata.appID, package: metadata.package, version: metadata.version,
                    platform: metadata.platform, tool: metadata.tool, created: metadata.createdText,
                    modules: Array(entries[group]))
                let byteCount = try writeOne(manifest: manifest, inputs: Array(modules[group]),
                                             created: metadata.created, to: paths[part])
                written.append(WrittenBundle(path: paths[part], manifest: manifest, byteCount: byteCount,
                                             uncompressedModuleBytes: sizes[group].reduce(0, &+)))
            }
        } catch {
            for bundle in written { unlink(bundle.path) }
            throw error
        }
        return written
    }

    /// The manifest as it is stored: sorted keys, so equal manifests are equal bytes.
    public static func encode(_ manifest: BundleManifest) throws(FormatError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return try encoder.encode(manifest)
        } catch {
            throw FormatError(.invalidValue, "cannot encode the manifest: \(error)")
        }
    }

    /// Writes one zip atomically and returns its size.
    func writeOne(manifest: BundleManifest, inputs: [BundleInput], created: Date, to path: String) throws(FormatError) -> UInt64 {
        let manifestData = try Self.encode(manifest)
        let temporary = Self.temporaryPath(for: path)
        do {
            try fillArchive(at: temporary, manifest: manifestData, modules: manifest.modules, inputs: inputs, created: created)
            try Self.syncAndRename(temporary, to: path)
        } catch {
            unlink(temporary)
            throw error
        }
        var status = stat()
        guard stat(path, &status) == 0 else { throw FormatError(.io, "cannot stat the written bundle", path: path) }
        return UInt64(status.st_size)
    }

    /// Creates the zip; the archive is closed when this returns.
    private func fillArchive(at path: String, manifest: Data, modules: [BundleManifest.Module],
                             inputs: [BundleInput], created: Date) throws(FormatError) {
        let archive: Archive
        do {
            archive = try Archive(url: URL(fileURLWithPath: path), accessMode: .create)
        } catch {
            throw FormatError(.io, "cannot create the bundle: \(error)", path: path)
        }
        do {
            try archive.addEntry(with: BundleManifest.entryName, type: .file, uncompressedSize: Int64(manifest.count),
                                 modificationDate: created, permissions: 0o644, compressionMethod: .deflate,
                                 bufferSize: Self.chunkSize) { position, size in
                manifest.subdata(in: Int(position)..<min(manifest.count, Int(position) + size))
            }
        } catch {
            throw FormatError(.io, "cannot write \(BundleManifest.entryName): \(error)", path: path)
        }
        for (module, input) in zip(modules, inputs) {
            try addFile(input.symbolsPath, as: module.symbols, to: archive, created: created, bundlePath: path)
            if let debug = module.debug, let debugPath = input.debugPath {
                try addFile(debugPath, as: debug, to: archive, created: created, bundlePath: path)
            }
        }
    }

    /// Streams one file into the archive, checking that it still has the size that was hashed.
    private func addFile(_ source: String, as entry: BundleManifest.File, to archive: Archive, created: Date,
                         bundlePath: String) throws(FormatError) {
        guard let file = fopen(source, "rb") else {
            throw FormatError(.io, "cannot open: \(String(cString: strerror(errno)))", path: source)
        }
        defer { fclose(file) }
        guard entry.size <= UInt64(Int64.max) else { throw FormatError(.limitExceeded, "file too large", path: source) }
        do {
            try archive.addEntry(with: entry.path, type: .file, uncompressedSize: Int64(entry.size),
                                 modificationDate: created, permissions: 0o644, compressionMethod: .deflate,
                                 bufferSize: Self.chunkSize) { _, size in
                var chunk = Data(count: size)
                let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, size, file) }
                if count < size && ferror(file) != 0 {
                    throw FormatError(.io, "cannot read: \(String(cString: strerror(errno)))", path: source)
                }
                if count < size { chunk.count = count }
                return chunk
            }
        } catch let error as FormatError {
            throw error
        } catch {
            throw FormatError(.io, "cannot write \(entry.path): \(error)", path: bundlePath)
        }
        // The provider is asked for exactly `size` bytes in total: a file that shrank or grew since it
        // was hashed would make the manifest lie.
        if fgetc(file) != EOF || UInt64(ftello(file)) != entry.size {
            throw FormatError(.io, "changed while the bundle was written", path: source)
        }
    }

    static func temporaryPath(for path: String) -> String {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        return "\(directory).\(name).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }

    /// Flushes the file to disk, renames it over `path` and flushes the directory entry (`FileIO`'s
    /// durable rename; a directory that cannot be flushed leaves the bundle in place, not an error).
    static func syncAndRename(_ temporary: String, to path: String) throws(FormatError) {
        guard let failure = FileIO.moveDurably(temporary, to: path) else { return }
        let reason = String(cString: strerror(failure.code))
        switch failure.step {
        case .syncDirectory: return
        case .rename: throw FormatError(.io, "cannot rename the bundle into place: \(reason)", path: path)
        default: throw FormatError(.io, "cannot flush the bundle: \(reason)", path: path)
        }
    }
}
