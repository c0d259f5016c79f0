import TestSupport
import Foundation
import SymBundle
import Testing
import ZIPFoundation

/// Hostile bundles over HTTP: each gets 422 (or 413) with a reason, stores nothing and leaves no
/// scratch files; the server keeps serving.
@Suite("crashsym serve: hostile bundles")
struct HostileBundleTests {
    /// How to build one hostile bundle from a valid module.
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var expectedMessage: String
        var build: @Sendable (_ path: String, _ appID: String, _ module: ModuleFiles, _ other: ModuleFiles) throws -> Void
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "non-zip body", expectedMessage: "not a zip") { path, _, _, _ in
            try Data("this is not a zip archive at all".utf8).write(to: URL(fileURLWithPath: path))
        },
        Case(name: "zip bomb by ratio", expectedMessage: "compression ratio") { path, appID, module, _ in
            let manifest = try Bundles.manifest(appID: appID, version: "1", modules: [module])
            try Bundles.zip(to: path, manifest: try Bundles.encode(manifest), files: []) { archive in
                try Bundles.add(archive, BundleManifest.symbolsPath(buildID: module.buildID), Data(count: 64 << 20))
            }
        },
        Case(name: "zip bomb lying about its size", expectedMessage: "inflates past its declared size") { path, appID, module, _ in
            var manifest = try Bundles.manifest(appID: appID, version: "1", modules: [module])
            manifest.modules[0].symbols.size = 1000
            manifest.modules[0].debug = nil
            let entry = BundleManifest.symbolsPath(buildID: module.buildID)
            try Bundles.zip(to: path, manifest: try Bundles.encode(manifest), files: []) { archive in
                try Bundles.add(archive, entry, Data(count: 4 << 20))
            }
            try Bundles.patchDeclaredSize(of: entry, in: path, to: 1000)
        },
        Case(name: "../ entry name", expectedMessage: "unexpected entry name") { path, appID, module, _ in
            try Bundles.zip(to: path, manifest: try Bundles.encode(Bundles.manifest(appID: appID, version: "1", modules: [module])),
                            files: [("symbols/../../\(module.buildID).csym", module.symbols)])
        },
        Case(name: "absolute entry name", expectedMessage: "unexpected entry name") { path, appID, module, _ in
            try Bundles.zip(to: path, manifest: try Bundles.encode(Bundles.manifest(appID: appID, version: "1", modules: [module])),
                            files: [("/etc/\(module.buildID).csym", module.symbols)])
        },
        Case(name: "symlink entry", expectedMessage: "symbolic link") { path, appID, module, _ in
            try Bundles.zip(to: path, manifest: try Bundles.encode(Bundles.manifest(appID: appID, version: "1", modules: [module])),
                            files: []) { archive in
                try Bundles.add(archive, BundleManifest.symbolsPath(buildID: module.buildID), Data("/etc/passwd".utf8), type: .symlink)
            }
        },
        Case(name: "100,000 entries", expectedMessage: "more than") { path, _, _, _ in
            try Bundles.manyEntries(count: 100_000, to: path)
        },
        Case(name: "corrupt .csym", expectedMessage: "not a valid .csym table") { path, appID, module, _ in
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: module.symbols)))
            bytes.removeLast(bytes.count / 2)
            let corrupt = path + ".csym"
            try Data(bytes).write(to: URL(fileURLWithPath: corrupt))
            var module = module
            module.symbols = corrupt
            module.debug = nil
            try Bundles.bundle(to: path, appID: appID, version: "1", modules: [module])
        },
        Case(name: "table build-id differs from its name", expectedMessage: "build-id") { path, appID, module, other in
            var module = module
            module.symbols = other.symbols
            module.debug = nil
            try Bundles.bundle(to: path, appID: appID, version: "1", modules: [module])
        },
        Case(name: "debug file build-id differs", expectedMessage: "build-id") { path, appID, module, other in
            var module = module
            module.debug = other.debug
            try Bundles.bundle(to: path, appID: appID, version: "1", modules: [module])
        },
        Case(name: "sha256 differs from the manifest", expectedMessage: "SHA-256") { path, appID, module, _ in
            var manifest = try Bundles.manifest(appID: appID, version: "1", modules: [module])
            manifest.modules[0].symbols.sha256 = String(repeating: "0", count: 64)
            manifest.modules[0].debug = nil
            try Bundles.zip(to: path, manifest: try Bundles.encode(manifest),
                            files: [(BundleManifest.symbolsPath(buildID: module.buildID), module.symbols)])
        },
        Case(name: "no manifest", expectedMessage: "no manifest") { path, _, module, _ in
            try Bundles.zip(to: path, manifest: nil, files: [(BundleManifest.symbolsPath(buildID: module.buildID), module.symbols)])
        },
        Case(name: "manifest missing a field", expectedMessage: "missing field") { path, _, module, _ in
            try Bundles.zip(to: path, manifest: Data(#"{"format": "crashsym-bundle", "format_version": 1}"#.utf8),
                            files: [(BundleManifest.symbolsPath(buildID: module.buildID), module.symbols)])
        },
        Case(name: "entry not in the manifest", expectedMessage: "not listed in the manifest") { path, appID, module, other in
            var module = module
            module.debug = nil
            try Bundles.zip(to: path, manifest: try Bundles.encode(Bundles.manifest(appID: appID, version: "1", modules: [module])),
                            files: [(BundleManifest.symbolsPath(buildID: module.buildID), module.symbols),
                                    (BundleManifest.symbolsPath(buildID: other.buildID), other.symbols)])
        },
    ]

    @Test("refused with 422, nothing stored, nothing left behind", arguments: cases)
    func refused(_ hostile: Case) throws {
        let server = try TestServer()
        let module = try Bundles.dump(fixture: "gcc-c-O2-dwarf5", into: server.scratch)
        let other = try Bundles.dump(fixture: "clang-c-O2-dwarf5", into: server.scratch)
        let path = server.scratch + "/hostile.zip"
        try hostile.build(path, server.appID, module, other)
        let answer = try server.upload(path)
        #expect(answer.status == 422, "\(answer.text)")
        #expect(answer.errorCode == "invalid-bundle")
        let message = ((answer.json["error"] as? [String: Any])?["message"] as? String) ?? ""
        #expect(message.contains(hostile.expectedMessage), "\(message)")
        let versions = try server.request("GET", "/api/v1/apps/\(server.appID)/versions")
        #expect((versions.json["versions"] as? [Any])?.isEmpty == true)
        #expect(try server.leftovers().isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: server.dataDirectory + "/objects/sha256").isEmpty)
        #expect(try server.request("GET", "/healthz", key: .some(nil)).status == 200)
        // The same module uploaded properly afterwards is accepted.
        let good = server.scratch + "/good.zip"
        try Bundles.bundle(to: good, appID: server.appID, version: "1", modules: [module])
        #expect(try server.upload(good).status == 201)
    }
}

/// kill -9 in the middle of many concurrent uploads: every 2xx bundle is complete after a
/// restart, and every other one can simply be sent again.
@Suite("crashsym serve: crash safety")
struct CrashSafetyTests {
    @Test("kill -9 during 24 concurrent uploads, restart, check and retry")
    func killDuringUploads() throws {
        let server = try TestServer(arguments: ["--max-concurrent-uploads", "32"])
        var generator = SplitMix64(seed: 0x5EED_0004)
        var bundles: [(path: String, version: String, module: ModuleFiles)] = []
        for index in 0..<24 {
            let module = try Bundles.synthetic(symbolCount: 20_000, into: server.scratch, using: &generator)
            let path = server.scratch + "/bundle-\(index).zip"
            try Bundles.bundle(to: path, appID: server.appID, version: "v\(index)", modules: [module])
            bundles.append((path, "v\(index)", module))
        }
        // Start every upload, rate-limited so that the kill lands while many are in flight.
        let statusFiles = bundles.indices.map { server.scratch + "/status-\($0)" }
        var clients: [Process] = []
        for (index, bundle) in bundles.enumerated() {
            let curl = Process()
            curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            // Transfer times spread from 0.3 s to 3 s, so the kill at 1.2 s cuts about two thirds.
            let seconds = 0.3 + Double(index) * 2.7 / Double(bundles.count - 1)
            let rate = max(1, Int(Double(try Bundles.size(bundle.path)) / seconds / 1024))
            curl.arguments = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--limit-rate", "\(rate)k",
                              "-H", "Authorization: Bearer \(server.key)", "--data-binary", "@" + bundle.path,
                              server.base + "/api/v1/apps/\(server.appID)/symbols"]
            _ = FileManager.default.createFile(atPath: statusFiles[index], contents: nil)
            curl.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: statusFiles[index]))
            try curl.run()
            clients.append(curl)
        }
        Thread.sleep(forTimeInterval: 1.2)
        server.crash()
        for client in clients { client.waitUntilExit() }
        let statuses = statusFiles.map { Int((try? String(contentsOfFile: $0, encoding: .utf8)) ?? "") ?? 0 }
        let accepted = statuses.indices.filter { statuses[$0] == 201 }
        // The kill must have interrupted some uploads, or the test proves nothing.
        #expect(accepted.count < bundles.count, "\(statuses)")
        print("kill -9 test: \(accepted.count) of \(bundles.count) uploads answered 201 before the kill; statuses \(statuses)")

        try server.start()
        #expect(try server.leftovers().isEmpty)
        for index in accepted {
            let bundle = bundles[index]
            let modules = try server.request("GET", "/api/v1/apps/\(server.appID)/versions/\(bundle.version)/modules")
            #expect(modules.status == 200)
            #expect((modules.json["modules"] as? [[String: Any]])?.first?["build_id"] as? String == bundle.module.buildID)
            let sha = try Bundles.sha256(bundle.module.symbols)
            let object = server.dataDirectory + "/objects/sha256/" + sha.prefix(2) + "/" + sha.dropFirst(2)
            #expect(FileManager.default.contents(atPath: object) == FileManager.default.contents(atPath: bundle.module.symbols))
        }
        // Every upload that got no answer goes through on retry (stored, or already there if
        // the commit happened just before the kill).
        for index in bundles.indices where !accepted.contains(index) {
            let retry = try server.upload(bundles[index].path)
            #expect(retry.status == 201, "\(retry.text)")
            let modules = try server.request("GET", "/api/v1/apps/\(server.appID)/versions/\(bundles[index].version)/modules")
            #expect((modules.json["modules"] as? [Any])?.count == 1)
        }
        let versions = try server.request("GET", "/api/v1/apps/\(server.appID)/versions")
        #expect((versions.json["versions"] as? [Any])?.count == bundles.count)
    }
}
