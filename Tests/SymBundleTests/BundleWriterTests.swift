import Foundation
import SymBytes
import Testing
import ZIPFoundation
@testable import SymBundle
import TestSupport

/// Bundles written by `BundleWriter`, read back with ZIPFoundation and checked with `unzip` and
/// `sha256sum`.
@Suite struct BundleWriterTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let table = root.appendingPathComponent("Fixtures/csym/v1-sample.csym").path
    static let elf = root.appendingPathComponent("Fixtures/elf/gcc-c-O2-dwarf5").path
    static let otherELF = root.appendingPathComponent("Fixtures/elf/clang-cpp-O2-dwarf5").path
    static let metadata = BundleMetadata(appID: "demo", package: "com.example.app", version: "1.4.2", platform: "linux",
                                         tool: "crashsym 0.1.0", created: Date(timeIntervalSince1970: 1_795_359_845))

    static func inputs() -> [BundleInput] {
        [BundleInput(buildID: "4f40a8bf034bac0538f8831e41d644d2c9d6f517", name: "gcc-c-O2-dwarf5", arch: "x86_64",
                     hasDWARF: true, symbolsPath: table, debugPath: elf),
         BundleInput(buildID: "1a8c87ae4d15e7fd1215f973012e5c3d47470c79", name: "clang-cpp-O2-dwarf5", arch: "x86_64",
                     hasDWARF: false, symbolsPath: otherELF)]
    }

    @Test func roundTrip() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let written = try BundleWriter().write(Self.inputs(), metadata: Self.metadata, to: directory + "/bundle.zip")
        try #require(written.count == 1)
        let bundle = written[0]
        #expect(bundle.path == directory + "/bundle.zip")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["bundle.zip"])  // no temporary left
        #expect(bundle.byteCount == (try FileManager.default.attributesOfItem(atPath: bundle.path)[.size] as? UInt64))
        #expect(try run("/usr/bin/unzip", ["-tq", bundle.path]).contains("No errors detected"))

        let archive = try Archive(url: URL(fileURLWithPath: bundle.path), accessMode: .read)
        let entries = Array(archive)
        #expect(entries.map(\.path) == [
            "manifest.json",
            "symbols/4f40a8bf034bac0538f8831e41d644d2c9d6f517.csym",
            "debug/4f40a8bf034bac0538f8831e41d644d2c9d6f517.debug",
            "symbols/1a8c87ae4d15e7fd1215f973012e5c3d47470c79.csym",
        ])
        // Every file is deflated (method 8) and reads back byte for byte.
        for entry in entries {
            #expect(entry.isCompressed, "\(entry.path)")
        }
        let sources = [entries[1].path: Self.table, entries[2].path: Self.elf, entries[3].path: Self.otherELF]
        for (path, source) in sources {
            #expect(try contents(of: path, in: archive) == (try Data(contentsOf: URL(fileURLWithPath: source))), "\(path)")
        }
        let manifest = try JSONDecoder().decode(BundleManifest.self, from: contents(of: "manifest.json", in: archive))
        #expect(manifest == bundle.manifest)
        #expect(manifest.created == "2026-11-22T15:04:05Z")
        #expect(manifest.modules.map(\.buildID) == Self.inputs().map(\.buildID))
        #expect(manifest.modules[1].debug == nil)
        // Sizes and hashes agree with the file system and with sha256sum.
        for (module, input) in zip(manifest.modules, Self.inputs()) {
            #expect(module.symbols.sha256 == (try sha256sum(input.symbolsPath)))
            #expect(module.symbols.size == (try FileManager.default.attributesOfItem(atPath: input.symbolsPath)[.size] as? UInt64))
            if let debugPath = input.debugPath {
                let debug = try #require(module.debug)
                #expect(debug.sha256 == (try sha256sum(debugPath)))
                #expect(debug.size == (try FileManager.default.attributesOfItem(atPath: debugPath)[.size] as? UInt64))
            }
        }
        #expect(bundle.uncompressedModuleBytes == manifest.modules.reduce(0) { $0 + $1.symbols.size + ($1.debug?.size ?? 0) })
    }

    @Test func manifestJSONHasTheDocumentedKeys() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bundle = try BundleWriter().write(Self.inputs(), metadata: Self.metadata, to: directory + "/b.zip")[0]
        let archive = try Archive(url: URL(fileURLWithPath: bundle.path), accessMode: .read)
        let object = try #require(try JSONSerialization.jsonObject(with: contents(of: "manifest.json", in: archive)) as? [String: Any])
        #expect(Set(object.keys) == ["format", "format_version", "app_id", "package", "version", "platform", "tool", "created", "modules"])
        #expect(object["format"] as? String == "crashsym-bundle")
        #expect(object["format_version"] as? Int == 1)
        #expect(object["app_id"] as? String == "demo")
        #expect(object["package"] as? String == "com.example.app")
        #expect(object["version"] as? String == "1.4.2")
        #expect(object["platform"] as? String == "linux")
        #expect(object["tool"] as? String == "crashsym 0.1.0")
        let modules = try #require(object["modules"] as? [[String: Any]])
        #expect(Set(modules[0].keys) == ["build_id", "name", "arch", "has_dwarf", "symbols", "debug"])
        #expect(Set(modules[1].keys).isSubset(of: ["build_id", "name", "arch", "has_dwarf", "symbols", "debug"]))
        #expect(modules[0]["has_dwarf"] as? Bool == true)
        let symbols = try #require(modules[0]["symbols"] as? [String: Any])
        #expect(Set(symbols.keys) == ["path", "size", "sha256"])
        #expect(symbols["path"] as? String == "symbols/4f40a8bf034bac0538f8831e41d644d2c9d6f517.csym")
        #expect(symbols["size"] as? Int == 423)
    }

    struct SplitCase: Sendable, CustomTestStringConvertible {
        var bound: UInt64
        var sizes: [UInt64]
        var groups: [Range<Int>]
        var testDescription: String { "bound \(bound), sizes \(sizes)" }
    }

    static let splitCases: [SplitCase] = [
        SplitCase(bound: 100, sizes: [10, 20, 30], groups: [0..<3]),
        SplitCase(bound: 50, sizes: [10, 20, 30], groups: [0..<2, 2..<3]),
        SplitCase(bound: 30, sizes: [10, 20, 30], groups: [0..<2, 2..<3]),
        SplitCase(bound: 25, sizes: [40, 10, 10, 10, 60], groups: [0..<1, 1..<3, 3..<4, 4..<5]),
        SplitCase(bound: 1, sizes: [], groups: []),
        SplitCase(bound: 10, sizes: [UInt64.max, 1, UInt64.max], groups: [0..<1, 1..<2, 2..<3]),
    ]

    @Test("split keeps order and the bound; a module over the bound stands alone", arguments: splitCases)
    func split(_ example: SplitCase) {
        #expect(BundleWriter(maximumUncompressedSize: example.bound).split(sizes: example.sizes) == example.groups)
    }

    @Test func partNames() {
        #expect(BundleWriter.partPaths(for: "out/b.zip", count: 1) == ["out/b.zip"])
        #expect(BundleWriter.partPaths(for: "out/b.zip", count: 3) == ["out/b-1.zip", "out/b-2.zip", "out/b-3.zip"])
        #expect(BundleWriter.partPaths(for: "a.d/bundle", count: 2) == ["a.d/bundle-1", "a.d/bundle-2"])
    }

    @Test func largeSetsAreSplitIntoSeveralBundles() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The first module (table + debug file) alone exceeds 10 KB; the second gets a bundle of its own.
        let written = try BundleWriter(maximumUncompressedSize: 10_000)
            .write(Self.inputs(), metadata: Self.metadata, to: directory + "/symbols.zip")
        #expect(written.map(\.path) == [directory + "/symbols-1.zip", directory + "/symbols-2.zip"])
        #expect(written.map { $0.manifest.modules.map(\.buildID) } == Self.inputs().map { [$0.buildID] })
        for bundle in written {
            let archive = try Archive(url: URL(fileURLWithPath: bundle.path), accessMode: .read)
            let manifest = try JSONDecoder().decode(BundleManifest.self, from: contents(of: "manifest.json", in: archive))
            #expect(manifest == bundle.manifest)
            let expected = ["manifest.json"] + manifest.modules.flatMap { [$0.symbols.path] + ($0.debug.map { [$0.path] } ?? []) }
            #expect(archive.map(\.path) == expected)
            #expect(manifest.appID == "demo" && manifest.version == "1.4.2")
        }
    }

    @Test func aMissingInputLeavesNothingBehind() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var inputs = Self.inputs()
        inputs[1].symbolsPath = directory + "/does-not-exist.csym"
        let error = try #require(throws: FormatError.self) {
            try BundleWriter(maximumUncompressedSize: 1).write(inputs, metadata: Self.metadata, to: directory + "/b.zip")
        }
        #expect(error.code == .io)
        #expect(error.path == directory + "/does-not-exist.csym")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    @Test func duplicateBuildIDsAreRefused() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let input = Self.inputs()[0]
        #expect(throws: FormatError.self) {
            try BundleWriter().write([input, input], metadata: Self.metadata, to: directory + "/b.zip")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }

    @Test func anExistingBundleIsReplacedWhole() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data(repeating: 0x41, count: 10_000).write(to: URL(fileURLWithPath: directory + "/b.zip"))
        let bundle = try BundleWriter().write(Array(Self.inputs().prefix(1)), metadata: Self.metadata, to: directory + "/b.zip")[0]
        let archive = try Archive(url: URL(fileURLWithPath: bundle.path), accessMode: .read)
        #expect(archive.map(\.path).count == 3)
    }
}

/// A 192 MiB debug file goes into a bundle whole (size, SHA-256, zip integrity). Its peak memory is
/// measured in a process of its own by UploadCommandTests.aLargeDebugFileIsStreamedIntoTheBundle:
/// this test runner's RSS moves with every suite running beside this one.
@Suite(.serialized) struct BundleWriterMemoryTests {
    @Test func entriesAreStreamedFromDisk() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let big = directory + "/big.debug"
        let size: UInt64 = 192 << 20
        #expect(FileManager.default.createFile(atPath: big, contents: Data("ELF".utf8)))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: big))
        try handle.truncate(atOffset: size)
        try handle.close()
        var input = BundleWriterTests.inputs()[0]
        input.debugPath = big
        let bundle = try BundleWriter().write([input], metadata: BundleWriterTests.metadata, to: directory + "/b.zip")[0]
        #expect(bundle.manifest.modules[0].debug?.size == size)
        #expect(bundle.manifest.modules[0].debug?.sha256 == (try sha256sum(big)))
        #expect(try run("/usr/bin/unzip", ["-tq", bundle.path]).contains("No errors detected"))
    }
}

func contents(of path: String, in archive: Archive) throws -> Data {
    let entry = try #require(archive[path])
    var data = Data()
    _ = try archive.extract(entry) { data.append($0) }
    return data
}

func temporaryDirectory() throws -> String {
    let path = NSTemporaryDirectory() + "crashsym-bundle-test-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Runs a tool and returns its standard output.
func run(_ tool: String, _ arguments: [String]) throws -> String {
    let data = try Tool.data(tool, arguments)
    return String(decoding: data, as: UTF8.self)
}

/// `sha256sum` of a file: the oracle for the manifest's hashes.
func sha256sum(_ path: String) throws -> String {
    String(try run("/usr/bin/sha256sum", [path]).prefix(64))
}

