import ArgumentParser
import Foundation
import CrashsymCommandLine
import SymServer
import Symbolication

extension Crashsym {
    /// `crashsym users`: the people who sign in to the web console.
    struct Users: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Manage the web console's accounts and which apps they see.",
            discussion: """
                Works on the data directory of `crashsym serve` (the server may be running). A password \
                is generated and printed once, when the account is created or its password reset; the \
                server keeps only its bcrypt hash. An admin sees every app; anyone else sees the apps \
                granted to them. Five wrong passwords in a row lock a name for 15 minutes; \
                `reset-password` lifts the lock and signs the person out everywhere.

                Example:
                  crashsym users create alice --admin --data-dir /var/lib/crashsym
                  crashsym users create bob --data-dir /var/lib/crashsym
                  crashsym users grant bob demo --data-dir /var/lib/crashsym
                  crashsym users list --data-dir /var/lib/crashsym
                  crashsym users reset-password bob --data-dir /var/lib/crashsym
                """,
            subcommands: [Create.self, Grant.self, List.self, ResetPassword.self]
        )

        static func printPassword(name: String, password: String, format: OutputFormat, verb: String) {
            if format == .json {
                var writer = JSONWriter()
                writer.beginObject()
                writer.field("name", name)
                writer.field("password", password)
                writer.endObject()
                FileOutput.standardOutput(writer.text + "\n")
            } else {
                FileOutput.standardOutput("user \(name) \(verb)\n  password: \(password)\n"
                    + "The password is shown only now: give it to \(name) over a private channel.\n")
            }
        }

        /// `crashsym users create NAME [--admin]`.
        struct Create: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Create an account and print its password (shown once).")

            @Argument(help: "The name to sign in with: 1 to 64 characters of [A-Za-z0-9._@-].")
            var name: String

            @Flag(help: "An admin sees every app.")
            var admin = false

            @Option(help: "Output format: text or json ({\"name\": …, \"password\": …}).")
            var format: OutputFormat = .text

            @OptionGroup var location: ServerLocationOptions

            func validate() throws {
                guard CrashStore.isUserName(name) else { throw ValidationError("a user name is 1 to 64 characters of [A-Za-z0-9._@-]") }
            }

            func run() async throws {
                let (name, admin) = (name, admin)
                let password = try await Apps.withStore(location, create: true) { try await $0.createUser(name: name, admin: admin) }
                Users.printPassword(name: name, password: password, format: format, verb: admin ? "created (admin)" : "created")
            }
        }

        /// `crashsym users grant NAME APP`.
        struct Grant: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Let a user see an app's crashes, groups and symbols.")

            @Argument(help: "The user's name.")
            var name: String

            @Argument(help: "The app id.")
            var app: String

            @OptionGroup var location: ServerLocationOptions

            func run() async throws {
                let (name, app) = (name, app)
                try await Apps.withStore(location) { try await $0.grant(name: name, appID: app) }
                FileOutput.standardOutput("\(name) may now see app \(app)\n")
            }
        }

        /// `crashsym users list`.
        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List the accounts and their apps (never passwords).")

            @Option(help: "Output format: text or json (one object per line).")
            var format: OutputFormat = .text

            @OptionGroup var location: ServerLocationOptions

            func run() async throws {
                let users = try await Apps.withStore(location) { try await $0.listUsers() }
                for user in users {
                    if format == .json {
                        let encoder = JSONEncoder()
                        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                        FileOutput.standardOutput(String(decoding: (try? encoder.encode(user)) ?? Data(), as: UTF8.self) + "\n")
                    } else {
                        let apps = user.admin ? "all apps" : user.apps.isEmpty ? "no app" : user.apps.joined(separator: ", ")
                        FileOutput.standardOutput("\(user.name)\(user.admin ? " (admin)" : "")  \(apps)\n")
                    }
                }
            }
        }

        /// `crashsym users reset-password NAME`.
        struct ResetPassword: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "reset-password",
                abstract: "Give a user a new password (shown once), sign them out everywhere and lift a lockout.")

            @Argument(help: "The user's name.")
            var name: String

            @Option(help: "Output format: text or json ({\"name\": …, \"password\": …}).")
            var format: OutputFormat = .text

            @OptionGroup var location: ServerLocationOptions

            func run() async throws {
                let name = name
                let password = try await Apps.withStore(location) { try await $0.resetPassword(name: name) }
                Users.printPassword(name: name, password: password, format: format, verb: "has a new password")
            }
        }
    }
}
