import Foundation
import SymServer
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
}
