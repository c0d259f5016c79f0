import ArgumentParser
import CrashsymCommandLine
import Symbolication
import SymServer
import Foundation
import Logging

extension Crashsym {
    /// `crashsym apps`: apps and keys of a server's data directory.
    struct Apps: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Manage the apps of a symbol server and their upload keys.",
            discussion: """
                Works on the data directory of `crashsym serve` (the server may be running). A key is \
                printed once, when created or rotated; the server keeps only its SHA-256.

                Example:
                  crashsym apps create demo --id demo --data-dir /var/lib/crashsym
                  crashsym apps list --data-dir /var/lib/crashsym
                  crashsym apps rotate-key demo --data-dir /var/lib/crashsym

                `list` and `rotate-key` refuse a directory that holds no store (a mistyped --data-dir); \
                `create` and `serve` create it.
                """,
            subcommands: [Create.self, List.self, RotateKey.self, Webhooks.self]
        )

        /// The store of the data directory; only `create` makes a new one (a mistyped `--data-dir`
        /// of `list` or `rotate-key` is an error, not an empty store).
        static func openStore(_ location: ServerLocationOptions, create: Bool = false) throws -> SymbolStore {
            let configuration: ServerConfiguration
            do {
                configuration = try location.configuration()
            } catch {
                throw ValidationError("\(error)")
            }
            do {
                let objects = try configuration.objectStorage.makeStore(dataDirectory: configuration.dataDirectory)
                return try SymbolStore(dataDirectory: configuration.dataDirectory, create: create, objects: objects)
            } catch {
                FileOutput.standardError("crashsym: \(error)\n")
                throw ExitCode.failure
            }
        }

        /// Runs `body` on the metadata store the options select: PostgreSQL with `--database`, else
        /// the SQLite store of the data directory (`create`: see `openStore`). A store error is
        /// printed and becomes exit status 1.
        static func withStore<T: Sendable>(_ location: ServerLocationOptions, create: Bool = false,
                                           _ body: @Sendable (any MetadataStore) async throws -> T) async throws -> T {
            let configuration: ServerConfiguration
            do {
                configuration = try location.configuration()
            } catch {
                throw ValidationError("\(error)")
            }
            if let database = configuration.database {
                do {
                    var logger = Logger(label: "crashsym.database")
                    logger.logLevel = .critical
                    return try await PostgresMetadataStore.with(
                        url: database, password: ProcessInfo.processInfo.environment["CRASHSYM_DATABASE_PASSWORD"], logger: logger, body)
                } catch {
                    throw fail(error)
                }
            }
            let store = CrashStore(symbols: try openStore(location, create: create))
            do {
                return try await body(store)
            } catch {
                throw fail(error)
            }
        }

        static func fail(_ error: any Error) -> ExitCode {
            let message = (error as? ServerError)?.message ?? (error as? StoreError)?.message ?? "\(error)"
            FileOutput.standardError("crashsym: \(message)\n")
            return ExitCode.failure
        }

        /// `crashsym apps create NAME`.
        struct Create: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Create an app and print its id and key (shown once).")

            @Argument(help: "Human-readable name of the app.")
            var name: String

            @Option(help: "App id (default: 16 random hex digits); [A-Za-z0-9._-], used in URLs and manifests.")
            var id: String?

            @Option(help: "Output format: text or json.")
            var format: OutputFormat = .text

            @OptionGroup var location: ServerLocationOptions

            func run() async throws {
                let (name, id) = (name, id)
                let (app, key) = try await Apps.withStore(location, create: true) { try await $0.createApp(name: name, id: id) }
                if format == .json {
                    var writer = JSONWriter()
                    writer.beginObject()
                    writer.field("id", app.id)
                    writer.field("name", app.name)
                    writer.field("key", key)
                    writer.field("created", app.created)
                    writer.endObject()
                    FileOutput.standardOutput(writer.text + "\n")
                } else {
                    FileOutput.standardOutput("app \(app.name) created\n  id:  \(app.id)\n  key: \(key)\n"
                        + "The key is shown only now: store it in your CI secrets (CRASHSYM_APP_KEY).\n")
                }
            }
        }

        /// `crashsym apps list`.
        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List the apps (never their keys).")

            @Option(help: "Output format: text or json.")
            var format: OutputFormat = .text

            @OptionGroup var location: ServerLocationOptions

            func run() async throws {
                let apps = try await Apps.withStore(location) { try await $0.listApps() }
                for app in apps {
                    if format == .json {
                        var writer = JSONWriter()
                        writer.beginObject()
                        writer.field("id", app.id)
                        writer.field("name", app.name)
                        writer.field("created", app.created)
                        writer.endObject()
                        FileOutput.standardOutput(writer.text + "\n")
                    } else {
                        FileOutput.standardOutput("\(app.id)  \(app.created)  \(app.name)\n")
                    }
                }
            }
        }

        /// `crashsym apps rotate-key ID`.
        struct RotateKey: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "rotate-key", abstract: "Replace an app's key and print the new one (shown once); the old key stops working.")

            @Argument(help: "The app id.")
            var id: String

            @Option(help: "Output format: text or json.")
            var format: OutputFormat = .text

            @OptionGroup var location: ServerLocationOptions

            func run() async throws {
                let id = id
                let key = try await Apps.withStore(location) { try await $0.rotateKey(appID: id) }
                if format == .json {
                    var writer = JSONWriter()
                    writer.beginObject()
                    writer.field("id", id)
                    writer.field("key", key)
                    writer.endObject()
                    FileOutput.standardOutput(writer.text + "\n")
                } else {
                    FileOutput.standardOutput("new key for app \(id): \(key)\nThe old key no longer works; the new one is shown only now.\n")
                }
            }
        }
    }
}
