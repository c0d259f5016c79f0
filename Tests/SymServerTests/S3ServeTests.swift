import Foundation
import SymS3
import Testing

/// `crashsym serve --object-store s3://…` against a real SeaweedFS: uploads land in the bucket,
/// symbolication reads tables from S3 through the node's table cache, a large upload streams in
/// constant memory, and a store that goes away answers 503 with Retry-After, then recovers.
@Suite(.serialized)
struct S3ServeTests {
    /// A server over a new bucket of `weed`, its table cache under its scratch directory.
    static func server(_ weed: SeaweedFS, _ client: S3Client) throws -> TestServer {
        try TestServer(arguments: ["--object-store", weed.url(bucket: client.location.bucket, prefix: client.location.prefix),
                                   "--table-cache-dir-mb", "64"],
                       environment: weed.environment)
    }

    static func files(under directory: String) -> [String] {
        (FileManager.default.enumerator(atPath: directory)?.allObjects as? [String] ?? []).filter {
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: directory + "/" + $0, isDirectory: &isDirectory) && !isDirectory.boolValue
        }
    }

    @Test("upload, symbolicate and crash ingestion go through the bucket; tables are mapped from the node's cache")
    func endToEnd() throws {
        let weed = try SeaweedFS.shared.get()
        let client = try weed.newPrefix()
        let server = try Self.server(weed, client)
        let tables = server.scratch + "/tables"
        try FileManager.default.createDirectory(atPath: tables, withIntermediateDirectories: true)
        let modules = try CrashFixtures.tables(into: tables, programs: ["libfault.so", "prog-asan", "libfault-asan.so"])
        try CrashFixtures.upload(modules, to: server, version: "1.0")
        // The tables are in the bucket, under the prefix, by SHA-256; none in the data directory.
        let stored = try client.list(prefix: "objects/sha256/").objects
        // Every folder holds a `.keep` (SeaweedFS deletes empty folders, racing with writes into them).
        #expect(Set(stored.map(\.key).filter { $0.hasSuffix("/.keep") }).count == 256)
        #expect(stored.contains { $0.key == "objects/sha256/.folders-kept" })
        for module in modules {
            let sha = try Bundles.sha256(module.symbols)
            #expect(stored.contains { $0.key == "objects/sha256/\(sha.prefix(2))/\(sha.dropFirst(2))" }, "\(module.name)")
        }
        #expect(Self.files(under: server.dataDirectory + "/objects").isEmpty)

        let answer = try server.post("symbolicate", file: CrashFixtures.reports + "/asan-use-after-free.txt", query: "version=1.0")
        #expect(answer.status == 200, "\(answer.text)")
        #expect(answer.text.contains(#""function":"fault_use_after_free""#))
        let cached = Self.files(under: server.dataDirectory + "/table-cache")
        #expect(!cached.isEmpty)
        // A table served to clients is the uploaded one.
        let module = try #require(modules.first { $0.name == "libfault.so" })
        let table = try server.get("symbols/\(module.buildID)")
        #expect(table.status == 200)
        #expect(table.body == (try Data(contentsOf: URL(fileURLWithPath: module.symbols))))

        // A crash: raw bytes to the bucket, processed in the background, read back raw.
        let report = CrashFixtures.reports + "/asan-use-after-free.txt"
        let submitted = try server.post("crashes", file: report, query: "version=1.0&wait=10")
        #expect(submitted.status == 201, "\(submitted.text)")
        let id = try #require(submitted.json["id"] as? String)
        #expect(CrashFixtures.eventually(within: 60) { (try? server.crash(id))?["state"] as? String == "done" })
        let raw = try server.get("crashes/\(id)/raw")
        #expect(raw.status == 200)
        #expect(raw.body == (try Data(contentsOf: URL(fileURLWithPath: report))))
        #expect(try server.leftovers().isEmpty)
    }

    @Test("a debug file larger than a part streams into the bucket in constant memory")
    func largeUploadInConstantMemory() throws {
        let weed = try SeaweedFS.shared.get()
        let client = try weed.newPrefix()
        let server = try Self.server(weed, client)
        let directory = server.scratch + "/big"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var module = try Bundles.dump(fixture: "gcc-c-O2-dwarf5", into: directory)
        // The fixture with 160 MiB of incompressible bytes after it: still the same ELF file.
        let debug = directory + "/prog.debug"
        try FileManager.default.copyItem(atPath: try #require(module.debug), toPath: debug)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: debug))
        try handle.seekToEnd()
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<160 {
            try handle.write(contentsOf: Data((0..<(1 << 17)).flatMap { _ in withUnsafeBytes(of: generator.next()) { Array($0) } }))
        }
        try handle.close()
        module.debug = debug
        let bundle = directory + "/bundle.zip"
        try Bundles.bundle(to: bundle, appID: server.appID, version: "2.0", modules: [module])
        let answer = try server.upload(bundle)
        #expect(answer.status == 201, "\(answer.text)")
        let sha = try Bundles.sha256(debug)
        #expect(try client.size(of: "objects/sha256/\(sha.prefix(2))/\(sha.dropFirst(2))") == (try Bundles.size(debug)))
        // 160 MiB went through; the server's peak resident set stays far below it.
        let peak = try server.peakResidentKiB()
        #expect(peak < 120 << 10, "peak resident \(peak) KiB")
    }

    @Test("SeaweedFS stopped: requests that need it answer 503 with Retry-After; it comes back: they work again")
    func storeDownAndBack() throws {
        let weed = try SeaweedFS()
        let client = try weed.newPrefix()
        let server = try Self.server(weed, client)
        let tables = server.scratch + "/tables"
        try FileManager.default.createDirectory(atPath: tables, withIntermediateDirectories: true)
        let modules = try CrashFixtures.tables(into: tables, programs: ["libfault.so", "prog-asan", "libfault-asan.so"])
        try CrashFixtures.upload(modules, to: server, version: "1.0")
        let report = CrashFixtures.reports + "/asan-use-after-free.txt"
        let before = try server.post("crashes", file: report, query: "version=1.0")
        #expect(before.status == 201)
        let id = try #require(before.json["id"] as? String)
        #expect(try server.post("symbolicate", file: report, query: "version=1.0").status == 200)

        weed.stop()
        let refused = try server.post("crashes", file: report, query: "version=1.0")
        #expect(refused.status == 503, "\(refused.text)")
        #expect(refused.headers["retry-after"] == "5")
        #expect(refused.errorCode == "unavailable")
        #expect(refused.text.contains("cannot be reached"))
        #expect(try server.get("crashes/\(id)/raw").status == 503)
        // Tables this node has cached still symbolicate.
        #expect(try server.post("symbolicate", file: report, query: "version=1.0").status == 200)
        #expect(try server.request("GET", "/healthz", key: .some(nil)).status == 200)

        try weed.start()
        let after = try server.post("crashes", file: report, query: "version=1.0")
        #expect(after.status == 201, "\(after.text)")
        let raw = try server.get("crashes/\(id)/raw")
        #expect(raw.status == 200)
        #expect(raw.body == (try Data(contentsOf: URL(fileURLWithPath: report))))
    }

    @Test("serve refuses to start with a wrong secret, saying the credentials are wrong")
    func wrongSecretAtStart() throws {
        let weed = try SeaweedFS.shared.get()
        let client = try weed.newPrefix()
        let directory = try Binary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try Binary.crashsym(["serve", "--data-dir", directory, "--port", "0",
                                          "--object-store", weed.url(bucket: client.location.bucket)],
                                         environment: ["AWS_ACCESS_KEY_ID": SeaweedFS.accessKey, "AWS_SECRET_ACCESS_KEY": "wrong"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("SignatureDoesNotMatch"), "\(result.stderr)")
        #expect(result.stderr.contains("AWS_SECRET_ACCESS_KEY is wrong"))
        let usage = try Binary.crashsym(["serve", "--data-dir", directory, "--object-store", "s3://x"])
        #expect(usage.status == 2)
        #expect(usage.stderr.contains("not a bucket name"))
    }
}
