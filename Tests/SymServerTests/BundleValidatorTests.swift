import TestSupport
import Foundation
import SymBundle
import SymBytes
import SymTable
import Testing

/// `BundleValidator` on its own: a valid bundle passes with the table's real statistics; every
/// truncation, random buffer and byte mutation of it is refused with an error, never a trap.
@Suite("BundleValidator")
struct BundleValidatorTests {
    /// A valid two-module bundle (one with its debug file) in a fresh directory.
    static func validBundle() throws -> (directory: String, path: String, modules: [ModuleFiles]) {
        let directory = try Binary.temporaryDirectory()
        let c = try Bundles.dump(fixture: "gcc-c-O2-dwarf5", into: directory)
        var cpp = try Bundles.dump(fixture: "clang-cpp-O2-dwarf5", into: directory)
        cpp.debug = nil
        let path = directory + "/bundle.zip"
        try Bundles.bundle(to: path, appID: "demo", version: "1.0", modules: [c, cpp])
        return (directory, path, [c, cpp])
    }

    static func validate(_ path: String, in directory: String, limits: BundleLimits = BundleLimits()) throws(BundleValidationError) -> ValidatedBundle {
        let staging = directory + "/staging-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: staging) }
        return try BundleValidator(limits: limits).validate(zipAt: path, stagingDirectory: staging)
    }

    @Test("a valid bundle passes; its tables' statistics are those SymTable reads")
    func valid() throws {
        let (directory, path, modules) = try Self.validBundle()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bundle = try Self.validate(path, in: directory)
        #expect(bundle.manifest.appID == "demo")
        #expect(bundle.modules.map(\.manifest.buildID) == modules.map(\.buildID))
        for (validated, module) in zip(bundle.modules, modules) {
            let table = try SymbolTable(file: MappedFile(path: module.symbols))
            #expect(validated.statistics == table.statistics)
            #expect(validated.statistics.ranges > 0)
        }
        #expect(bundle.modules[0].debugPath != nil)
        #expect(bundle.modules[1].debugPath == nil)
    }

    @Test("limits: entry count, total size and ratio are enforced as configured")
    func limits() throws {
        let (directory, path, _) = try Self.validBundle()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(throws: BundleValidationError.self) { try Self.validate(path, in: directory, limits: BundleLimits(maxEntries: 2)) }
        do {
            _ = try Self.validate(path, in: directory, limits: BundleLimits(maxUncompressedBytes: 10_000))
            Issue.record("a bundle over the size limit passed")
        } catch {
            #expect(error.code == .tooLarge)
        }
        do {
            _ = try Self.validate(path, in: directory, limits: BundleLimits(maxCompressionRatio: 1, ratioFloorBytes: 0))
            Issue.record("a bundle over the ratio limit passed")
        } catch {
            #expect(error.code == .suspiciousRatio)
        }
    }

    @Test("a table whose header is sound but whose range records are garbage is refused (read fully, not just opened)")
    func corruptRecordsBehindAValidHeader() throws {
        let (directory, _, modules) = try Self.validBundle()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var module = modules[1]
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: module.symbols)))
        // Section directory at 88: (offset, size) pairs, UInt64 little-endian; section 2 holds the
        // range records (docs/csym-format.md). Every scope field then points past the scope records.
        func u64(_ offset: Int) -> Int { (0..<8).reduce(0) { $0 | Int(bytes[offset + $1]) << (8 * $1) } }
        let (offset, size) = (u64(88 + 16 * 2), u64(88 + 16 * 2 + 8))
        try #require(size > 0 && offset + size <= bytes.count)
        bytes.replaceSubrange(offset..<(offset + size), with: repeatElement(0xFF, count: size))
        _ = try SymbolTable(bytes: bytes)  // opening alone does not notice
        module.symbols = directory + "/garbage-records.csym"
        try Data(bytes).write(to: URL(fileURLWithPath: module.symbols))
        let path = directory + "/garbage.zip"
        try Bundles.bundle(to: path, appID: "demo", version: "1", modules: [module])
        do {
            _ = try Self.validate(path, in: directory)
            Issue.record("a table with garbage records passed")
        } catch {
            #expect(error.code == .badTable, "\(error)")
        }
    }

    @Test("identifier, version and build-id checks")
    func valueChecks() {
        #expect(BundleManifest.isBuildID("5c771a4c12922957af14eed671bebe0179a75f44"))
        for bad in ["", "a", "5C77", "5c7g", "5c7", String(repeating: "ab", count: 65), "../5c"] {
            #expect(!BundleManifest.isBuildID(bad), "\(bad)")
        }
        #expect(BundleManifest.isVersion("1.4.2+build.7-rc_1"))
        for bad in ["", ".1", "1/2", "1 2", "..", String(repeating: "1", count: 129), "1\n2", "1%2f"] {
            #expect(!BundleManifest.isVersion(bad), "\(bad)")
        }
        #expect(BundleManifest.isIdentifier("demo-app_1.x"))
        for bad in ["", ".hidden", "a/b", "a+b", "é", "a b"] {
            #expect(!BundleManifest.isIdentifier(bad), "\(bad)")
        }
    }

    @Test("entry names: only manifest.json, symbols/<id>.csym, debug/<id>.debug")
    func entryNames() throws {
        let (directory, _, modules) = try Self.validBundle()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let id = modules[0].buildID
        for name in ["../manifest.json", "/manifest.json", "symbols/\(id.uppercased()).csym", "symbols/../\(id).csym",
                     "symbols/\(id).csym/", "debug/\(id).csym", "symbols\\\(id).csym", "symbols/\(id)x.csym",
                     "symbols/.csym", "Manifest.json", "symbols/\(id).csym.exe", "symbols/abc.csym"] {
            let path = directory + "/names-\(UUID().uuidString).zip"
            try Bundles.zip(to: path, manifest: try Bundles.encode(Bundles.manifest(appID: "demo", version: "1", modules: [modules[0]])),
                            files: [(name, modules[0].symbols)])
            do {
                _ = try Self.validate(path, in: directory)
                Issue.record("\(name) passed")
            } catch {
                #expect([.badEntryName, .badEntryType, .unexpectedEntry].contains(error.code), "\(name): \(error)")
            }
        }
    }

    @Test("manifest values are checked", arguments: [
        ("format", #""format":"other""#), ("format_version", #""format_version":2"#), ("platform", #""platform":"windows""#),
        ("version", #""version":"../x""#), ("app_id", #""app_id":"a/b""#),
    ])
    func manifestValues(_ field: String, _ replacement: String) throws {
        let (directory, _, modules) = try Self.validBundle()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let manifest = try Bundles.manifest(appID: "demo", version: "1.0", modules: [modules[1]])
        var object = try JSONSerialization.jsonObject(with: Bundles.encode(manifest)) as! [String: Any]
        let patch = try JSONSerialization.jsonObject(with: Data("{\(replacement)}".utf8)) as! [String: Any]
        for (key, value) in patch { object[key] = value }
        let data = try JSONSerialization.data(withJSONObject: object)
        #expect(throws: BundleValidationError.self) { try BundleValidator.decodeManifest(data) }
        #expect(try BundleValidator.decodeManifest(Bundles.encode(manifest)) == manifest)
    }

    @Test("truncation at 600 points spread over the bundle and at each of its last 1024 bytes (the whole central directory): always an error")
    func truncation() throws {
        let (directory, path, _) = try Self.validBundle()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var cuts = Set((0..<600).map { $0 * bytes.count / 600 })
        cuts.formUnion(max(0, bytes.count - 1024)..<bytes.count)
        let cut = directory + "/cut.zip"
        for length in cuts.sorted() {
            try Data(bytes[..<length]).write(to: URL(fileURLWithPath: cut))
            #expect(throws: BundleValidationError.self, "cut at \(length)") { try Self.validate(cut, in: directory) }
        }
    }

    @Test("random bytes and seeded byte mutations never trap; a mutation that passes leaves the contents intact")
    func mutations() throws {
        let (directory, path, _) = try Self.validBundle()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let original = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var generator = SplitMix64(seed: 0xB0B5)
        let mutated = directory + "/mutated.zip"
        for round in 0..<300 {
            var bytes: [UInt8]
            if round < 50 {
                bytes = (0..<Int.random(in: 0..<4096, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                if round % 2 == 0, bytes.count >= 22 { bytes.replaceSubrange((bytes.count - 22)..<(bytes.count - 18), with: [0x50, 0x4b, 0x05, 0x06]) }
            } else {
                bytes = original
                for _ in 0..<Int.random(in: 1...8, using: &generator) {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                }
            }
            try Data(bytes).write(to: URL(fileURLWithPath: mutated))
            do {
                let bundle = try Self.validate(mutated, in: directory)
                // Only bytes the contents do not depend on (timestamps, attributes) may change.
                #expect(bundle.modules.count == 2, "round \(round)")
            } catch {
                #expect(!error.message.isEmpty, "round \(round)")
            }
        }
    }
}
