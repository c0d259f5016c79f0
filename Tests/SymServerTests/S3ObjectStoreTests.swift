import Foundation
@testable import SymServer
@testable import SymS3
import Testing

/// The S3 client and the shared object store against a real SeaweedFS, which enforces AWS
/// Signature V4; and `crashsym serve --object-store s3://…` end to end.
struct S3ObjectStoreTests {
    static func file(_ bytes: [UInt8], in directory: String) throws -> String {
        let path = directory + "/" + UUID().uuidString
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("signed requests are accepted; a wrong secret says the credentials are wrong; an unknown key says so")
    func signatures() throws {
        let weed = try SeaweedFS.shared.get()
        let client = try weed.newPrefix()
        try client.put(bytes: Array("signed".utf8), key: "a/b")
        #expect(try client.get("a/b") == Array("signed".utf8))
        let wrong = S3Client(location: client.location,
                             credentials: S3Credentials(accessKeyID: SeaweedFS.accessKey, secretAccessKey: "not-the-secret"))
        do {
            _ = try wrong.get("a/b")
            Issue.record("a wrong secret was accepted")
        } catch {
            #expect(error.kind == .credentials)
            #expect(error.code == "SignatureDoesNotMatch")
            #expect(error.message.contains("AWS_SECRET_ACCESS_KEY is wrong"))
        }
        let unknown = S3Client(location: client.location, credentials: S3Credentials(accessKeyID: "nobody", secretAccessKey: "x"))
        do {
            try unknown.put(bytes: [1], key: "c")
            Issue.record("an unknown key was accepted")
        } catch {
            #expect(error.kind == .credentials)
            #expect(error.message.contains("AWS_ACCESS_KEY_ID"))
        }
    }

    @Test("a client's requests reuse the connection the previous one opened")
    func connectionReuse() throws {
        let client = try SeaweedFS.shared.get().newPrefix()
        try client.put(bytes: Array("kept alive".utf8), key: "reuse")
        for _ in 0..<3 {
            let answer = try client.send(.head, client.url("reuse"))
            #expect(answer.status == 200 && answer.connectionsOpened == 0)
        }
    }

    @Test("a file larger than a part goes up in parts and comes back identical, whole and by range")
    func multipart() throws {
        let weed = try SeaweedFS.shared.get()
        var client = try weed.newPrefix(prefix: "p/")
        client.partSize = 5 << 20
        let directory = try Binary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = ObjectStoreConformanceTests.bytes(12 << 20 + 12_345, seed: 9)
        let path = try Self.file(bytes, in: directory)
        try client.put(fileAt: path, key: "big")
        #expect(try client.size(of: "big") == UInt64(bytes.count))
        // S3's ETag of a multipart object ends with the part count.
        let head = try Binary.run("/usr/bin/curl", ["-sS", "-I", "--aws-sigv4", "aws:amz:us-east-1:s3",
                                                    "-u", "\(SeaweedFS.accessKey):\(SeaweedFS.secretKey)", client.url("big")])
        #expect(head.stdout.lowercased().contains("-3\""), "\(head.stdout)")
        try client.download("big", to: directory + "/back")
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/back"))) == bytes)
        let start = UInt64(5 << 20) - 10
        #expect(try client.get("big", range: start..<start + 20) == Array(bytes[Int(start)..<Int(start) + 20]))
        #expect(try client.list().objects.map(\.key) == ["big"])
    }

    @Test("an endpoint that refuses connections is unavailable, after the retries")
    func unreachable() throws {
        try SeaweedFS.withRefusingPort { port in
            var client = S3Client(location: S3Location(bucket: "nowhere", endpoint: "http://127.0.0.1:\(port)"),
                                  credentials: S3Credentials(accessKeyID: "a", secretAccessKey: "b"))
            client.firstBackoff = .milliseconds(10)
            do {
                try client.put(bytes: [1], key: "x")
                Issue.record("a put to a closed port succeeded")
            } catch let error as S3Error {
                #expect(error.kind == .unavailable)
                #expect(error.message.contains("cannot be reached"), "\(error.message)")
            }
        }
    }

    @Test("object store URLs: parts, defaults and clear errors")
    func locations() throws {
        let location = try S3Location(parsing: "s3://crash-bucket/a/b?endpoint=http://127.0.0.1:8333/&region=eu-west-1")
        #expect(location == S3Location(bucket: "crash-bucket", prefix: "a/b/", endpoint: "http://127.0.0.1:8333", region: "eu-west-1"))
        #expect(try S3Location(parsing: "s3://bucket").endpoint == "https://s3.us-east-1.amazonaws.com")
        for (bad, words) in [("http://bucket", "starts with s3://"), ("s3://ab", "not a bucket name"), ("s3://Bucket", "not a bucket name"),
                             ("s3://bucket/a b", "key prefix"), ("s3://bucket?color=red", "unknown object store parameter"),
                             ("s3://bucket?endpoint=ftp://x", "endpoint"), ("s3://bucket?endpoint=http://h/path", "endpoint")] {
            #expect(throws: S3Error.self, "\(bad)") { _ = try S3Location(parsing: bad) }
            do { _ = try S3Location(parsing: bad) } catch { #expect(error.message.contains(words), "\(bad): \(error.message)") }
        }
        #expect(throws: S3Error.self) { _ = try S3Credentials.fromEnvironment([:]) }
    }

    @Test("XML answers: entities decoded, times read, truncated input gives no value")
    func xml() {
        let text: Substring = "<Contents><Key>a&amp;b&#34;</Key><LastModified>2026-11-26T18:23:34.000Z</LastModified></Contents><Key>unclosed"
        #expect(S3XML.values("Key", in: text).map(S3XML.decode) == ["a&b\""])
        #expect(S3XML.epochSeconds("2026-11-26T18:23:34.000Z") == 1_795_717_414)
        #expect(S3XML.epochSeconds("1970-01-01T00:00:00Z") == 0)
        #expect(S3XML.epochSeconds("2026-13-01T00:00:00Z") == nil)
        #expect(S3XML.epochSeconds("garbage") == nil)
    }
}
