import Foundation
import Logging
import Synchronization
import SymHTTP
import Testing
@testable import SymClient
import SymBundle
import TestSupport

/// The client against a real HTTP server on 127.0.0.1 (`Tests/Support/fake_symbol_server.py`):
/// request shapes, retries (503/429 with Retry-After, connection refused), the deadline, errors.
@Suite struct SymbolClientTests {
    static let key = "s3cr3t-app-key-do-not-print"

    static func client(_ server: FakeSymbolServer, retry: RetryPolicy = RetryPolicy(initialDelay: .milliseconds(200)),
                       deadline: Duration = .seconds(60), key: String = key,
                       sleep: @escaping @Sendable (Duration) -> Void = ClientConfiguration.threadSleep) throws -> SymbolClient {
        try client(url: server.url, retry: retry, deadline: deadline, key: key, sleep: sleep)
    }

    static func client(url: String, retry: RetryPolicy = RetryPolicy(initialDelay: .milliseconds(200)),
                       deadline: Duration = .seconds(60), key: String = key,
                       sleep: @escaping @Sendable (Duration) -> Void = ClientConfiguration.threadSleep) throws -> SymbolClient {
        try SymbolClient(configuration: ClientConfiguration(
            server: url, appID: "demo app", appKey: key, userAgent: "crashsym-tests", retry: retry,
            deadline: .now + deadline, sleep: sleep), logger: Logger(label: "test"))
    }

    static let request = MissingSymbolsRequest(version: "1.4.2", package: "com.example.app", platform: "linux", modules: [
        .init(buildID: "aa11", name: "libfoo.so", arch: "x86_64"),
        .init(buildID: "bb22", name: "app", arch: "x86_64"),
    ])

    @Test func missingSendsTheDocumentedRequestAndReadsTheAnswer() throws {
        let server = try FakeSymbolServer(script: ["present": ["bb22"], "key": Self.key])
        let answer = try Self.client(server).missingSymbols(Self.request)
        #expect(answer == MissingSymbolsResponse(missing: ["aa11"], present: ["bb22"]))
        let requests = server.requests()
        try #require(requests.count == 1)
        let seen = requests[0]
        #expect(seen.path == "/api/v1/apps/demo%20app/symbols/missing")
        #expect(seen.headers["authorization"] == "Bearer \(Self.key)")
        #expect(seen.headers["content-type"] == "application/json")
        #expect(seen.headers["user-agent"] == "crashsym-tests")
        let json = try #require(seen.json)
        #expect(json["version"] as? String == "1.4.2")
        #expect(json["package"] as? String == "com.example.app")
        #expect(json["platform"] as? String == "linux")
        let modules = try #require(json["modules"] as? [[String: String]])
        #expect(modules == [["build_id": "aa11", "name": "libfoo.so", "arch": "x86_64"],
                            ["build_id": "bb22", "name": "app", "arch": "x86_64"]])
    }

    @Test func retriesA503HonouringRetryAfter() throws {
        let server = try FakeSymbolServer(script: ["missing": [["status": 503, "retry_after": "1"],
                                                               ["status": 503, "retry_after": "1"]]])
        let answer = try Self.client(server).missingSymbols(Self.request)
        #expect(answer.missing == ["aa11", "bb22"])
        let requests = server.requests()
        try #require(requests.count == 3)
        #expect(requests[0].scripted && requests[1].scripted && !requests[2].scripted)
        // The backoff alone would have waited 0.1–0.4 s: the gaps show Retry-After was followed.
        #expect(requests[1].time - requests[0].time >= 0.95)
        #expect(requests[2].time - requests[1].time >= 0.95)
    }

    @Test func retriesA429UploadWithRetryAfterAndSendsTheWholeBodyAgain() throws {
        let directory = NSTemporaryDirectory() + "crashsym-client-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let body = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7919) })
        try body.write(to: URL(fileURLWithPath: directory + "/body.zip"))
        let answer201: [String: Any] = ["version": "1", "stored": ["aa11"], "already_present": []]
        let server = try FakeSymbolServer(script: ["upload": [["status": 429, "retry_after": "1"],
                                                              ["status": 201, "body": answer201]]])
        let answer = try Self.client(server).uploadBundle(at: directory + "/body.zip")
        #expect(answer == UploadResponse(version: "1", stored: ["aa11"], alreadyPresent: []))
        let requests = server.requests()
        try #require(requests.count == 2)
        #expect(requests[1].time - requests[0].time >= 0.95)
        let expected = try sha256sum(directory + "/body.zip")
        for request in requests {
            #expect(request.bodySize == body.count)
            #expect(request.bodySHA256 == expected)
            #expect(request.headers["content-type"] == "application/zip")
            #expect(request.path == "/api/v1/apps/demo%20app/symbols")
        }
    }

    @Test func backsOffExponentiallyWithoutRetryAfter() throws {
        let server = try FakeSymbolServer(script: ["missing": [["status": 500], ["status": 502], ["status": 504]]])
        let waits = Mutex<[Duration]>([])
        let client = try Self.client(server, retry: RetryPolicy(maxAttempts: 4, initialDelay: .milliseconds(40)),
                                     sleep: { duration in waits.withLock { $0.append(duration) } })
        _ = try client.missingSymbols(Self.request)
        let recorded = waits.withLock { $0 }
        try #require(recorded.count == 3)
        for (index, wait) in recorded.enumerated() {
            let ceiling = Duration.milliseconds(40) * (1 << index)
            #expect(wait >= ceiling / 2 && wait <= ceiling, "wait \(index): \(wait)")
        }
        #expect(server.requests().count == 4)
    }

    @Test func givesUpAfterMaxAttemptsWithTheLastAnswer() throws {
        let failures = Array(repeating: ["status": 503, "body": ["error": ["code": "internal", "message": "disk full"]]] as [String: Any], count: 5)
        let server = try FakeSymbolServer(script: ["missing": failures])
        let client = try Self.client(server, retry: RetryPolicy(maxAttempts: 3, initialDelay: .milliseconds(10)))
        let error = try #require(throws: ClientError.self) { try client.missingSymbols(Self.request) }
        #expect(error.code == .http)
        #expect(error.status == 503)
        #expect(error.serverCode == "internal")
        #expect(error.message == "disk full")
        #expect(error.attempts == 3)
        #expect(server.requests().count == 3)
    }

    @Test func doesNotRetryAWrongKeyAndNeverPrintsIt() throws {
        let server = try FakeSymbolServer(script: ["key": "the-right-key"])
        let client = try Self.client(server)
        let error = try #require(throws: ClientError.self) { try client.missingSymbols(Self.request) }
        #expect(error.status == 401)
        #expect(error.serverCode == "unauthorized")
        #expect(error.attempts == 1)
        #expect(server.requests().count == 1)
        #expect(!error.description.contains(Self.key))
        #expect(!String(describing: error).contains(Self.key))
    }

    @Test func aBodyOverOneMiBIsSentWithoutExpect100Continue() throws {
        // libcurl adds `Expect: 100-continue` above 1 MiB by default; crashsym serve never answers
        // it, so every upload would first wait for libcurl's timeout.
        let directory = NSTemporaryDirectory() + "crashsym-expect-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/bundle.zip"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: 7, count: 3 << 20)))
        let answer: [String: Any] = ["version": "1", "stored": [], "already_present": []]
        let server = try FakeSymbolServer(script: ["upload": [["status": 201, "body": answer]]])
        _ = try Self.client(server).uploadBundle(at: path)
        let received = try #require(server.requests().first)
        #expect(received.bodySize == 3 << 20)
        #expect(received.headers["expect"] == nil, "\(received.headers)")
    }

    @Test func retriesConnectionRefusedUntilTheServerListens() throws {
        // Bound but not listening for 1.5 s: connections are refused, as while a server restarts.
        let server = try FakeSymbolServer(listenAfter: 1.5)
        let waits = Mutex(0)
        let answer = try Self.client(server, retry: RetryPolicy(maxAttempts: 20, initialDelay: .milliseconds(300),
                                                                maximumDelay: .milliseconds(600)),
                                     sleep: { duration in
                                         waits.withLock { $0 += 1 }
                                         ClientConfiguration.threadSleep(duration)
                                     })
            .missingSymbols(Self.request)
        #expect(answer.missing.count == 2)
        #expect(waits.withLock { $0 } >= 1)  // refused at least once, then retried
        #expect(server.requests().count == 1)
    }

    @Test func connectionRefusedForGoodIsAConnectionError() throws {
        let server = try FakeSymbolServer(listenAfter: 3600)
        let client = try Self.client(server, retry: RetryPolicy(maxAttempts: 3, initialDelay: .milliseconds(10)))
        let error = try #require(throws: ClientError.self) { try client.missingSymbols(Self.request) }
        #expect(error.code == .connection)
        #expect(error.attempts == 3)
        #expect(error.status == nil)
    }

    @Test func aServerThatDropsTheConnectionIsRetried() throws {
        let server = try FakeSymbolServer(script: ["missing": [["close": true]]])
        let answer = try Self.client(server).missingSymbols(Self.request)
        #expect(answer.missing.count == 2)
        #expect(server.requests().count == 2)
    }

    @Test func theDeadlineStopsAHungRequest() throws {
        let server = try FakeSymbolServer(script: ["missing": [["hang": 30]]])
        let started = ContinuousClock.now
        let client = try Self.client(server, deadline: .seconds(2))
        let error = try #require(throws: ClientError.self) { try client.missingSymbols(Self.request) }
        let elapsed = ContinuousClock.now - started
        #expect(error.code == .deadline)
        #expect(elapsed >= .milliseconds(1900) && elapsed < .seconds(25), "\(elapsed)")
    }

    @Test func aRetryAfterBeyondTheDeadlineFailsAtOnce() throws {
        let server = try FakeSymbolServer(script: ["missing": [["status": 503, "retry_after": "120"]]])
        let started = ContinuousClock.now
        let client = try Self.client(server, deadline: .seconds(30))
        let error = try #require(throws: ClientError.self) { try client.missingSymbols(Self.request) }
        #expect(error.status == 503)
        #expect(error.message.contains("deadline"))
        #expect(ContinuousClock.now - started < .seconds(25))
    }

    @Test func aNonJSONSuccessIsAnInvalidResponse() throws {
        let server = try FakeSymbolServer(script: ["missing": [["status": 200, "body": ["unexpected": true]]]])
        let error = try #require(throws: ClientError.self) { try Self.client(server).missingSymbols(Self.request) }
        #expect(error.code == .invalidResponse)
    }

    @Test func aMissingBundleFileIsAnIOErrorWithoutARequest() throws {
        let server = try FakeSymbolServer()
        let error = try #require(throws: ClientError.self) {
            try Self.client(server).uploadBundle(at: "/nonexistent/bundle.zip")
        }
        #expect(error.code == .io)
        #expect(error.message.contains("/nonexistent/bundle.zip"))
        #expect(server.requests().isEmpty)
    }

    @Test("bad settings are refused", arguments: ["ftp://example.com", "127.0.0.1:8080", ""])
    func badServerURL(url: String) throws {
        #expect(throws: ClientError.self) { try Self.client(url: url) }
    }

    @Test func anEmptyKeyIsRefused() throws {
        let error = try #require(throws: ClientError.self) { try Self.client(url: "http://127.0.0.1:1", key: "") }
        #expect(error.code == .configuration)
    }
}

/// `sha256sum` of a file: the oracle for bodies the server received.
func sha256sum(_ path: String) throws -> String {
    let data = try Tool.data("/usr/bin/sha256sum", [path])
    return String(String(decoding: data, as: UTF8.self).prefix(64))
}
