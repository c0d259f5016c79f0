import TestSupport
import Foundation
import SymBundle
import Synchronization
import Testing

/// The HTTP API of docs/http-api.md against a real `crashsym serve` process, with curl.
@Suite("crashsym serve: API")
struct ServerAPITests {
    @Test("an unknown app, a wrong key and a missing key get the same 401")
    func authentication() throws {
        let server = try TestServer()
        let wrongKey = try server.request("GET", "/api/v1/apps/\(server.appID)/versions", key: "csk_" + String(repeating: "0", count: 64))
        let unknownApp = try server.request("GET", "/api/v1/apps/no-such-app/versions")
        let noKey = try server.request("GET", "/api/v1/apps/\(server.appID)/versions", key: .some(nil))
        let malformedApp = try server.request("GET", "/api/v1/apps/..%2f..%2fetc/versions")
        for answer in [wrongKey, unknownApp, noKey] {
            #expect(answer.status == 401)
            #expect(answer.errorCode == "unauthorized")
            #expect(answer.text == wrongKey.text)
            #expect(answer.headers["x-request-id"]?.isEmpty == false)
        }
        #expect([401, 404].contains(malformedApp.status))
        let good = try server.request("GET", "/api/v1/apps/\(server.appID)/versions")
        #expect(good.status == 200)
        #expect(good.json["versions"] as? [Any] != nil)
        // Request ids differ per request.
        #expect(wrongKey.headers["x-request-id"] != unknownApp.headers["x-request-id"])
    }

    @Test("symbols/missing: malformed and incomplete queries get 400")
    func missingQueryValidation() throws {
        let server = try TestServer()
        let path = "/api/v1/apps/\(server.appID)/symbols/missing"
        for body in ["{", "[]", #"{"modules": []}"#, #"{"version": "1.0", "modules": [{"name": "x"}]}"#,
                     #"{"version": "1.0", "modules": [{"build_id": "xyz"}]}"#,
                     #"{"version": "../1.0", "modules": []}"#] {
            let answer = try server.request("POST", path, json: body)
            #expect(answer.status == 400, "\(body)")
            #expect(answer.errorCode == "bad-request", "\(body)")
        }
        let unknown = try server.request("GET", "/api/v1/nothing-here")
        #expect(unknown.status == 404)
        #expect(unknown.errorCode == "not-found")
    }

    @Test("upload of real tables and a debug file: stored, listed, idempotent, and missing says present")
    func uploadListAndIdempotence() throws {
        let server = try TestServer()
        let work = server.scratch
        let c = try Bundles.dump(fixture: "gcc-c-O2-dwarf5", into: work)
        var cpp = try Bundles.dump(fixture: "clang-cpp-O2-dwarf5", into: work)
        cpp.debug = nil
        let missingBody = #"{"version": "1.4.2", "package": "com.example.test", "platform": "linux", "modules": [{"build_id": "\#(c.buildID)", "name": "a", "arch": "x86_64"}, {"build_id": "\#(cpp.buildID)"}]}"#
        let before = try server.request("POST", "/api/v1/apps/\(server.appID)/symbols/missing", json: missingBody)
        #expect(before.status == 200)
        #expect(Set(before.json["missing"] as? [String] ?? []) == [c.buildID, cpp.buildID])
        #expect((before.json["present"] as? [String]) == [])

        let bundle = work + "/bundle.zip"
        try Bundles.bundle(to: bundle, appID: server.appID, version: "1.4.2", modules: [c, cpp])
        let first = try server.upload(bundle)
        #expect(first.status == 201, "\(first.text)")
        #expect(first.json["version"] as? String == "1.4.2")
        #expect(Set(first.json["stored"] as? [String] ?? []) == [c.buildID, cpp.buildID])
        #expect((first.json["already_present"] as? [String]) == [])

        let second = try server.upload(bundle)
        #expect(second.status == 201)
        #expect((second.json["stored"] as? [String]) == [])
        #expect(Set(second.json["already_present"] as? [String] ?? []) == [c.buildID, cpp.buildID])

        // The stored objects are byte for byte what was uploaded.
        for path in [c.symbols, cpp.symbols, c.debug!] {
            let sha = try Bundles.sha256(path)
            let object = server.dataDirectory + "/objects/sha256/" + sha.prefix(2) + "/" + sha.dropFirst(2)
            #expect(FileManager.default.contents(atPath: object) == FileManager.default.contents(atPath: path))
        }

        let versions = try server.request("GET", "/api/v1/apps/\(server.appID)/versions")
        let list = versions.json["versions"] as? [[String: Any]] ?? []
        #expect(list.count == 1)
        #expect(list.first?["version"] as? String == "1.4.2")
        #expect(list.first?["modules"] as? Int == 2)

        let modules = try server.request("GET", "/api/v1/apps/\(server.appID)/versions/1.4.2/modules")
        let rows = modules.json["modules"] as? [[String: Any]] ?? []
        #expect(rows.count == 2)
        let byID = Dictionary(uniqueKeysWithValues: rows.map { ($0["build_id"] as? String ?? "", $0) })
        #expect(byID[c.buildID]?["has_debug_file"] as? Bool == true)
        #expect(byID[cpp.buildID]?["has_debug_file"] as? Bool == false)
        #expect(byID[c.buildID]?["name"] as? String == "gcc-c-O2-dwarf5")
        #expect(byID[c.buildID]?["symbols_size"] as? Int == Int(try Bundles.size(c.symbols)))
        #expect(byID[c.buildID]?["has_dwarf"] as? Bool == true)

        // A new version with the same modules: missing says present, and links them to it.
        let after = try server.request("POST", "/api/v1/apps/\(server.appID)/symbols/missing",
                                       json: missingBody.replacingOccurrences(of: "1.4.2", with: "1.4.3"))
        #expect((after.json["missing"] as? [String]) == [])
        #expect(Set(after.json["present"] as? [String] ?? []) == [c.buildID, cpp.buildID])
        let linked = try server.request("GET", "/api/v1/apps/\(server.appID)/versions/1.4.3/modules")
        #expect((linked.json["modules"] as? [Any])?.count == 2)
        #expect(try server.request("GET", "/api/v1/apps/\(server.appID)/versions/9.9/modules").status == 404)

        // Another app does not see this app's modules.
        let other = try Binary.crashsym(["apps", "create", "other", "--id", "other-app", "--data-dir", server.dataDirectory, "--format", "json"])
        let otherKey = (try JSONSerialization.jsonObject(with: Data(other.stdout.utf8)) as? [String: Any])?["key"] as? String
        let otherMissing = try server.request("POST", "/api/v1/apps/other-app/symbols/missing", key: otherKey, json: missingBody)
        #expect(Set(otherMissing.json["missing"] as? [String] ?? []) == [c.buildID, cpp.buildID])
        #expect(try server.leftovers().isEmpty)
    }

    @Test("a bundle for another app id than the URL's is refused")
    func appIDMismatch() throws {
        let server = try TestServer()
        let module = try Bundles.dump(fixture: "gcc-c-O2-dwarf5", into: server.scratch)
        let bundle = server.scratch + "/bundle.zip"
        try Bundles.bundle(to: bundle, appID: "someone-else", version: "1.0", modules: [module])
        let answer = try server.upload(bundle)
        #expect(answer.status == 422)
        #expect(answer.errorCode == "invalid-bundle")
    }

    @Test("concurrent uploads of the same build-id: every one 201, stored exactly once")
    func concurrentSameBuildID() throws {
        let server = try TestServer(arguments: ["--max-concurrent-uploads", "16"])
        let module = try Bundles.dump(fixture: "gcc-c-O2-dwarf5", into: server.scratch)
        let bundle = server.scratch + "/bundle.zip"
        try Bundles.bundle(to: bundle, appID: server.appID, version: "2.0", modules: [module])
        let answers = Mutex<[HTTPAnswer]>([])
        let client = server.client
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            if let answer = try? client.upload(bundle) { answers.withLock { $0.append(answer) } }
        }
        let all = answers.withLock { $0 }
        #expect(all.count == 8)
        #expect(all.allSatisfy { $0.status == 201 })
        let stored = all.flatMap { $0.json["stored"] as? [String] ?? [] }
        let present = all.flatMap { $0.json["already_present"] as? [String] ?? [] }
        #expect(stored == [module.buildID])
        #expect(present.count == 7)
        let modules = try server.request("GET", "/api/v1/apps/\(server.appID)/versions/2.0/modules")
        #expect((modules.json["modules"] as? [Any])?.count == 1)
    }

    @Test("body over --max-body-bytes gets 413, with or without Content-Length")
    func bodyLimit() throws {
        let server = try TestServer(arguments: ["--max-body-bytes", "4096"])
        let big = server.scratch + "/big.bin"
        try Data(repeating: 7, count: 100_000).write(to: URL(fileURLWithPath: big))
        let declared = try server.upload(big)
        #expect(declared.status == 413)
        #expect(declared.errorCode == "too-large")
        let chunked = try server.request("POST", "/api/v1/apps/\(server.appID)/symbols", file: big,
                                         extra: ["-H", "Transfer-Encoding: chunked"])
        #expect(chunked.status == 413)
        #expect(try server.leftovers().isEmpty)
    }

    @Test("Expect: 100-continue gets 100 Continue at once; a declared body over the limit gets 413 and is never sent")
    func expectContinue() throws {
        let server = try TestServer(arguments: ["--max-body-bytes", "200000"])
        let work = server.scratch
        let module = try Bundles.dump(fixture: "gcc-c-O2-dwarf5", into: work)
        let bundle = work + "/bundle.zip"
        try Bundles.bundle(to: bundle, appID: server.appID, version: "3.0", modules: [module])
        /// curl asking for `100 Continue` and waiting up to 60 s for it (its default is 1 s, after
        /// which it sends the body anyway): the status, the bytes it sent, and every header block.
        func upload(_ file: String) throws -> (status: String, sent: Int, headers: String) {
            let headers = work + "/headers-\(UUID().uuidString)"
            let result = try Binary.run("/usr/bin/curl", [
                "-sS", "-o", "/dev/null", "-D", headers, "-w", "%{http_code} %{size_upload}", "--max-time", "120",
                "--expect100-timeout", "60", "-H", "Expect: 100-continue", "-H", "Authorization: Bearer \(server.key)",
                "-H", "Content-Type: application/zip", "--data-binary", "@" + file,
                server.base + "/api/v1/apps/\(server.appID)/symbols",
            ])
            let fields = result.stdout.split(separator: " ")
            return (String(fields.first ?? ""), Int(fields.last ?? "") ?? -1,
                    (try? String(contentsOfFile: headers, encoding: .utf8)) ?? "")
        }
        let accepted = try upload(bundle)
        #expect(accepted.status == "201", "\(accepted.headers)")
        #expect(accepted.headers.hasPrefix("HTTP/1.1 100 Continue\r\n"), "\(accepted.headers)")
        #expect(accepted.sent == Int(try Bundles.size(bundle)))

        let big = work + "/big.bin"
        try Data(repeating: 7, count: 300_000).write(to: URL(fileURLWithPath: big))
        let refused = try upload(big)
        #expect(refused.status == "413", "\(refused.headers)")
        #expect(!refused.headers.contains("100 Continue"), "\(refused.headers)")
        #expect(refused.sent == 0)
        #expect(try server.leftovers().isEmpty)
    }

    @Test("uploads over --max-concurrent-uploads get 429 with Retry-After")
    func concurrencyLimit() throws {
        let server = try TestServer(arguments: ["--max-concurrent-uploads", "1"])
        let slowBody = server.scratch + "/slow.bin"
        // Long enough (~50 s at 8 KB/s) to outlast the polling below on a loaded machine; killed in defer.
        try Data(repeating: 1, count: 400_000).write(to: URL(fileURLWithPath: slowBody))
        let slow = Process()
        slow.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        slow.arguments = ["-sS", "-o", "/dev/null", "--limit-rate", "8k", "-H", "Authorization: Bearer \(server.key)",
                          "--data-binary", "@" + slowBody, server.base + "/api/v1/apps/\(server.appID)/symbols"]
        try slow.run()
        // SIGKILL: children of the test runner inherit a blocked SIGTERM.
        defer { kill(slow.processIdentifier, SIGKILL); slow.waitUntilExit() }
        let small = server.scratch + "/small.bin"
        try Data("not a zip".utf8).write(to: URL(fileURLWithPath: small))
        // The slow upload must take the only slot first: a small upload sent at the same moment
        // would hold it and get the slow one refused. So give it a head start with nothing else
        // running, then poll sparingly; until it holds the slot, a small one gets through (422).
        Thread.sleep(forTimeInterval: 3)
        var answer = try server.upload(small)
        for _ in 0..<20 where answer.status == 422 && slow.isRunning {
            Thread.sleep(forTimeInterval: 1)
            answer = try server.upload(small)
        }
        #expect(answer.status == 429)
        #expect(answer.errorCode == "too-many-requests")
        #expect(Int(answer.headers["retry-after"] ?? "") != nil)
    }

    @Test("/healthz, /metrics count requests and rejections, SIGTERM exits cleanly")
    func healthMetricsAndShutdown() throws {
        let server = try TestServer()
        let health = try server.request("GET", "/healthz", key: .some(nil))
        #expect(health.status == 200)
        #expect(health.json["status"] as? String == "ok")
        _ = try server.request("GET", "/api/v1/apps/\(server.appID)/versions", key: "csk_wrong")
        let metrics = try server.request("GET", "/metrics", key: .some(nil))
        #expect(metrics.status == 200)
        #expect(metrics.text.contains(#"crashsym_rejections_total{reason="unauthorized"} 1"#))
        #expect(metrics.text.contains(#"crashsym_http_requests_total{method="GET",status="200"} 1"#))
        #expect(metrics.text.contains("# TYPE crashsym_http_requests_total counter"))
        // Bound to loopback only: the listening socket's local address in /proc/net/tcp.
        let portSuffix = String(format: ":%04X", server.port)
        // Read to its end (`procNetTCP`: a full run has dozens of listeners before this one), a
        // few times, as a read while sockets come and go can miss a line.
        var listening = Set<String>()
        for _ in 0..<20 where listening.isEmpty {
            for line in try TestServer.procNetTCP().split(separator: "\n") {
                let fields = line.split(separator: " ").map(String.init)
                // Field 1 is the local address, field 3 the state (0A: LISTEN).
                if fields.count > 3, fields[3] == "0A", fields[1].hasSuffix(portSuffix) { listening.insert(fields[1]) }
            }
        }
        #expect(listening == ["0100007F" + portSuffix])
        #expect(server.terminate() == 0)
    }

    @Test("SIGTERM lets an upload in flight finish with 201, then the server exits 0")
    func gracefulShutdown() throws {
        let server = try TestServer()
        var generator = SplitMix64(seed: 42)
        let module = try Bundles.synthetic(symbolCount: 20_000, into: server.scratch, using: &generator)
        let bundle = server.scratch + "/bundle.zip"
        try Bundles.bundle(to: bundle, appID: server.appID, version: "drain", modules: [module])
        let size = try Bundles.size(bundle)
        let status = server.scratch + "/status"
        _ = FileManager.default.createFile(atPath: status, contents: nil)
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        // About three seconds on the wire.
        curl.arguments = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--limit-rate", "\(max(1, size / 3 / 1024))k",
                          "-H", "Authorization: Bearer \(server.key)", "--data-binary", "@" + bundle,
                          server.base + "/api/v1/apps/\(server.appID)/symbols"]
        curl.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: status))
        try curl.run()
        // SIGTERM only once the server has accepted the upload's connection.
        for _ in 0..<50 where try server.establishedConnections() == 0 {
            Thread.sleep(forTimeInterval: 0.05)
        }
        Thread.sleep(forTimeInterval: 0.3)
        let exitStatus = server.terminate()
        curl.waitUntilExit()
        #expect(exitStatus == 0)
        #expect((try? String(contentsOfFile: status, encoding: .utf8)) == "201")
    }

    @Test("an upload slower than --request-timeout gets 408; a silent one is disconnected")
    func requestTimeout() throws {
        let server = try TestServer(arguments: ["--request-timeout", "2"])
        let body = server.scratch + "/slow.bin"
        try Data(repeating: 1, count: 24_000).write(to: URL(fileURLWithPath: body))
        let answer = try server.request("POST", "/api/v1/apps/\(server.appID)/symbols", file: body, extra: ["--limit-rate", "4k"])
        #expect(answer.status == 408, "\(answer.text)")
        #expect(answer.errorCode == "timeout")
        // A client that stops sending altogether is disconnected after the same time (no chunk
        // arrives to be answered 408): curl streams stdin, which never gets data.
        let stalled = Process()
        stalled.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        stalled.arguments = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-T", "-", "--max-time", "6",
                             "-H", "Authorization: Bearer \(server.key)", server.base + "/api/v1/apps/\(server.appID)/symbols"]
        let input = Pipe(), output = Pipe()
        stalled.standardInput = input
        stalled.standardOutput = output
        try stalled.run()
        input.fileHandleForWriting.write(Data("PK".utf8))
        let status = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        stalled.waitUntilExit()
        try input.fileHandleForWriting.close()
        // No final answer: the last status curl saw is the `100 Continue` its `Expect:` (sent with a
        // body of unknown length) got at once.
        #expect(status == "100")
        let metrics = try server.request("GET", "/metrics", key: .some(nil))
        #expect(metrics.text.contains(#"crashsym_rejections_total{reason="incomplete-body"} 1"#), "\(metrics.text)")
        #expect(metrics.text.contains(#"crashsym_rejections_total{reason="timeout"} 1"#))
        #expect(try server.leftovers().isEmpty)
    }

    @Test("debuginfod-find fetches an uploaded debug file by build-id")
    func debuginfod() throws {
        let server = try TestServer()
        let module = try Bundles.dump(fixture: "gcc-c-O2-dwarf5", into: server.scratch)
        let bundle = server.scratch + "/bundle.zip"
        try Bundles.bundle(to: bundle, appID: server.appID, version: "3.0", modules: [module])
        #expect(try server.upload(bundle).status == 201)
        let cache = server.scratch + "/debuginfod-cache"
        let environment = ["DEBUGINFOD_URLS": server.base, "DEBUGINFOD_CACHE_PATH": cache]
        let found = try Binary.run("/usr/bin/debuginfod-find", ["debuginfo", module.buildID], environment: environment)
        #expect(found.status == 0, "\(found.stderr)")
        let path = found.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(FileManager.default.contents(atPath: path) == FileManager.default.contents(atPath: module.debug!))
        let executable = try Binary.run("/usr/bin/debuginfod-find", ["executable", module.buildID], environment: environment)
        #expect(executable.status == 0)
        let absent = try Binary.run("/usr/bin/debuginfod-find", ["debuginfo", String(repeating: "ab", count: 20)], environment: environment)
        #expect(absent.status != 0)
    }

    @Test("apps: list never shows keys; rotate-key retires the old key")
    func appsCommands() throws {
        let server = try TestServer()
        let list = try Binary.crashsym(["apps", "list", "--data-dir", server.dataDirectory])
        #expect(list.status == 0)
        #expect(list.stdout.contains(server.appID))
        #expect(list.stdout.contains("test app"))
        #expect(!list.stdout.contains(server.key))
        let hashes = try Data(contentsOf: URL(fileURLWithPath: server.dataDirectory + "/metadata.sqlite"))
        #expect(hashes.range(of: Data(server.key.utf8)) == nil)
        let rotated = try Binary.crashsym(["apps", "rotate-key", server.appID, "--data-dir", server.dataDirectory, "--format", "json"])
        #expect(rotated.status == 0)
        let newKey = (try JSONSerialization.jsonObject(with: Data(rotated.stdout.utf8)) as? [String: Any])?["key"] as? String
        #expect(newKey?.hasPrefix("csk_") == true && newKey != server.key)
        #expect(try server.request("GET", "/api/v1/apps/\(server.appID)/versions").status == 401)
        #expect(try server.request("GET", "/api/v1/apps/\(server.appID)/versions", key: newKey).status == 200)
        let unknown = try Binary.crashsym(["apps", "rotate-key", "nope", "--data-dir", server.dataDirectory])
        #expect(unknown.status == 1)
        let duplicate = try Binary.crashsym(["apps", "create", "again", "--id", server.appID, "--data-dir", server.dataDirectory])
        #expect(duplicate.status == 1)
    }
}

