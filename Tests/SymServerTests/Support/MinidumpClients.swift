import Foundation
import TestSupport

/// Requests as the crash clients send them, for `POST …/minidump`, and the reference minidump
/// (`../shared/reference/minidump-linux/`, read its README).
enum MinidumpClients {
    static let reference = Binary.root.deletingLastPathComponent().appendingPathComponent("shared/reference/minidump-linux").path
    static let minidump = reference + "/crash_linux.dmp"
    static let binary = reference + "/crash_linux"
    static let buildID = "db4c55d26192c436b9766a086583b9b5a6d2e271"

    /// A body as Crashpad's `HTTPMultipartBuilder` writes it: a random
    /// `---MultipartBoundary-<32 alphanumerics>---` boundary, the form data first in key order
    /// (a `std::map`), each `--B CRLF Content-Disposition: form-data; name="K" CRLF CRLF value CRLF`,
    /// then the file parts in key order with `; filename="F"` and `Content-Type:`, then `--B--CRLF`;
    /// names with `"`, CR, LF, `%` percent-escaped. The whole body gzip'd (the system's gzip) when
    /// `gzip`, as `SetGzip(true)` does.
    static func crashpadBody(minidump: Data, annotations: [String: String], files: [String: (filename: String, bytes: Data)] = [:],
                             gzip: Bool) throws -> (body: Data, contentType: String) {
        let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
        let boundary = "---MultipartBoundary-" + String((0..<32).map { _ in alphabet.randomElement()! }) + "---"
        func escape(_ name: String) -> String {
            name.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "\"", with: "%22")
                .replacingOccurrences(of: "\r", with: "%0d").replacingOccurrences(of: "\n", with: "%0a")
        }
        var body = Data()
        for (key, value) in annotations.sorted(by: { $0.key < $1.key }) {
            body.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(escape(key))\"\r\n\r\n\(value)\r\n".utf8))
        }
        var allFiles = files
        allFiles["upload_file_minidump"] = ("\(UUID().uuidString.lowercased()).dmp", minidump)
        for (key, file) in allFiles.sorted(by: { $0.key < $1.key }) {
            body.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(escape(key))\"; filename=\"\(escape(file.filename))\"\r\n".utf8))
            body.append(Data("Content-Type: application/octet-stream\r\n\r\n".utf8))
            body.append(file.bytes)
            body.append(Data("\r\n".utf8))
        }
        body.append(Data("--\(boundary)--\r\n".utf8))
        return (gzip ? try gzipped(body) : body, "multipart/form-data; boundary=\(boundary)")
    }

    /// `data` through `gzip -c` (the system's, an outside implementation of RFC 1952).
    static func gzipped(_ data: Data) throws -> Data {
        let directory = try Binary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try data.write(to: URL(fileURLWithPath: directory + "/body"))
        let result = try Binary.run("/bin/sh", ["-c", "gzip -c '\(directory)/body' > '\(directory)/body.gz'"])
        guard result.status == 0 else { throw TestFailure("gzip failed: \(result.stderr)") }
        return try Data(contentsOf: URL(fileURLWithPath: directory + "/body.gz"))
    }

    /// What crashpad_handler's Linux transport (`HTTPTransportLibcurl`) sends: POST with the body
    /// chunked (it sets no Content-Length), `Expect:` emptied (no 100-continue), any response
    /// encoding accepted, libcurl's `Accept: */*`, `Content-Encoding: gzip` when compressed, its
    /// user agent;
    /// the key in the URL (often all a Crashpad `StartHandler` url can carry), to which
    /// `CrashReportUploadThread` appends, with `identify_client_via_url` (its default), `product`,
    /// `version` and `guid` from the `prod`, `ver` and `guid` annotations (`identifying`),
    /// URL-encoded, after `?` or `&`. `route` is the path before the query (default
    /// `/api/v1/apps/APP/minidump`).
    static func crashpadPost(_ server: TestServer, body: Data, contentType: String, gzip: Bool, query: String,
                             identifying: [String: String] = [:], route: String? = nil, extra: [String] = []) throws -> HTTPAnswer {
        let path = server.scratch + "/crashpad-\(UUID().uuidString)"
        try body.write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        var arguments = ["-H", "Content-Type: \(contentType)", "-H", "Transfer-Encoding: chunked", "-H", "Expect:", "--compressed", "-A", "Crashpad/0.8.0 libcurl/7.88.1 Linux/6.1.0 (x86_64)",
                         "--data-binary", "@" + path]
        if gzip { arguments += ["-H", "Content-Encoding: gzip"] }
        var url = (route ?? "/api/v1/apps/\(server.appID)/minidump") + (query.isEmpty ? "" : "?" + query)
        let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")
        for (key, field) in [("prod", "product"), ("ver", "version"), ("guid", "guid")] {
            guard let value = identifying[key] else { continue }
            url += (url.contains("?") ? "&" : "?") + field + "=" + (value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? value)
        }
        return try server.request("POST", url, key: .some(nil), extra: arguments + extra)
    }

    /// What Breakpad's Linux `HTTPUpload::SendRequest` sends: a libcurl form post
    /// (`curl_formadd` COPYNAME/COPYCONTENTS per parameter, CURLFORM_FILE for the minidump under
    /// `upload_file_minidump`), `Expect:` emptied, user agent `Breakpad/1.0 (Linux)`, no gzip. The
    /// curl tool's `-F` builds the same form with the same library.
    /// `files` are further `files` map entries (newer `HTTPUpload::SendRequest` takes a map of
    /// part names to paths, each a CURLFORM_FILE part).
    static func breakpadPost(_ server: TestServer, minidump path: String, parameters: [(String, String)], query: String,
                             files: [(String, String)] = [], key: String?? = .none) throws -> HTTPAnswer {
        var arguments = ["-A", "Breakpad/1.0 (Linux)", "-H", "Expect:"]
        for (name, value) in parameters { arguments += ["--form-string", "\(name)=\(value)"] }
        for (name, file) in [("upload_file_minidump", path)] + files { arguments += ["-F", "\(name)=@\(file)"] }
        return try server.request("POST", "/api/v1/apps/\(server.appID)/minidump\(query.isEmpty ? "" : "?" + query)", key: key,
                                  extra: arguments)
    }

    /// `crashsym upload` of the reference binary as version `version`.
    static func uploadBinary(to server: TestServer, version: String) throws {
        let result = try Binary.crashsym(["upload", binary, "--app-id", server.appID, "--app-key", server.key,
                                          "--version", version, "--server", server.base])
        guard result.status == 0 else { throw TestFailure("crashsym upload failed: \(result.stdout) \(result.stderr)") }
    }

    /// The frames of the crashed stack of a processed crash.
    static func crashedFrames(_ crash: [String: Any]) -> [[String: Any]] {
        let stacks = ((crash["report"] as? [String: Any])?["stacks"] as? [[String: Any]]) ?? []
        return (stacks.first { $0["crashed"] as? Bool == true } ?? stacks.first)?["frames"] as? [[String: Any]] ?? []
    }

    /// The crashed thread's frames as `crashsym symbolicate` gives them for the reference minidump
    /// with its binary (the ELF file: code for the scan's call check, CFI).
    static func cliFrames() throws -> [[String: Any]] {
        let output = try Binary.crashsym(["symbolicate", minidump, "--symbols", binary, "--format", "json"])
        guard output.status == 0,
              let report = try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any] else {
            throw TestFailure("crashsym symbolicate \(minidump): \(output.status) \(output.stderr)")
        }
        return crashedFrames(["report": report])
    }

    /// Hostile variants of the reference minidump (`HostileMinidump`, shared with CrashsymTests).
    typealias Hostile = HostileMinidump.Kind

    static func hostile(_ kind: Hostile) throws -> Data {
        try HostileMinidump.bytes(kind, from: minidump)
    }

    /// The outermost function of a frame.
    static func function(_ frame: [String: Any]) -> String? {
        ((frame["symbolized"] as? [[String: Any]])?.last)?["function"] as? String
    }
}
