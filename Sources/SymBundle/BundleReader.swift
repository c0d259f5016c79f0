import Crypto
import Foundation
import SymBytes
import ZIPFoundation

/// Reads the entries of an uploaded bundle zip within fixed limits, never trusting its sizes.
///
/// The declared sizes of each entry are checked before anything is inflated (count, total, ratio),
/// and the bytes actually produced are counted while inflating: an entry that inflates past its
/// declared size or past the total budget stops there, whatever its headers say.
struct BundleReader {
    /// An entry as listed in the central directory.
    struct ListedEntry {
        var entry: Entry
        var path: String
        var declaredSize: UInt64
    }

    let archive: Archive
    let limits: BundleLimits
    /// Bytes produced by inflation so far, across all entries.
    private(set) var inflatedBytes: UInt64 = 0

    /// Opens the zip at `path`; a file that is not a zip is a `notZip` error.
    init(path: String, limits: BundleLimits) throws(BundleValidationError) {
        do {
            archive = try Archive(url: URL(fileURLWithPath: path), accessMode: .read)
        } catch {
            throw BundleValidationError(.notZip, "the body is not a zip archive (\(error))")
        }
        self.limits = limits
    }

    /// Lists the entries, checking count, names, types, declared sizes and ratios; stops reading
    /// the central directory as soon as the entry limit is passed.
    func list() throws(BundleValidationError) -> [ListedEntry] {
        var entries: [ListedEntry] = []
        var seen = Set<String>()
        var declaredTotal: UInt64 = 0
        for entry in archive {
            guard entries.count < limits.maxEntries else {
                throw BundleValidationError(.tooManyEntries, "more than \(limits.maxEntries) entries")
            }
            let path = entry.path
            guard BundleEntryName(path) != nil else {
                throw BundleValidationError(.badEntryName,
                    "unexpected entry name (allowed: manifest.json, symbols/<build-id>.csym, debug/<build-id>.debug)",
                    entry: path)
            }
            guard entry.type == .file else {
                throw BundleValidationError(.badEntryType, "entry is a \(entry.type == .symlink ? "symbolic link" : "directory"), not a file", entry: path)
            }
            guard seen.insert(path).inserted else {
                throw BundleValidationError(.duplicateEntry, "entry appears twice", entry: path)
            }
            let size = entry.uncompressedSize
            let compressed = entry.compressedSize
            guard size <= limits.maxUncompressedBytes else {
                throw BundleValidationError(.tooLarge, "declares \(size) bytes, over the limit of \(limits.maxUncompressedBytes)", entry: path)
            }
            let (total, overflow) = declaredTotal.addingReportingOverflow(size)
            guard !overflow, total <= limits.maxUncompressedBytes else {
                throw BundleValidationError(.tooLarge, "entries declare more than \(limits.maxUncompressedBytes) bytes in total", entry: path)
            }
            declaredTotal = total
            // A ratio check only means something past a small floor: tiny entries compress oddly.
            if size > limits.ratioFloorBytes {
                guard compressed > 0, size / compressed <= limits.maxCompressionRatio else {
                    throw BundleValidationError(.suspiciousRatio,
                        "compression ratio \(compressed == 0 ? "infinite" : String(size / compressed)):1 over the limit of \(limits.maxCompressionRatio):1",
                        entry: path)
                }
            }
            entries.append(ListedEntry(entry: entry, path: path, declaredSize: size))
        }
        return entries
    }

    /// Inflates `listed` into memory (for the manifest), at most `cap` bytes.
    mutating func readSmall(_ listed: ListedEntry, cap: Int) throws(BundleValidationError) -> Data {
        guard listed.declaredSize <= UInt64(cap) else {
            throw BundleValidationError(.tooLarge, "declares \(listed.declaredSize) bytes, over the limit of \(cap)", entry: listed.path)
        }
        var data = Data()
        try stream(listed) { chunk in data.append(chunk) }
        return data
    }

    /// Inflates `listed` into a new file at `destination`, returning its size and SHA-256 (hex).
    mutating func extract(_ listed: ListedEntry, to destination: String) throws(BundleValidationError) -> (size: UInt64, sha256: String) {
        guard FileManager.default.createFile(atPath: destination, contents: nil),
              let handle = FileHandle(forWritingAtPath: destination) else {
            throw BundleValidationError(.io, "cannot create the staging file \(destination)", entry: listed.path)
        }
        defer { try? handle.close() }
        var hasher = SHA256()
        var size: UInt64 = 0
        try stream(listed) { chunk in
            hasher.update(data: chunk)
            size += UInt64(chunk.count)
            try handle.write(contentsOf: chunk)
        }
        return (size, hexString(Array(hasher.finalize())))
    }

    /// Feeds the inflated bytes of `listed` to `body`, stopping at its declared size, at the total
    /// budget, and on a CRC mismatch.
    private mutating func stream(_ listed: ListedEntry, _ body: (Data) throws -> Void) throws(BundleValidationError) {
        var produced: UInt64 = 0
        let declared = listed.declaredSize
        let budget = limits.maxUncompressedBytes &- min(inflatedBytes, limits.maxUncompressedBytes)
        var limitError: BundleValidationError?
        let checksum: CRC32
        do {
            checksum = try archive.extract(listed.entry, bufferSize: 64 * 1024, skipCRC32: false) { chunk in
                produced += UInt64(chunk.count)
                if produced > declared {
                    limitError = BundleValidationError(.sizeMismatch, "inflates past its declared size of \(declared) bytes", entry: listed.path)
                    throw CancellationError()
                }
                if produced > budget {
                    limitError = BundleValidationError(.tooLarge, "entries inflate past the limit of \(limits.maxUncompressedBytes) bytes in total", entry: listed.path)
                    throw CancellationError()
                }
                try body(chunk)
            }
        } catch {
            if let limitError { throw limitError }
            if let error = error as? BundleValidationError { throw error }
            throw BundleValidationError(.corruptZip, "cannot inflate: \(error)", entry: listed.path)
        }
        inflatedBytes += produced
        guard produced == declared else {
            throw BundleValidationError(.sizeMismatch, "inflates to \(produced) bytes, declares \(declared)", entry: listed.path)
        }
        guard checksum == listed.entry.checksum else {
            throw BundleValidationError(.corruptZip, "CRC-32 mismatch", entry: listed.path)
        }
    }
}

/// A bundle entry name: exactly `manifest.json`, `symbols/<build-id>.csym` or `debug/<build-id>.debug`.
///
/// Anything else (absolute paths, `..`, backslashes, other directories, upper-case hex) is refused,
/// so no name can ever address a file outside the staging directory.
enum BundleEntryName: Equatable {
    case manifest
    case symbols(buildID: String)
    case debug(buildID: String)

    init?(_ path: String) {
        if path == BundleManifest.entryName {
            self = .manifest
            return
        }
        for (prefix, suffix, isSymbols) in [("symbols/", ".csym", true), ("debug/", ".debug", false)]
        where path.hasPrefix(prefix) && path.hasSuffix(suffix) && path.utf8.count > prefix.utf8.count + suffix.utf8.count {
            let id = String(path.dropFirst(prefix.count).dropLast(suffix.count))
            guard BundleManifest.isBuildID(id) else { return nil }
            self = isSymbols ? .symbols(buildID: id) : .debug(buildID: id)
            return
        }
        return nil
    }
}
