import Foundation
import Testing
import TestSupport
@testable import SymClient

/// The body `crashsym upload-minidump` sends, against Crashpad's `HTTPMultipartBuilder` (its
/// boundary, part headers, `EncodeMIMEField` escapes, the whole body gzip'd) and read back by
/// outside parsers: Python's `email` package for the form, the system's `gzip` for the compression.
@Suite struct MinidumpUploadBodyTests {
    struct FormFailure: Error { var message: String }

    /// The parts as Python's `email.parser` reads the body: name, filename, content type, bytes (hex).
    static func parts(_ body: [UInt8], contentType: String) throws -> [[String: String]] {
        let script = """
            import sys, json, email.parser, email.policy
            body = sys.stdin.buffer.read()
            message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                b"Content-Type: " + sys.argv[1].encode() + b"\\r\\nMIME-Version: 1.0\\r\\n\\r\\n" + body)
            assert message.is_multipart(), "not multipart"
            parts = []
            for part in message.iter_parts():
                parts.append({"name": part.get_param("name", header="content-disposition"),
                              "filename": part.get_param("filename", header="content-disposition") or "",
                              "type": part.get("content-type", ""),
                              "hex": part.get_payload(decode=True).hex()})
            print(json.dumps(parts))
            """
        let run = try Tool.run("/usr/bin/env", ["python3", "-c", script, contentType], input: Data(body))
        guard run.status == 0, let parts = try JSONSerialization.jsonObject(with: run.stdout) as? [[String: String]] else {
            throw FormFailure(message: "python3 could not read the form: \(run.stderr)")
        }
        return parts
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test("Crashpad's layout: ---MultipartBoundary-<32 alphanumerics>---, text parts then the minidump part, read back by Python's email parser")
    func layout() throws {
        let minidump: [UInt8] = Array("MDMP".utf8) + (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 7) } + [0x0d, 0x0a, 0x2d, 0x2d]
        let upload = MinidumpUpload(minidump: minidump, filename: "3d2c.dmp",
                                    annotations: [("prod", "demo"), ("ver", "1.2.3"), ("channel", "beta & \"more\"")], gzip: false)
        let (body, contentType) = try upload.body()
        let boundary = String(contentType.dropFirst("multipart/form-data; boundary=".count))
        #expect(contentType.hasPrefix("multipart/form-data; boundary=---MultipartBoundary-"))
        #expect(boundary.count == 56 && boundary.hasSuffix("---"))
        #expect(boundary.dropFirst(21).dropLast(3).allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) })
        // The bytes as HTTPMultipartBuilder::GetBodyStream writes them (http_multipart_builder.cc).
        let text = String(decoding: body, as: UTF8.self)
        #expect(text.hasPrefix("--\(boundary)\r\nContent-Disposition: form-data; name=\"prod\"\r\n\r\ndemo\r\n--\(boundary)\r\n"))
        #expect(text.contains("--\(boundary)\r\nContent-Disposition: form-data; name=\"upload_file_minidump\"; filename=\"3d2c.dmp\"\r\n"
            + "Content-Type: application/octet-stream\r\n\r\nMDMP"))
        #expect(body.suffix(boundary.utf8.count + 8) == Array("\r\n--\(boundary)--\r\n".utf8))
        let parts = try Self.parts(body, contentType: contentType)
        #expect(parts.map { $0["name"] } == ["prod", "ver", "channel", "upload_file_minidump"])
        #expect(parts.map { $0["hex"] } == [Self.hex("demo".utf8), Self.hex("1.2.3".utf8), Self.hex("beta & \"more\"".utf8),
                                            Self.hex(minidump)])
        #expect(parts.last?["filename"] == "3d2c.dmp")
        #expect(parts.last?["type"] == "application/octet-stream")
        // Each body draws its own boundary.
        #expect(try upload.body().contentType != contentType)
    }

    @Test("names escaped as Crashpad's EncodeMIMEField does: \", CR, LF and % as %22 %0d %0a %25")
    func escapes() {
        #expect(MinidumpUpload.escape("a\"b\rc\nd%e") == "a%22b%0dc%0ad%25e")
        #expect(MinidumpUpload.escape("plain_name-1.0") == "plain_name-1.0")
        #expect(MinidumpUpload.escape("é") == "é")
    }

    @Test("gzip: one RFC 1952 member the system's gzip inflates to the uncompressed form")
    func gzip() throws {
        let minidump: [UInt8] = Array("MDMP".utf8) + [UInt8](repeating: 0x41, count: 200_000)
        let upload = MinidumpUpload(minidump: minidump, annotations: [("prod", "demo")], gzip: true)
        let (body, contentType) = try upload.body()
        #expect(body.prefix(3) == [0x1f, 0x8b, 0x08])
        #expect(body.count < 10_000, "compressed: \(body.count) bytes")
        let inflated = try Tool.run("/bin/gzip", ["-dc"], input: Data(body))
        #expect(inflated.status == 0, "\(inflated.stderr)")
        let parts = try Self.parts(Array(inflated.stdout), contentType: contentType)
        #expect(parts.map { $0["name"] } == ["prod", "upload_file_minidump"])
        #expect(parts.last?["hex"] == Self.hex(minidump))
        // An empty minidump still makes a valid member.
        let empty = try MinidumpUpload(minidump: [], gzip: true).body()
        #expect(try Tool.run("/bin/gzip", ["-t"], input: Data(empty.bytes)).status == 0)
    }
}
