import ArgumentParser
import CrashsymCommandLine
#if canImport(Glibc)
import Glibc
#endif

/// `crashsym-net`: crashsym's network commands (`upload`, `serve`, `apps`). `crashsym` runs it in its
/// own place for them, so users type `crashsym upload …`; see Sources/crashsym/NetworkCommand.swift.
@main
struct Crashsym: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "crashsym",
        abstract: "crashsym's network commands: symbol upload, the symbol server and its apps.",
        discussion: """
            Run through `crashsym upload|serve|apps`. Exit status: 0 success, 1 failure, 2 usage error.
            """,
        subcommands: [Upload.self, Serve.self, Apps.self]
    )

    /// The tool's version (`upload --version` is the app's version, so not given to ArgumentParser).
    static let version = CrashsymVersion.current

    static func main() async {
        if Array(CommandLine.arguments.dropFirst()) == ["--version"] {
            FileOutput.standardOutput(version + "\n")
            Glibc.exit(0)
        }
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            Glibc.exit(0)
        } catch {
            let code = exitCode(for: error)
            let message = fullMessage(for: error)
            if code == .validationFailure {
                if !message.isEmpty { FileOutput.standardError(message + "\n") }
                Glibc.exit(2)
            }
            if code != .success && !message.isEmpty { FileOutput.standardError(message + "\n") }
            if code == .success && !message.isEmpty { print(message) }
            Glibc.exit(code.rawValue)
        }
    }
}
