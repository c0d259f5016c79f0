import ArgumentParser
import CrashsymCommandLine

/// `crashsym-net`: crashsym's network commands (`upload`, `serve`, `apps`, `users`). `crashsym` runs it in its
/// own place for them, so users type `crashsym upload …`; see Sources/crashsym/NetworkCommand.swift.
@main
struct Crashsym: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "crashsym",
        abstract: "crashsym's network commands: symbol upload, the symbol server, its apps and users.",
        discussion: """
            Run through `crashsym upload|serve|apps|users`. Exit status: 0 success, 1 failure, 2 usage error.
            """,
        subcommands: [Upload.self, UploadMinidump.self, Serve.self, Apps.self, Users.self, Migrate.self]
    )

    static func main() async {
        CommandExecution.answerVersion(Array(CommandLine.arguments.dropFirst()))
        await CommandExecution.run(Crashsym.self)
    }
}
