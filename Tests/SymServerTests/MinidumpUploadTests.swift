import Foundation
import Testing

/// `POST …/minidump` over real HTTP, with requests built as Crashpad's `crashpad_handler` and
/// Breakpad's `HTTPUpload` build them, the reference minidump of `../shared/reference/minidump-linux/`
/// and its binary's symbols uploaded with `crashsym upload`.
@Suite("Minidump uploads")
struct MinidumpUploadTests {
    static let minidump = (try? Data(contentsOf: URL(fileURLWithPath: MinidumpClients.minidump))) ?? Data()

    static func isCrashID(_ text: String) -> Bool {
        text.utf8.count == 32 && text.allSatisfy { $0.isHexDigit && !$0.isUppercase }
    }

    /// The crash once processed (done or failed).
    static func processed(_ server: TestServer, _ id: String, within seconds: Double = 60) throws -> [String: Any] {
        var crash: [String: Any] = [:]
        let finished = try CrashFixtures.eventually(within: seconds) {
            crash = try server.crash(id)
            return crash["state"] as? String != "pending"
        }
        guard finished else { throw TestFailure("crash \(id) still pending") }
        return crash
    }

    @Test("Crashpad's request (gzip'd multipart, chunked, ?key=) after the binary's symbols: Breakpad's CFI frames (frame 1 at 0x402079, found by CFI; its scanned fifth frame refused), annotations kept; the retry answers the same id")
    func crashpadAfterSymbols() throws {
        let server = try TestServer()
        try MinidumpClients.uploadBinary(to: server, version: "1.0")
        let log = Data("log line 1\nlog line 2\n".utf8)
        let annotations = ["prod": "crash_linux", "ver": "1.0", "guid": "4e7b6f0a-0000-4000-8000-000000000001", "plat": "Linux",
                           "ptype": "crashpad-handler", "channel": "<b>beta</b> & \"more\""]
        let request = try MinidumpClients.crashpadBody(minidump: Self.minidump, annotations: annotations,
                                                       files: ["log": ("app.log", log)], gzip: true)
        // The URL as crashpad_handler makes it: the configured one, then product, version and guid.
        let answer = try MinidumpClients.crashpadPost(server, body: request.body, contentType: request.contentType, gzip: true,
                                                      query: "key=\(server.key)", identifying: annotations)
        #expect(answer.status == 200, "\(answer.text)")
        #expect(answer.headers["content-type"]?.hasPrefix("text/plain") == true)
        let id = answer.text
        #expect(Self.isCrashID(id), "the body is the crash id alone: \(id)")

        let crash = try Self.processed(server, id)
        #expect(crash["state"] as? String == "done", "\(crash["failure"] ?? "")")
        #expect(crash["version"] as? String == "1.0")
        #expect(crash["format"] as? String == "minidump")
        #expect(crash["group_id"] is String)
        let frames = MinidumpClients.crashedFrames(crash)
        // Breakpad's processor with the CFI: frame 1's instruction 0x402079 is the return address
        // 0x40207a looked up one byte back, found by CFI. Breakpad's fifth frame, a scanned
        // 0x40207c, follows no call instruction and is refused (docs/minidump.md); past the CFI
        // frames the scan goes on, and from the table alone it gives what the ELF file gives.
        #expect(frames.count >= 4, "\(frames.map { $0["address"] ?? "" })")
        if frames.count >= 4 {
            #expect(frames[0]["address"] as? String == "0x40206d")
            #expect(frames[0]["address_kind"] as? String == "exact")
            #expect(frames[1]["address"] as? String == "0x40207a")
            #expect(frames[1]["address_kind"] as? String == "return-address")
            #expect(frames[1]["found_by"] as? String == "cfi")
            #expect(frames[2]["found_by"] as? String == "cfi" && frames[3]["found_by"] as? String == "cfi")
            #expect(MinidumpClients.function(frames[0]) == "(anonymous namespace)::crash()")
            #expect(MinidumpClients.function(frames[1]) == "(anonymous namespace)::start()")
            #expect(MinidumpClients.function(frames[2]) == "main")
        }
        let cli = try MinidumpClients.cliFrames()
        #expect(frames.map { $0["address"] as? String } == cli.map { $0["address"] as? String })
        #expect(frames.map { $0["found_by"] as? String } == cli.map { $0["found_by"] as? String })
        let details = crash["minidump"] as? [String: Any]
        #expect(details?["product"] as? String == "crash_linux")
        #expect((details?["annotations"] as? [String: String]) == annotations)
        let attachments = details?["attachments"] as? [[String: Any]]
        #expect(attachments?.count == 1)
        #expect(attachments?.first?["filename"] as? String == "app.log")
        #expect(attachments?.first?["size"] as? Int == log.count)

        let raw = try server.get("crashes/\(id)/raw")
        #expect(raw.status == 200)
        #expect(raw.body == Self.minidump)
        let attachmentObject = (attachments?.first?["sha256"] as? String).map {
            server.dataDirectory + "/objects/sha256/" + $0.prefix(2) + "/" + $0.dropFirst(2)
        } ?? ""
        #expect(FileManager.default.contents(atPath: attachmentObject) == log, "the attachment is kept in the object store")
        // And served back, as a download whatever type the client gave it.
        let attached = try server.get("crashes/\(id)/attachments/0")
        #expect(attached.status == 200, "\(attached.text)")
        #expect(attached.body == log)
        #expect(attached.headers["content-type"] == "application/octet-stream")
        #expect(attached.headers["content-disposition"] == "attachment; filename=\"app.log\"")
        #expect(attached.headers["x-content-type-options"] == "nosniff")
        #expect(try server.get("crashes/\(id)/attachments/1").status == 404)
        #expect(try server.get("crashes/\(id)/attachments/-1").status == 400)
        #expect(try server.get("crashes/\(id)/attachments/x").status == 400)
        #expect(try server.request("GET", "/api/v1/apps/\(server.appID)/crashes/\(id)/attachments/0", key: .some("wrong")).status == 401)

        // A client retrying sends the same minidump with a new boundary: the first id, no second crash.
        let again = try MinidumpClients.crashpadBody(minidump: Self.minidump, annotations: annotations, gzip: true)
        let retried = try MinidumpClients.crashpadPost(server, body: again.body, contentType: again.contentType, gzip: true,
                                                       query: "key=\(server.key)", identifying: annotations)
        #expect(retried.status == 200)
        #expect(retried.text == id)
        #expect((try server.get("crashes").json["crashes"] as? [Any])?.count == 1)

        // Deleting the crash removes its minidump and its attachment.
        #expect(try server.request("DELETE", "/api/v1/apps/\(server.appID)/crashes/\(id)").status == 204)
        #expect(!FileManager.default.fileExists(atPath: attachmentObject))
        #expect(try server.get("crashes/\(id)/attachments/0").status == 404)
    }

    @Test("Breakpad's HTTPUpload (curl form, no gzip) before the binary's symbols: resolved and re-walked with CFI after the upload")
    func breakpadLateSymbols() throws {
        let server = try TestServer()
        let log = server.scratch + "/session.txt"
        try Data("a log line\n".utf8).write(to: URL(fileURLWithPath: log))
        let answer = try MinidumpClients.breakpadPost(server, minidump: MinidumpClients.minidump,
                                                      parameters: [("prod", "crash_linux"), ("ver", "2.0"), ("email", "a@b.c")],
                                                      query: "version=9.9", files: [("log", log)])
        #expect(answer.status == 200, "\(answer.text)")
        let id = answer.text
        #expect(Self.isCrashID(id))
        let before = try Self.processed(server, id)
        // curl's form: text parts are annotations, the second file part an attachment.
        let details = before["minidump"] as? [String: Any]
        #expect(details?["product"] as? String == "crash_linux")
        #expect((details?["annotations"] as? [String: String]) == ["prod": "crash_linux", "ver": "2.0", "email": "a@b.c"])
        let attachments = details?["attachments"] as? [[String: Any]]
        #expect(attachments?.map { $0["filename"] as? String } == ["session.txt"])
        #expect(attachments?.first?["name"] as? String == "log")
        #expect(attachments?.first?["size"] as? Int == 11)
        #expect(before["state"] as? String == "done")
        #expect((before["missing_build_ids"] as? [String])?.contains(MinidumpClients.buildID) == true)
        let unresolved = MinidumpClients.crashedFrames(before)
        #expect(!unresolved.isEmpty)
        #expect(unresolved.first?["status"] as? String == "no-symbols")
        // Without CFI the walk is frame pointers and scanning: not the CFI stack.
        #expect(unresolved.map { $0["found_by"] as? String }.contains("cfi") == false)
        #expect(unresolved.map { $0["address"] as? String } != (try MinidumpClients.cliFrames()).map { $0["address"] as? String })

        try MinidumpClients.uploadBinary(to: server, version: "2.0")
        var frames: [[String: Any]] = []
        let resolved = try CrashFixtures.eventually(within: 60) {
            frames = MinidumpClients.crashedFrames(try server.crash(id))
            return frames.first?["status"] as? String == "ok"
        }
        #expect(resolved)
        #expect(frames.map { $0["address"] as? String } == (try MinidumpClients.cliFrames()).map { $0["address"] as? String },
                "the late symbols' CFI walks the stack again: \(frames.map { $0["address"] ?? "" })")
        #expect(frames.count > 1 && frames[1]["address"] as? String == "0x40207a")
        #expect(frames.count > 1 && MinidumpClients.function(frames[1]) == "(anonymous namespace)::start()")
        #expect(try server.crash(id)["version"] as? String == "2.0", "the ver part wins over ?version=")
    }

    @Test("a bare minidump body with a Bearer key; JSON when asked; ?version= when no ver annotation")
    func bareBody() throws {
        let server = try TestServer()
        let answer = try server.request("POST", "/api/v1/apps/\(server.appID)/minidump?version=3.1",
                                        extra: ["-H", "Content-Type: application/octet-stream", "-H", "Accept: application/json",
                                                "--data-binary", "@" + MinidumpClients.minidump])
        #expect(answer.status == 200, "\(answer.text)")
        #expect(answer.headers["content-type"] == "application/json")
        guard let id = answer.json["id"] as? String else { throw TestFailure("no id: \(answer.text)") }
        #expect(answer.json["duplicate"] as? Bool == false)
        #expect(try server.crash(id)["version"] as? String == "3.1")
        let again = try server.request("POST", "/api/v1/apps/\(server.appID)/minidump",
                                       extra: ["-H", "Content-Type: application/octet-stream", "-H", "Accept: application/json",
                                               "--data-binary", "@" + MinidumpClients.minidump])
        #expect(again.json["id"] as? String == id)
        #expect(again.json["duplicate"] as? Bool == true)
        // Not a minidump: refused, nothing stored.
        let text = try server.request("POST", "/api/v1/apps/\(server.appID)/minidump",
                                      extra: ["-H", "Content-Type: application/octet-stream", "--data-binary", "hello"])
        #expect(text.status == 400)
        #expect(text.text.contains("MDMP"))
        // The signature and a version the reader does not know (its one header check), or a
        // header cut short: refused as the reader would refuse it, nothing stored.
        var versions = Array(Self.minidump)
        versions[4] = 0x94
        let unknownVersion = FileManager.default.temporaryDirectory.appendingPathComponent("version-\(UUID().uuidString).dmp")
        try Data(versions).write(to: unknownVersion)
        defer { try? FileManager.default.removeItem(at: unknownVersion) }
        let wrongVersion = try server.request("POST", "/api/v1/apps/\(server.appID)/minidump",
                                              extra: ["-H", "Content-Type: application/octet-stream", "--data-binary", "@" + unknownVersion.path])
        #expect(wrongVersion.status == 400)
        #expect(wrongVersion.text.contains("unknown minidump version 0xa794"), "\(wrongVersion.text)")
        let cut = FileManager.default.temporaryDirectory.appendingPathComponent("cut-\(UUID().uuidString).dmp")
        try Data(Self.minidump.prefix(16)).write(to: cut)
        defer { try? FileManager.default.removeItem(at: cut) }
        let short = try server.request("POST", "/api/v1/apps/\(server.appID)/minidump",
                                       extra: ["-H", "Content-Type: application/octet-stream", "--data-binary", "@" + cut.path])
        #expect(short.status == 400, "\(short.text)")
        #expect(short.text.contains("header"), "\(short.text)")
        #expect((try server.get("crashes").json["crashes"] as? [Any])?.count == 1)
    }

    @Test("authentication: Bearer or ?key= on this route only; wrong and missing keys are 401")
    func authentication() throws {
        let server = try TestServer()
        let route = "/api/v1/apps/\(server.appID)/minidump"
        let body = ["-H", "Content-Type: application/octet-stream", "--data-binary", "@" + MinidumpClients.minidump]
        #expect(try server.request("POST", route, key: .some(nil), extra: body).status == 401)
        #expect(try server.request("POST", route, key: .some("wrong"), extra: body).status == 401)
        #expect(try server.request("POST", route + "?key=wrong", key: .some(nil), extra: body).status == 401)
        // A wrong Bearer key is not rescued by a right ?key=.
        #expect(try server.request("POST", route + "?key=\(server.key)", key: .some("wrong"), extra: body).status == 401)
        #expect(try server.request("POST", "/api/v1/apps/nosuchapp/minidump?key=\(server.key)", key: .some(nil), extra: body).status == 401)
        // Other routes take the key in the header alone.
        #expect(try server.request("GET", "/api/v1/apps/\(server.appID)/crashes?key=\(server.key)", key: .some(nil)).status == 401)
        #expect(try server.request("POST", route + "?key=\(server.key)", key: .some(nil), extra: body).status == 200)
    }

    @Test("keys given in the URL appear in no log line (trace level: the server's and its libraries'), no metric and no error body")
    func keyRedaction() throws {
        let server = try TestServer(arguments: ["--log-level", "trace"])
        let body = ["-H", "Content-Type: application/octet-stream", "--data-binary", "@" + MinidumpClients.minidump]
        let route = "/api/v1/apps/\(server.appID)/minidump"
        #expect(try server.request("POST", route + "?key=\(server.key)", key: .some(nil), extra: body).status == 200)
        #expect(try server.request("POST", route + "?key=wrong-key-1234567890", key: .some(nil), extra: body).status == 401)
        let refused = try server.request("POST", route + "?version=bad%20version&key=\(server.key)", key: .some(nil), extra: body)
        #expect(refused.status == 400)
        // Failures of every kind: a body too large for the limit, a malformed form, a route that
        // does not exist, a route that takes no key in the URL, the key given twice.
        let failures = [
            try server.request("POST", route + "?key=\(server.key)", key: .some(nil),
                               extra: ["-H", "Content-Type: multipart/form-data; boundary=B", "--data-binary", "--B\r\nbroken"]),
            try server.request("POST", route + "x?key=\(server.key)", key: .some(nil), extra: body),
            try server.request("GET", "/api/v1/apps/\(server.appID)/crashes?key=\(server.key)", key: .some(nil)),
        ]
        #expect(failures.map(\.status) == [400, 404, 401])
        let twice = try server.request("POST", route + "?key=\(server.key)&sentry_key=\(server.key)&key=wrong-key-1234567890",
                                       key: .some(nil), extra: body)
        #expect(twice.status == 200 || twice.status == 401)
        for answer in [refused] + failures { #expect(!answer.text.contains(server.key)) }
        let metrics = try server.request("GET", "/metrics", key: .some(nil))
        #expect(metrics.status == 200)
        #expect(!metrics.text.contains(server.key) && !metrics.text.contains("wrong-key-1234567890"))
        _ = server.terminate()
        let logs = try FileManager.default.contentsOfDirectory(atPath: server.scratch).filter { $0.hasSuffix(".log") }
        let text = try logs.map { try String(contentsOfFile: server.scratch + "/" + $0, encoding: .utf8) }.joined()
        #expect(text.contains("minidump"), "the requests are logged: \(text.prefix(2000))")
        #expect(!text.contains(server.key))
        #expect(!text.contains("wrong-key-1234567890"))
    }

    @Test("a gzip bomb is refused once the inflated bytes pass --max-minidump-bytes, without inflating it")
    func gzipBomb() throws {
        let server = try TestServer(arguments: ["--max-minidump-bytes", "1048576"])
        let directory = server.scratch
        // 1 GiB of zeros: about 1 MiB of gzip.
        let made = try Binary.run("/bin/sh", ["-c", "head -c 1073741824 /dev/zero | gzip -c > '\(directory)/bomb.gz'"])
        #expect(made.status == 0)
        let answer = try server.request("POST", "/api/v1/apps/\(server.appID)/minidump",
                                        extra: ["-H", "Content-Type: application/octet-stream", "-H", "Content-Encoding: gzip",
                                                "--data-binary", "@\(directory)/bomb.gz"])
        #expect(answer.status == 413)
        #expect(answer.text.contains("max-minidump-bytes"))
        // Inflating it would have taken 1 GiB; the server stayed small.
        #expect(try server.peakResidentKiB() < 400_000)
        // The same limit for a body sent as it is.
        var big = Self.minidump
        big.append(Data(count: 1 << 20))
        let file = directory + "/big.dmp"
        try big.write(to: URL(fileURLWithPath: file))
        let plain = try server.request("POST", "/api/v1/apps/\(server.appID)/minidump",
                                       extra: ["-H", "Content-Type: application/octet-stream", "--data-binary", "@" + file])
        #expect(plain.status == 413)
        // Truncated and corrupt gzip: 400, nothing stored.
        let whole = try MinidumpClients.gzipped(Self.minidump)
        for (name, bytes) in [("truncated", whole.prefix(whole.count / 2)), ("corrupt", Data("not gzip at all".utf8))] {
            let path = directory + "/" + name
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let refused = try server.request("POST", "/api/v1/apps/\(server.appID)/minidump",
                                             extra: ["-H", "Content-Type: application/octet-stream", "-H", "Content-Encoding: gzip",
                                                     "--data-binary", "@" + path])
            #expect(refused.status == 400, "\(name): \(refused.text)")
        }
        #expect((try server.get("crashes").json["crashes"] as? [Any])?.count == 0)
    }

    @Test("a ver annotation that is not a version loses nothing: 200, the crash stored with ver kept, its version the trimmed ver, else ?version=, else unknown, and a note saying why; an invalid ?version= alone is still a 400")
    func invalidVerAnnotation() throws {
        let server = try TestServer()
        /// The reference minidump with `tag` appended (a distinct digest, not a retry; read the same).
        func minidump(_ tag: Int) -> Data { Self.minidump + Data(repeating: UInt8(tag), count: 1) }
        func stored(_ answer: HTTPAnswer) throws -> (crash: [String: Any], details: [String: Any]) {
            #expect(answer.status == 200, "\(answer.text.prefix(300))")
            guard answer.status == 200, Self.isCrashID(answer.text) else { throw TestFailure("no crash id: \(answer.text.prefix(300))") }
            let crash = try server.crash(answer.text)
            return (crash, try #require(crash["minidump"] as? [String: Any]))
        }
        // Crashpad's request, identify_client_via_url copying ver into ?version= (invalid too).
        for (tag, ver) in [(1, "1.0 (42)"), (2, String(repeating: "1.0 ", count: 2560))] {
            let annotations = ["prod": "crash_linux", "ver": ver, "guid": "4e7b6f0a-0000-4000-8000-00000000000\(tag)"]
            let request = try MinidumpClients.crashpadBody(minidump: minidump(tag), annotations: annotations, gzip: true)
            let (crash, details) = try stored(try MinidumpClients.crashpadPost(server, body: request.body, contentType: request.contentType,
                                                                               gzip: true, query: "key=\(server.key)", identifying: annotations))
            #expect(crash["version"] as? String == "unknown")
            #expect((details["annotations"] as? [String: String]) == annotations, "the client's ver is kept as it came")
            let note = details["version_note"] as? String ?? ""
            #expect(note.contains("the ver annotation (\(ver.utf8.count) bytes") && note.contains("not 1 to 128 characters"), "\(note)")
            #expect(note.hasSuffix("nor is ?version=; the version is unknown"), "\(note)")
            #expect(note.utf8.count < 300, "the note does not repeat a long ver")
        }
        // Breakpad's form with ?version= in the URL: the version is ?version=.
        let fallback = server.scratch + "/tagged-3.dmp"
        try minidump(3).write(to: URL(fileURLWithPath: fallback))
        let (crash, details) = try stored(try MinidumpClients.breakpadPost(server, minidump: fallback, parameters: [("ver", "1.0 (42)")],
                                                                           query: "version=1.0"))
        #expect(crash["version"] as? String == "1.0")
        #expect((details["annotations"] as? [String: String])?["ver"] == "1.0 (42)")
        #expect((details["version_note"] as? String)?.hasSuffix("; the version is ?version= instead") == true, "\(details)")
        // White space around a version: taken without it, and said so.
        let padded = server.scratch + "/tagged-4.dmp"
        try minidump(4).write(to: URL(fileURLWithPath: padded))
        let (trimmed, trimmedDetails) = try stored(try MinidumpClients.breakpadPost(server, minidump: padded, parameters: [("ver", " 2.1.0\r\n")],
                                                                                     query: "version=9.9"))
        #expect(trimmed["version"] as? String == "2.1.0")
        #expect((trimmedDetails["annotations"] as? [String: String])?["ver"] == " 2.1.0\r\n")
        #expect((trimmedDetails["version_note"] as? String)?.hasSuffix("; taken without its surrounding white space") == true)
        // A valid ver: no note.
        let plain = server.scratch + "/tagged-5.dmp"
        try minidump(5).write(to: URL(fileURLWithPath: plain))
        let (_, plainDetails) = try stored(try MinidumpClients.breakpadPost(server, minidump: plain, parameters: [("ver", "3.0")], query: ""))
        #expect(plainDetails["version_note"] == nil)
        // A prod that is no label (a NUL, a newline): the crash is stored, prod kept only as an annotation.
        let unlabelled = ["prod": "crash\u{0}linux\n", "ver": "3.0"]
        let unlabelledRequest = try MinidumpClients.crashpadBody(minidump: minidump(7), annotations: unlabelled, gzip: true)
        let (_, unlabelledDetails) = try stored(try MinidumpClients.crashpadPost(server, body: unlabelledRequest.body,
                                                                                 contentType: unlabelledRequest.contentType, gzip: true,
                                                                                 query: "key=\(server.key)", identifying: [:]))
        #expect(unlabelledDetails["product"] == nil, "\(unlabelledDetails)")
        #expect((unlabelledDetails["annotations"] as? [String: String])?["prod"] == "crash\u{0}linux\n")
        // ?version= alone is the caller's own parameter: 400, as on POST …/crashes, and nothing stored.
        let explicit = server.scratch + "/tagged-6.dmp"
        try minidump(6).write(to: URL(fileURLWithPath: explicit))
        let refused = try MinidumpClients.breakpadPost(server, minidump: explicit, parameters: [("prod", "crash_linux")],
                                                       query: "version=1.0%20(42)")
        #expect(refused.status == 400, "\(refused.text)")
        #expect(refused.text.contains("version must be 1 to 128 characters"))
        #expect((try server.get("crashes").json["crashes"] as? [Any])?.count == 6)
    }

    @Test("hostile multipart bodies get a 400 saying what is wrong, and store nothing")
    func hostileMultipart() throws {
        let server = try TestServer()
        let boundary = "XyZ"
        let dump = String(decoding: Self.minidump.prefix(64), as: UTF8.self)
        func file(_ name: String = "upload_file_minidump") -> String {
            "--XyZ\r\nContent-Disposition: form-data; name=\"\(name)\"; filename=\"a.dmp\"\r\n\r\n"
        }
        let cases: [(String, Data, String)] = [
            ("no closing boundary", Data((file() + dump).utf8), "ends inside"),
            ("no boundary at all", Data("just some bytes".utf8), "ends inside"),
            ("a header line without a colon", Data("--XyZ\r\nContent-Disposition form-data\r\n\r\nx\r\n--XyZ--\r\n".utf8), "colon"),
            ("headers over 16 KiB", Data(("--XyZ\r\nX-Pad: " + String(repeating: "a", count: 20_000)).utf8), "headers are over"),
            ("not form-data", Data("--XyZ\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nx\r\n--XyZ--\r\n".utf8), "form-data"),
            ("an unclosed quote", Data("--XyZ\r\nContent-Disposition: form-data; name=\"a\r\n\r\nx\r\n--XyZ--\r\n".utf8), "quote"),
            ("no minidump part", Data("--XyZ\r\nContent-Disposition: form-data; name=\"prod\"\r\n\r\nx\r\n--XyZ--\r\n".utf8), "upload_file_minidump"),
            ("garbage after a boundary", Data("--XyZgarbage\r\n".utf8), "neither"),
            ("too many parts", Data((String(repeating: "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n", count: 1100) + "--XyZ--\r\n").utf8), "parts"),
            ("an annotation over 64 KiB", Data(("--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n" + String(repeating: "v", count: 70_000) + "\r\n--XyZ--\r\n").utf8), "over"),
        ]
        for (name, body, message) in cases {
            let path = server.scratch + "/body"
            try body.write(to: URL(fileURLWithPath: path))
            let answer = try server.request("POST", "/api/v1/apps/\(server.appID)/minidump",
                                            extra: ["-H", "Content-Type: multipart/form-data; boundary=\(boundary)", "--data-binary", "@" + path])
            #expect(answer.status == 400, "\(name): \(answer.status) \(answer.text)")
            #expect(answer.errorCode == "bad-request", "\(name)")
            #expect(answer.text.contains(message), "\(name): \(answer.text)")
        }
        for contentType in ["multipart/form-data", "multipart/form-data; boundary=" + String(repeating: "b", count: 71)] {
            let answer = try server.request("POST", "/api/v1/apps/\(server.appID)/minidump",
                                            extra: ["-H", "Content-Type: \(contentType)", "--data-binary", "@" + MinidumpClients.minidump])
            #expect(answer.status == 400, "\(contentType): \(answer.text)")
            #expect(answer.text.contains("boundary"), "\(contentType): \(answer.text)")
        }
        #expect((try server.get("crashes").json["crashes"] as? [Any])?.count == 0)
        #expect(try server.request("GET", "/healthz", key: .some(nil)).status == 200)
    }

    @Test("hostile minidumps are stored as failed with the reason (or walked as far as they hold); the server goes on")
    func hostileMinidumps() throws {
        let server = try TestServer()
        var ids: [String] = []
        var bodies: [Data] = []
        // Truncations of the reference inside its directory, its streams and its stack memory.
        for length in [32, 48, 200, 1_000, 4_000, 12_000, 20_000] { bodies.append(Self.minidump.prefix(length)) }
        // A stream count in the billions, a directory past the end.
        var huge = Data(Self.minidump.prefix(64))
        huge.replaceSubrange(8..<12, with: Data([0xff, 0xff, 0xff, 0x7f]))
        bodies.append(huge)
        var outside = Data(Self.minidump)
        outside.replaceSubrange(12..<16, with: Data([0xf0, 0xff, 0xff, 0x7f]))
        bodies.append(outside)
        for body in bodies {
            let path = server.scratch + "/hostile.dmp"
            try body.write(to: URL(fileURLWithPath: path))
            let answer = try server.request("POST", "/api/v1/apps/\(server.appID)/minidump",
                                            extra: ["-H", "Content-Type: application/octet-stream", "-H", "Accept: application/json",
                                                    "--data-binary", "@" + path])
            #expect(answer.status == 200 || answer.status == 400, "\(answer.text)")
            if let id = answer.json["id"] as? String { ids.append(id) }
        }
        #expect(ids.count >= 5)
        var failed = 0
        for id in ids {
            let crash = try Self.processed(server, id)
            if crash["state"] as? String == "failed" {
                failed += 1
                #expect((crash["failure"] as? String)?.contains("minidump") == true, "\(crash["failure"] ?? "")")
            }
        }
        #expect(failed >= 3)
        #expect(try server.request("GET", "/healthz", key: .some(nil)).status == 200)
    }

    @Test("hostile minidumps that read: a million threads on one stack, overlapping and outside ranges, looping stacks, a stack on the thread list; failed with the reason or walked as far as they hold, in bounded time and memory")
    func hostileMinidumpsThatRead() throws {
        let server = try TestServer()
        guard let pid = server.process?.processIdentifier else { throw TestFailure("no server") }
        let baseline = try ProcessProbe.peakResidentKiB(pid)
        // 1,300,000 threads (62 MB, under the 64 MiB default, about 80 KB gzip'd) sharing one
        // stack: walked in full, 14 million frames; each memory read once searched every thread.
        let cases: [(String, MinidumpClients.Hostile)] = [
            ("threads", .threads(1_300_000)), ("overlapping", .overlappingMemory(100_000)), ("outside", .memoryOutsideFile),
            ("looping", .loopingStack), ("stack on the thread list", .stackOnThreadList(1_000)),
        ]
        var ids: [String: String] = [:]
        for (name, kind) in cases {
            let path = server.scratch + "/hostile.dmp.gz"
            try MinidumpClients.gzipped(try MinidumpClients.hostile(kind)).write(to: URL(fileURLWithPath: path))
            let answer = try server.request("POST", "/api/v1/apps/\(server.appID)/minidump",
                                            extra: ["-H", "Content-Type: application/octet-stream", "-H", "Content-Encoding: gzip",
                                                    "-H", "Accept: application/json", "--data-binary", "@" + path])
            #expect(answer.status == 200, "\(name): \(answer.text)")
            ids[name] = answer.json["id"] as? String
        }
        var crashes: [String: [String: Any]] = [:]
        for (name, id) in ids { crashes[name] = try Self.processed(server, id, within: 300) }
        let threads = crashes["threads"]
        #expect(threads?["state"] as? String == "failed")
        #expect((threads?["failure"] as? String)?.contains("1300000 threads walk to more than 100000 frames") == true,
                "\(threads?["failure"] ?? "")")
        #expect((threads?["failure"] as? String)?.contains("--max-report-frames") == true)
        let outside = crashes["outside"]
        #expect(outside?["state"] as? String == "failed")
        #expect((outside?["failure"] as? String)?.contains("past the end of the file") == true, "\(outside?["failure"] ?? "")")
        // Overlapping ranges and a stack on the thread list read: walked as far as they hold.
        for name in ["overlapping", "looping", "stack on the thread list"] {
            #expect(crashes[name]?["state"] as? String == "done", "\(name): \(crashes[name]?["failure"] ?? "")")
        }
        // The looping stack: the walk goes on only while the stack pointer rises, at most 1,024 frames.
        let looping = MinidumpClients.crashedFrames(crashes["looping"] ?? [:])
        #expect((2...1024).contains(looping.count), "\(looping.count) frames")
        // Generous: the server never held the walks of a million threads (gigabytes).
        let peak = try ProcessProbe.peakResidentKiB(pid)
        #expect(peak - baseline < 1_000_000, "peak \(peak) KiB, \(baseline) KiB before")
        print("hostileMinidumpsThatRead: peak \(peak) KiB, \(baseline) KiB before")
        #expect(try server.request("GET", "/healthz", key: .some(nil)).status == 200)
    }

    @Test("crashsym upload-minidump sends as Crashpad does; its --help; usage and input errors")
    func uploadCommand() throws {
        let server = try TestServer()
        let sent = try Binary.crashsym(["upload-minidump", MinidumpClients.minidump, "--app-id", server.appID, "--app-key", server.key,
                                        "--server", server.base, "--annotation", "prod=demo", "--annotation", "ver=4.2",
                                        "--annotation", "note=a=b"])
        #expect(sent.status == 0, "\(sent.stderr)")
        let id = sent.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(Self.isCrashID(id))
        let crash = try server.crash(id)
        #expect(crash["version"] as? String == "4.2")
        let details = crash["minidump"] as? [String: Any]
        #expect(details?["product"] as? String == "demo")
        #expect((details?["annotations"] as? [String: String]) == ["prod": "demo", "ver": "4.2", "note": "a=b"])
        // Sent again (uncompressed this time): the same crash.
        let again = try Binary.crashsym(["upload-minidump", MinidumpClients.minidump, "--app-id", server.appID, "--app-key", server.key,
                                         "--server", server.base, "--no-gzip"])
        #expect(again.status == 0)
        #expect(again.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == id)

        let help = try Binary.crashsym(["upload-minidump", "--help"])
        #expect(help.status == 0)
        for flag in ["--app-id", "--app-key", "--server", "--annotation", "--no-gzip", "--timeout", "upload_file_minidump"] {
            #expect(help.stdout.contains(flag), "\(flag)")
        }
        let usage = try Binary.crashsym(["upload-minidump", MinidumpClients.minidump, "--app-id", server.appID, "--annotation", "novalue"])
        #expect(usage.status == 2)
        let notDump = try Binary.crashsym(["upload-minidump", MinidumpClients.binary, "--app-id", server.appID, "--app-key", server.key,
                                           "--server", server.base])
        #expect(notDump.status == 1)
        #expect(notDump.stderr.contains("not a minidump"))
        let wrongKey = try Binary.crashsym(["upload-minidump", MinidumpClients.minidump, "--app-id", server.appID, "--app-key", "wrong",
                                            "--server", server.base])
        #expect(wrongKey.status == 1)
        #expect(!wrongKey.stderr.contains("wrong\n"))
    }

    @Test("the API and the console find a minidump's attachments by one rule: the last one, and past the cap, past the last or not a number, the same answer")
    func attachmentIndexRule() throws {
        let server = try TestServer()
        let request = try MinidumpClients.crashpadBody(minidump: Self.minidump, annotations: ["prod": "app"],
                                                       files: ["log": ("a.log", Data("first".utf8)), "trace": ("b.txt", Data("last".utf8))],
                                                       gzip: false)
        let answer = try MinidumpClients.crashpadPost(server, body: request.body, contentType: request.contentType, gzip: false,
                                                      query: "key=\(server.key)")
        #expect(answer.status == 200, "\(answer.text)")
        let id = answer.text
        let password = try server.createUser("admin", admin: true)
        let console = ConsoleClient(server)
        #expect(try console.signIn("admin", password).status == 303)
        // The last valid index, then past the last, at the cap, past the cap (4 and 5 digits,
        // and more than an Int holds), and not an index at all.
        let expected = ["1": 200, "2": 404, "32": 404, "9999": 404, "10000": 404, "99999999999999999999999": 404,
                        "x": 400, "-1": 400, "+1": 400]
        for (index, status) in expected.sorted(by: { $0.key < $1.key }) {
            let api = try server.get("crashes/\(id)/attachments/\(index)")
            let page = try console.get("/apps/\(server.appID)/crashes/\(id)/attachments/\(index)")
            #expect(api.status == status, "API, index \(index): \(api.text)")
            #expect(page.status == api.status, "the console answers index \(index) as the API does")
            if status == 200 { #expect(api.body == page.body && !api.body.isEmpty) }
        }
    }

    @Test("the console's crash page shows what the client sent, HTML-escaped")
    func consolePage() throws {
        let server = try TestServer()
        let request = try MinidumpClients.crashpadBody(minidump: Self.minidump,
                                                       annotations: ["prod": "<script>alert(1)</script>", "channel": "<b>beta</b> & co",
                                                                     "ver": "1.0 <b>(42)</b>"],
                                                       files: ["log": ("<i>x</i>.log", Data("hi".utf8))], gzip: true)
        let answer = try MinidumpClients.crashpadPost(server, body: request.body, contentType: request.contentType, gzip: true,
                                                      query: "key=\(server.key)")
        #expect(answer.status == 200)
        _ = try Self.processed(server, answer.text)
        let password = try server.createUser("admin", admin: true)
        let console = ConsoleClient(server)
        #expect(try console.signIn("admin", password).status == 303)
        let page = try console.get("/apps/\(server.appID)/crashes/\(answer.text)")
        #expect(page.status == 200)
        #expect(page.text.contains("Sent by the crash client"))
        #expect(page.text.contains("&lt;b&gt;beta&lt;/b&gt; &amp; co"))
        #expect(page.text.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        #expect(page.text.contains("&lt;i&gt;x&lt;/i&gt;.log"))
        // Why the version is not the ver annotation.
        #expect(page.text.contains("1.0 &lt;b&gt;(42)&lt;/b&gt;"))
        #expect(page.text.contains("<p>Version: the ver annotation (15 bytes, kept with the annotations) is not 1 to 128 characters"))
        #expect(page.text.contains("; the version is unknown</p>"))
        // The console links the attachment, a download behind the session.
        #expect(page.text.contains("href=\"/apps/\(server.appID)/crashes/\(answer.text)/attachments/0\""))
        let fromConsole = try console.get("/apps/\(server.appID)/crashes/\(answer.text)/attachments/0")
        #expect(fromConsole.status == 200)
        #expect(fromConsole.text == "hi")
        #expect(fromConsole.headers["content-type"] == "application/octet-stream")
        #expect(fromConsole.headers["content-security-policy"]?.contains("sandbox") == true)
        #expect(try console.get("/apps/\(server.appID)/crashes/\(answer.text)/attachments/1").status == 404)
        #expect(try ConsoleClient(server).get("/apps/\(server.appID)/crashes/\(answer.text)/attachments/0").status != 200,
                "not without a session")
        let download = try server.get("crashes/\(answer.text)/attachments/0")
        #expect(download.body == Data("hi".utf8))
        #expect(download.headers["content-disposition"] == "attachment; filename=\"_i_x__i_.log\"")
        #expect(!page.text.contains("<b>beta</b>"))
        #expect(!page.text.contains("<script>alert(1)"))
    }

    @Test("an unsupported Content-Type or Content-Encoding is 415 (unsupported-media-type), nothing stored")
    func unsupportedMediaType() throws {
        let server = try TestServer()
        let route = "/api/v1/apps/\(server.appID)/minidump"
        for headers in [["Content-Type: text/plain"], ["Content-Type: application/json"],
                        ["Content-Type: application/octet-stream", "Content-Encoding: br"],
                        ["Content-Type: application/octet-stream", "Content-Encoding: deflate"]] {
            let answer = try server.request("POST", route, extra: headers.flatMap { ["-H", $0] } + ["--data-binary", "@" + MinidumpClients.minidump])
            #expect(answer.status == 415, "\(headers): \(answer.status) \(answer.text)")
            #expect(answer.errorCode == "unsupported-media-type", "\(headers)")
            #expect(answer.headers["connection"] == "close", "the rest of the body is not read")
        }
        #expect((try server.get("crashes").json["crashes"] as? [Any])?.count == 0)
        // What is supported still is.
        let ok = try server.request("POST", route, extra: ["-H", "Content-Type: application/x-minidump", "-H", "Content-Encoding: identity",
                                                           "--data-binary", "@" + MinidumpClients.minidump])
        #expect(ok.status == 200, "\(ok.text)")
    }

    /// The files in the server's object store.
    static func objectFiles(_ server: TestServer) -> Set<String> {
        let root = server.dataDirectory + "/objects"
        let files = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String } ?? []
        return Set(files.filter { path in
            var directory: ObjCBool = false
            return FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &directory) && !directory.boolValue
        })
    }

    @Test("a minidump sent again with other attachments answers the first crash and leaves none of its files behind")
    func duplicateLeavesNoFiles() throws {
        let server = try TestServer()
        let first = try MinidumpClients.crashpadBody(minidump: Self.minidump, annotations: ["prod": "crash_linux"],
                                                     files: ["log": ("app.log", Data("the first log\n".utf8))], gzip: false)
        let answer = try MinidumpClients.crashpadPost(server, body: first.body, contentType: first.contentType, gzip: false,
                                                      query: "key=\(server.key)")
        #expect(answer.status == 200, "\(answer.text)")
        let id = answer.text
        _ = try Self.processed(server, id)
        let before = Self.objectFiles(server)
        #expect(before.count == 2, "the minidump and its attachment: \(before)")

        // A retry whose attachments changed meanwhile (a log that grew, a file added).
        let second = try MinidumpClients.crashpadBody(minidump: Self.minidump, annotations: ["prod": "crash_linux"],
                                                      files: ["log": ("app.log", Data("the first log\nand a second line\n".utf8)),
                                                              "extra": ("extra.bin", Data(repeating: 7, count: 5000))],
                                                      gzip: true)
        let again = try MinidumpClients.crashpadPost(server, body: second.body, contentType: second.contentType, gzip: true,
                                                     query: "key=\(server.key)")
        #expect(again.status == 200)
        #expect(again.text == id)
        #expect(Self.objectFiles(server) == before, "no attachment of the duplicate is kept")
        #expect(try server.leftovers().isEmpty)
        let attachments = (try server.crash(id)["minidump"] as? [String: Any])?["attachments"] as? [[String: Any]]
        #expect(attachments?.count == 1)
        #expect(attachments?.first?["size"] as? Int == 14, "the first crash keeps its own attachment")
    }

    @Test("sentry-native's Crashpad upload: /api/PROJECT/minidump/?sentry_client=…&sentry_key=KEY, its attachments kept, the key in no log")
    func sentryNativeAlias() throws {
        let server = try TestServer(arguments: ["--log-level", "debug"])
        // What sentry-native's crashpad backend hands crashpad_handler: the serialized event and the
        // two breadcrumb files as attachments named as their files, gzip'd by Crashpad, to the
        // DSN's minidump URL (`sentry__dsn_get_minidump_url`).
        let files: [String: (filename: String, bytes: Data)] = [
            "__sentry-event": ("__sentry-event", Data([0x82, 0xa5] + Array("level".utf8) + [0xa5] + Array("fatal".utf8))),
            "__sentry-breadcrumb1": ("__sentry-breadcrumb1", Data([0x81, 0xa7] + Array("message".utf8) + [0xa2] + Array("hi".utf8))),
            "__sentry-breadcrumb2": ("__sentry-breadcrumb2", Data()),
        ]
        let request = try MinidumpClients.crashpadBody(minidump: Self.minidump, annotations: ["prod": "crash_linux", "ver": "1.0"],
                                                       files: files, gzip: true)
        let route = "/api/\(server.appID)/minidump/"
        let answer = try MinidumpClients.crashpadPost(server, body: request.body, contentType: request.contentType, gzip: true,
                                                      query: "sentry_client=sentry.native/0.7.20&sentry_key=\(server.key)", route: route)
        #expect(answer.status == 200, "\(answer.text)")
        #expect(Self.isCrashID(answer.text))
        let crash = try server.crash(answer.text)
        let details = crash["minidump"] as? [String: Any]
        let names = ((details?["attachments"] as? [[String: Any]]) ?? []).compactMap { $0["filename"] as? String }.sorted()
        #expect(names == ["__sentry-breadcrumb1", "__sentry-breadcrumb2", "__sentry-event"])
        #expect(crash["version"] as? String == "1.0")
        // A wrong or missing key, or one for another app, is refused.
        let bad = try MinidumpClients.crashpadPost(server, body: request.body, contentType: request.contentType, gzip: true,
                                                   query: "sentry_client=sentry.native/0.7.20&sentry_key=wrong-sentry-key-0123456789",
                                                   route: route)
        #expect(bad.status == 401)
        let none = try MinidumpClients.crashpadPost(server, body: request.body, contentType: request.contentType, gzip: true,
                                                    query: "sentry_client=sentry.native/0.7.20", route: route)
        #expect(none.status == 401)
        let other = try MinidumpClients.crashpadPost(server, body: request.body, contentType: request.contentType, gzip: true,
                                                     query: "sentry_key=\(server.key)", route: "/api/nosuchapp/minidump/")
        #expect(other.status == 401)
        _ = server.terminate()
        let logs = try FileManager.default.contentsOfDirectory(atPath: server.scratch).filter { $0.hasSuffix(".log") }
        let text = try logs.map { try String(contentsOfFile: server.scratch + "/" + $0, encoding: .utf8) }.joined()
        #expect(text.contains(route), "the requests are logged: \(text.prefix(2000))")
        #expect(!text.contains(server.key))
        #expect(!text.contains("wrong-sentry-key-0123456789"))
    }

    /// Sends `count` uploads of `size` bytes to `route` at once, all but each one's last byte;
    /// returns the answers of those the server refused meanwhile and the connections it did not.
    static func flood(_ server: TestServer, route: String, count: Int, size: Int) throws -> (refused: [String], waiting: [RawConnection]) {
        let head = "POST \(route) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(server.key)\r\n"
            + "Content-Type: application/octet-stream\r\nContent-Length: \(size)\r\n\r\n"
        // A minidump's header (signature, version 0xa793), then zeros: kept, then failed when read.
        var payload = Data(head.utf8) + Data("MDMP".utf8) + Data([0x93, 0xa7, 0, 0])
        payload.append(Data(count: size - 9))
        let connections = try (0..<count).map { _ in try RawConnection(port: server.port) }
        var offsets = [Int](repeating: 0, count: count)
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            var active = false
            var progressed = false
            for (index, connection) in connections.enumerated() {
                connection.receive(waiting: 0)
                guard connection.received.isEmpty, !connection.isClosed, offsets[index] < payload.count else { continue }
                active = true
                let end = min(offsets[index] + (256 << 10), payload.count)
                let sent = connection.send(payload.subdata(in: offsets[index]..<end))
                offsets[index] += sent
                progressed = progressed || sent > 0
            }
            if !active { break }
            if !progressed { usleep(2000) }
        }
        // The server may refuse a body whose bytes it had not read when the last were sent.
        for connection in connections where connection.received.isEmpty { connection.receive(waiting: 2) }
        let refused = connections.filter { !$0.received.isEmpty }.map(\.text)
        return (refused, connections.filter { $0.received.isEmpty && !$0.isClosed })
    }

    @Test("concurrent large uploads: at most --max-crash-bytes-in-flight of bodies in memory, 503 with Retry-After past it, for minidumps and crashes")
    func bytesInFlight() throws {
        let server = try TestServer(arguments: ["--max-minidump-bytes", "16777216", "--max-report-bytes", "16777216",
                                                "--max-crash-bytes-in-flight", "33554432"])
        guard let pid = server.process?.processIdentifier else { throw TestFailure("no server") }
        let baseline = try ProcessProbe.peakResidentKiB(pid)
        let size = (16 << 20) - 64
        for route in ["minidump", "crashes"] {
            // 24 bodies of 16 MiB at once: 384 MiB if each were held.
            let (refused, waiting) = try Self.flood(server, route: "/api/v1/apps/\(server.appID)/\(route)", count: 24, size: size)
            #expect(refused.count >= 22, "\(route): \(refused.count) refused")
            #expect((1...2).contains(waiting.count), "\(route): 32 MiB holds one or two bodies of 16 MiB, not \(waiting.count)")
            for answer in refused {
                #expect(answer.hasPrefix("HTTP/1.1 503"), "\(route): \(answer.prefix(300))")
                #expect(answer.lowercased().contains("retry-after: 2"), "\(route): \(answer.prefix(300))")
                #expect(answer.contains("max-crash-bytes-in-flight"), "\(route)")
            }
            // The bodies let in finish and are answered as usual.
            for connection in waiting {
                #expect(connection.send(Data([0])) == 1)
                var tries = 0
                while !connection.text.contains("\r\n\r\n") && !connection.isClosed && tries < 300 {
                    connection.receive(waiting: 0.1)
                    tries += 1
                }
                let status = connection.text.prefix(12)
                #expect(status != "HTTP/1.1 503", "\(route)")
                if route == "minidump" { #expect(status == "HTTP/1.1 200", "\(connection.text.prefix(300))") }
            }
        }
        // Generous: bodies held (and the arrays' growth) within 32 MiB, never 24 × 16 MiB.
        let peak = try ProcessProbe.peakResidentKiB(pid)
        #expect(peak - baseline < 200_000, "peak \(peak) KiB, \(baseline) KiB before")
        print("bytesInFlight: peak \(peak) KiB, \(baseline) KiB before")
        #expect(try server.request("GET", "/healthz", key: .some(nil)).status == 200)
    }
}
