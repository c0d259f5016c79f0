import Foundation
@testable import SymServer
import SymHTTP
import Testing

/// The notification settings resolve like the server's; URLs of webhooks are checked by one function.
struct WebhookConfigurationTests {
    @Test("flag over environment over config file over default; bad values name the setting")
    func precedence() throws {
        let directory = try Binary.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/serve.json"
        try #"{"spike-factor": 3, "spike-min": "7", "public-url": "https://file.example", "webhook-timeout": 2}"#
            .write(toFile: file, atomically: true, encoding: .utf8)
        let resolved = try WebhookConfiguration.resolve(
            flags: ["spike-min": "9"], environment: ["CRASHSYM_PUBLIC_URL": "https://env.example/crashsym"], configFile: file)
        #expect(resolved.spikeFactor == 3)
        #expect(resolved.spikeMinimum == 9)
        #expect(resolved.publicURL == "https://env.example/crashsym")
        #expect(resolved.timeout == 2)
        #expect(resolved.retryBase == 10 && resolved.retryHours == 24 && resolved.concurrency == 4 && !resolved.allowPrivate)
        // The server's own resolver accepts the webhook settings in the same file.
        #expect(try ServerConfiguration.resolve(flags: [:], environment: [:], configFile: file).port == 8080)
        for (name, value) in [("spike-factor", "0.5"), ("spike-min", "none"), ("public-url", "ftp://x"), ("webhook-allow-private", "maybe"),
                              ("webhook-concurrency", "0")] {
            #expect(throws: ConfigurationError.self, "\(name)=\(value)") {
                try WebhookConfiguration.resolve(flags: [name: value], environment: [:])
            }
        }
        #expect(try WebhookConfiguration.resolve(flags: ["webhook-allow-private": "true"], environment: [:]).allowPrivate)
    }

    @Test("webhook URLs: http and https only; link-local, metadata and (unless allowed) private addresses refused; loopback allowed",
          arguments: [
              ("http://127.0.0.1:8080/hook", false, true),
              ("https://[::1]/hook", false, true),
              ("http://localhost/hook", false, true),
              ("http://10.0.0.5/hook", false, false),
              ("http://10.0.0.5/hook", true, true),
              ("http://192.168.1.1/", false, false),
              ("http://172.20.0.1/", false, false),
              ("http://172.32.0.1/", false, true),
              ("http://[fc00::1]/", false, false),
              ("http://169.254.169.254/latest/meta-data", true, false),
              ("http://[fe80::1]/", true, false),
              ("http://[fd00:ec2::254]/", true, false),
              ("http://[::ffff:169.254.169.254]/", true, false),
              ("file:///etc/passwd", true, false),
              ("gopher://127.0.0.1/", true, false),
              ("http:///nohost", true, false),
          ])
    func addresses(url: String, allowPrivate: Bool, accepted: Bool) {
        let result = Result { try WebhookAddress.check(url, allowPrivate: allowPrivate) }
        let ok = (try? result.get()) != nil
        #expect(ok == accepted, "\(url) allowPrivate=\(allowPrivate): \(result)")
    }

    @Test("the resolve entry names host, port and every checked address; IPv6 in brackets")
    func pinEntries() {
        let v4 = WebhookAddress.Address(bytes: [127, 0, 0, 1], text: "127.0.0.1")
        let v6 = WebhookAddress.Address(bytes: Array(repeating: 0, count: 15) + [1], text: "::1")
        #expect(WebhookAddress.pin(host: "hooks.example", port: 8443, addresses: [v4, v6]) == "hooks.example:8443:127.0.0.1,[::1]")
        #expect(WebhookAddress.pin(host: "[::1]", port: 80, addresses: [v6]) == "[::1]:80:[::1]")
        #expect(WebhookAddress.vet(host: "169.254.169.254", allowPrivate: true) ==
                .refused("169.254.169.254 is a link-local or cloud metadata address (169.254.169.254): refused"))
        #expect(WebhookAddress.vet(host: "127.0.0.1", allowPrivate: false) == .allowed([v4]))
    }

    @Test("a pinned request connects to the pinned address, not to what the name resolves to")
    func pinnedRequestsConnectThere() throws {
        let server = try TestServer()
        // `.invalid` never resolves (RFC 6761): only the pin can lead libcurl to the server.
        let host = "pinned.crashsym.invalid"
        var request = HTTPRequest(.get, url: "http://\(host):\(server.port)/healthz")
        let transfer = try CurlTransfer()
        func send() -> Result<HTTPResponse, TransferFailure> {
            transfer.perform(request, userAgent: "test", timeout: .seconds(10), connectTimeout: .seconds(5), stallTimeout: .seconds(10))
        }
        guard case .failure = send() else { Issue.record("\(host) resolved without a pin"); return }
        let loopback = WebhookAddress.Address(bytes: [127, 0, 0, 1], text: "127.0.0.1")
        request.pinnedAddresses = [WebhookAddress.pin(host: host, port: server.port, addresses: [loopback])]
        let pinned = try send().get()
        #expect(pinned.status == 200)
    }
}
