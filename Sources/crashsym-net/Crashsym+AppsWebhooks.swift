import ArgumentParser
import Foundation
import CrashsymCommandLine
import Symbolication
import SymServer

extension Webhook.Format: ExpressibleByArgument {}

extension Crashsym.Apps {
    /// `crashsym apps webhooks`: an app's notification receivers.
    struct Webhooks: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Manage the webhooks an app's group notifications are posted to (docs/webhooks.md).",
            discussion: """
                Events: new-group (the first crash of a group), regression (a resolved group crashes in a \
                newer version), spike (a group's last hour reaches --spike-factor times its hourly average \
                and at least --spike-min crashes; see `crashsym serve --help`). A running server picks up \
                changes at once. Secrets are stored to sign deliveries and never printed.

                Example:
                  crashsym apps webhooks add demo https://hooks.example.com/crashsym --secret-file /etc/crashsym/hook.secret --data-dir /var/lib/crashsym
                  crashsym apps webhooks add demo https://hooks.slack.com/services/T/B/X --events new-group,regression --format slack
                  crashsym apps webhooks list demo
                  crashsym apps webhooks remove demo 3f2a9c0d1e4b5a67
                """,
            subcommands: [Add.self, List.self, Remove.self]
        )

        /// `crashsym apps webhooks add APP URL`.
        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Add a webhook to an app and print its id.")

            @Argument(help: "The app id.")
            var app: String

            @Argument(help: "Where to POST notifications: an http or https URL.")
            var url: String

            @Option(help: ArgumentHelp("Comma-separated events: new-group, regression, spike (default: all).", valueName: "list"))
            var events: String?

            @Option(help: "Secret that keys the X-Crashsym-Signature HMAC-SHA256 of each body (never printed back). Visible to other users in the process list: prefer --secret-file.")
            var secret: String?

            @Option(help: ArgumentHelp("Read the secret from this file (its first line; - for standard input).", valueName: "path"))
            var secretFile: String?

            @Option(help: "Body of each delivery: json (the event object of docs/webhooks.md) or slack ({\"text\": …}).")
            var format: Webhook.Format = .json

            @Flag(name: .customLong("allow-private"), help: "Accept a URL whose host is a private address (10/8, 172.16/12, 192.168/16, fc00::/7).")
            var allowPrivate = false

            @OptionGroup var location: ServerLocationOptions

            func validate() throws {
                if secret != nil && secretFile != nil { throw ValidationError("give --secret or --secret-file, not both") }
            }

            /// The secret's first line from `path` (`-`: standard input), at most 4 KiB.
            static func readSecret(_ path: String) throws -> String {
                let handle = path == "-" ? FileHandle.standardInput : FileHandle(forReadingAtPath: path)
                guard let handle else { throw ValidationError("--secret-file \(path): cannot open it") }
                let data = try handle.read(upToCount: 4097) ?? Data()
                guard data.count <= 4096 else { throw ValidationError("--secret-file \(path): longer than 4 KiB; a secret is one line") }
                let line = String(decoding: data, as: UTF8.self).split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                let secret = line.hasSuffix("\r") ? String(line.dropLast()) : String(line)
                guard !secret.isEmpty else { throw ValidationError("--secret-file \(path): the first line is empty") }
                return secret
            }

            func run() async throws {
                let new: Webhook.New
                let secret = try secretFile.map(Self.readSecret) ?? self.secret
                do {
                    let events = try events.map(Webhook.events) ?? []
                    new = try Webhook.New(appID: app, url: url, events: events, secret: secret, format: format)
                        .validated(allowPrivate: allowPrivate)
                } catch let error as ServerError {
                    throw ValidationError(error.message)
                }
                let webhook = try await Crashsym.Apps.withStore(location) { try await $0.addWebhook(new) }
                FileOutput.standardOutput("webhook \(webhook.id) added to app \(app)\n")
            }
        }

        /// `crashsym apps webhooks list APP`.
        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List an app's webhooks (never their secrets).")

            @Argument(help: "The app id.")
            var app: String

            @Option(help: "Output format: text or json (one object per line).")
            var format: OutputFormat = .text

            @OptionGroup var location: ServerLocationOptions

            func run() async throws {
                let app = app
                let webhooks = try await Crashsym.Apps.withStore(location) { try await $0.webhooks(appID: app) }
                for webhook in webhooks {
                    if format == .json {
                        FileOutput.standardOutput(Webhooks.json(webhook) + "\n")
                    } else {
                        let events = webhook.events.map(\.rawValue).joined(separator: ",")
                        FileOutput.standardOutput("\(webhook.id)  \(webhook.format.rawValue)  \(events)  "
                            + "\(webhook.hasSecret ? "signed" : "unsigned")  \(webhook.url)\n")
                    }
                }
            }
        }

        /// `crashsym apps webhooks remove APP ID`.
        struct Remove: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Remove a webhook; its pending deliveries are dropped.")

            @Argument(help: "The app id.")
            var app: String

            @Argument(help: "The webhook id (from `list`).")
            var id: String

            @OptionGroup var location: ServerLocationOptions

            func run() async throws {
                let (app, id) = (app, id)
                try await Crashsym.Apps.withStore(location) { try await $0.removeWebhook(appID: app, id: id) }
                FileOutput.standardOutput("webhook \(id) removed\n")
            }
        }

        static func json(_ webhook: Webhook) -> String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return String(decoding: (try? encoder.encode(webhook)) ?? Data(), as: UTF8.self)
        }
    }
}

/// `crashsym serve`'s notification settings (docs/webhooks.md).
struct WebhookServeOptions: ParsableArguments {
    @Option(name: .customLong("spike-factor"), help: "A group spikes when its last hour reaches this many times its hourly average over the 7 days before (default 5) …")
    var spikeFactor: Double?

    @Option(name: .customLong("spike-min"), help: "… and at least this many crashes (default 20); at most one spike notice per group and hour.")
    var spikeMin: Int?

    @Option(name: .customLong("public-url"), help: ArgumentHelp("The server's address as people reach it (e.g. behind a TLS proxy): links in notifications (default: none); https:// makes the web console's cookies Secure.", valueName: "url"))
    var publicURL: String?

    @Flag(name: .customLong("webhook-allow-private"), help: "Let webhooks point at private addresses (10/8, 172.16/12, 192.168/16, fc00::/7); link-local and metadata addresses stay refused.")
    var webhookAllowPrivate = false

    @Option(name: .customLong("webhook-timeout"), help: "Seconds one delivery attempt may take (default 10; connecting at most 5).")
    var webhookTimeout: Double?

    @Option(name: .customLong("webhook-retry-base"), help: "Seconds before the first retry of a failed delivery; each next waits twice as long, with jitter, up to an hour (default 10).")
    var webhookRetryBase: Double?

    @Option(name: .customLong("webhook-retry-hours"), help: "Hours after which a delivery that keeps failing is given up (default 24).")
    var webhookRetryHours: Double?

    @Option(name: .customLong("webhook-concurrency"), help: "Webhooks delivered to at once (default 4); each gets its deliveries one at a time, in order.")
    var webhookConcurrency: Int?

    /// The settings given on the command line.
    var flags: [String: String] {
        var flags: [String: String] = [:]
        flags["spike-factor"] = spikeFactor.map { String($0) }
        flags["spike-min"] = spikeMin.map(String.init)
        flags["public-url"] = publicURL
        flags["webhook-allow-private"] = webhookAllowPrivate ? "true" : nil
        flags["webhook-timeout"] = webhookTimeout.map { String($0) }
        flags["webhook-retry-base"] = webhookRetryBase.map { String($0) }
        flags["webhook-retry-hours"] = webhookRetryHours.map { String($0) }
        flags["webhook-concurrency"] = webhookConcurrency.map(String.init)
        return flags
    }
}
