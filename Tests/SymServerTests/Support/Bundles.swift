import Crypto
import Foundation
import SymBundle
import SymBytes
import SymTable
import ZIPFoundation

/// The files of one module going into a test bundle.
struct ModuleFiles {
    var buildID: String
    var name: String
    var arch: String
    var hasDWARF: Bool
    var symbols: String
    var debug: String?
}

/// Builds bundles in tests: real tables from `crashsym dump` of the ELF fixtures, or synthetic
/// tables written with SymTable, zipped with ZIPFoundation; hostile variants by hand.
enum Bundles {
    /// `crashsym dump` of a fixture into `directory`, with the fixture itself as debug file.
    static func dump(fixture: String, into directory: String) throws -> ModuleFiles {
        let source = Binary.fixture(fixture)
        let result = try Binary.crashsym(["dump", source, "-o", directory, "--format", "json"])
        guard result.status == 0, let line = result.stdout.split(separator: "\n").first,
              let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let id = object["build_id"] as? String, let output = object["output"] as? String,
              let arch = object["arch"] as? String, let dwarf = object["dwarf"] as? Bool else {
            throw TestFailure("dump of \(fixture) failed: \(result.stderr)")
        }
        return ModuleFiles(buildID: id, name: (source as NSString).lastPathComponent, arch: arch, hasDWARF: dwarf,
                           symbols: output, debug: source)
    }

    /// A table written from a model of `symbolCount` functions, with a random build-id.
    static func synthetic<G: RandomNumberGenerator>(symbolCount: Int, into directory: String, using generator: inout G) throws -> ModuleFiles {
        let buildID = (0..<20).map { _ in UInt8.random(in: 0 ... 255, using: &generator) }
        var model = SymbolModel(module: ModuleIdentity(buildID: buildID, machine: 62, is64Bit: true, name: "libsynthetic.so"))
        for index in 0..<symbolCount {
            let name = model.appendString("synthetic_function_\(index)")
            model.symbols.append(SymbolEntry(name: name, address: 0x1000 + UInt64(index) * 32, size: 32))
        }
        let bytes = try SymbolTableWriter.write(model)
        let path = directory + "/" + hexString(buildID) + ".csym"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return ModuleFiles(buildID: hexString(buildID), name: "libsynthetic.so", arch: "x86_64", hasDWARF: false, symbols: path)
    }

    static func sha256(_ path: String) throws -> String {
        hexString(Array(SHA256.hash(data: try Data(contentsOf: URL(fileURLWithPath: path)))))
    }

    static func size(_ path: String) throws -> UInt64 {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.uint64Value ?? 0
    }

    /// The manifest describing `modules`.
    static func manifest(appID: String, version: String, modules: [ModuleFiles]) throws -> BundleManifest {
        BundleManifest(
            appID: appID, package: "com.example.test", version: version, platform: "linux", tool: "crashsym tests",
            created: "2026-11-22T15:04:05Z",
            modules: try modules.map { module in
                BundleManifest.Module(
                    buildID: module.buildID, name: module.name, arch: module.arch, hasDWARF: module.hasDWARF,
                    symbols: .init(path: BundleManifest.symbolsPath(buildID: module.buildID), size: try size(module.symbols),
                                   sha256: try sha256(module.symbols)),
                    debug: try module.debug.map {
                        .init(path: BundleManifest.debugPath(buildID: module.buildID), size: try size($0), sha256: try sha256($0))
                    })
            })
    }

    static func encode(_ manifest: BundleManifest) throws -> Data {
        try JSONEncoder().encode(manifest)
    }

    /// A zip at `path` with the manifest (if any) and `files` (entry name, source file).
    static func zip(to path: String, manifest: Data?, files: [(String, String)],
                    extra: (Archive) throws -> Void = { _ in }) throws {
        let archive = try Archive(url: URL(fileURLWithPath: path), accessMode: .create)
        if let manifest { try add(archive, BundleManifest.entryName, manifest) }
        for (name, source) in files {
            try add(archive, name, try Data(contentsOf: URL(fileURLWithPath: source)))
        }
        try extra(archive)
    }

    /// Adds a deflated entry with `data`.
    static func add(_ archive: Archive, _ name: String, _ data: Data, type: Entry.EntryType = .file) throws {
        try archive.addEntry(with: name, type: type, uncompressedSize: Int64(data.count), compressionMethod: type == .file ? .deflate : .none) { position, size in
            data.subdata(in: Int(position) ..< Int(position) + size)
        }
    }

    /// A complete, valid bundle of `modules` (debug files included when set).
    static func bundle(to path: String, appID: String, version: String, modules: [ModuleFiles]) throws {
        let manifest = try manifest(appID: appID, version: version, modules: modules)
        var files: [(String, String)] = []
        for module in modules {
            files.append((BundleManifest.symbolsPath(buildID: module.buildID), module.symbols))
            if let debug = module.debug { files.append((BundleManifest.debugPath(buildID: module.buildID), debug)) }
        }
        try zip(to: path, manifest: try encode(manifest), files: files)
    }

    /// Rewrites the declared uncompressed size of entry `name` (local header and central directory).
    static func patchDeclaredSize(of name: String, in path: String, to size: UInt32) throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let nameBytes = Array(name.utf8)
        func u32(_ offset: Int) -> UInt32 { UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24 }
        func put(_ offset: Int, _ value: UInt32) { for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * i)) } }
        var patched = 0
        var offset = 0
        while offset + 46 < bytes.count {
            let signature = u32(offset)
            if signature == 0x0403_4b50, Array(bytes[(offset + 30)..<min(bytes.count, offset + 30 + nameBytes.count)]) == nameBytes {
                put(offset + 22, size)
                patched += 1
            } else if signature == 0x0201_4b50, Array(bytes[(offset + 46)..<min(bytes.count, offset + 46 + nameBytes.count)]) == nameBytes {
                put(offset + 24, size)
                patched += 1
            }
            offset += 1
        }
        guard patched == 2 else { throw TestFailure("patched \(patched) headers of \(name), expected 2") }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// A zip of `count` empty stored entries named like tables, written by hand (ZIP64 end
    /// records), since adding 100,000 entries through ZIPFoundation rewrites the directory each time.
    static func manyEntries(count: Int, to path: String) throws {
        var out: [UInt8] = []
        var directory: [UInt8] = []
        func le<T: FixedWidthInteger>(_ value: T, _ buffer: inout [UInt8]) {
            withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) }
        }
        for index in 0..<count {
            let name = Array("symbols/\(String(format: "%040x", index)).csym".utf8)
            let offset = UInt32(out.count)
            le(UInt32(0x0403_4b50), &out); le(UInt16(20), &out); le(UInt16(0), &out); le(UInt16(0), &out)
            le(UInt32(0), &out); le(UInt32(0), &out); le(UInt32(0), &out); le(UInt32(0), &out)
            le(UInt16(name.count), &out); le(UInt16(0), &out); out += name
            le(UInt32(0x0201_4b50), &directory); le(UInt16(0x031E), &directory); le(UInt16(20), &directory)
            le(UInt16(0), &directory); le(UInt16(0), &directory); le(UInt32(0), &directory); le(UInt32(0), &directory)
            le(UInt32(0), &directory); le(UInt32(0), &directory); le(UInt16(name.count), &directory)
            le(UInt16(0), &directory); le(UInt16(0), &directory); le(UInt16(0), &directory); le(UInt16(0), &directory)
            le(UInt32(0o100644) << 16, &directory); le(offset, &directory); directory += name
        }
        let directoryOffset = UInt64(out.count)
        out += directory
        let zip64Offset = UInt64(out.count)
        le(UInt32(0x0606_4b50), &out); le(UInt64(44), &out); le(UInt16(45), &out); le(UInt16(45), &out)
        le(UInt32(0), &out); le(UInt32(0), &out); le(UInt64(count), &out); le(UInt64(count), &out)
        le(UInt64(directory.count), &out); le(directoryOffset, &out)
        le(UInt32(0x0706_4b50), &out); le(UInt32(0), &out); le(zip64Offset, &out); le(UInt32(1), &out)
        le(UInt32(0x0605_4b50), &out); le(UInt16(0), &out); le(UInt16(0), &out); le(UInt16(0xFFFF), &out)
        le(UInt16(0xFFFF), &out); le(UInt32(directory.count), &out); le(UInt32(0xFFFF_FFFF), &out); le(UInt16(0), &out)
        try Data(out).write(to: URL(fileURLWithPath: path))
    }
}
