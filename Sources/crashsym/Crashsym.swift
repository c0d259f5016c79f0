import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif

/// The crashsym command-line tool.
@main
struct Crashsym: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "crashsym",
        abstract: "Crash symbolication and debug-symbol tables for native code on Linux.",
        discussion: """
            Exit status: 0 success, 1 failure (some input could not be processed), 2 usage error.
            """,
        subcommands: [Dump.self, Lookup.self, Upload.self]
    )

    /// The tool's version. Not given to ArgumentParser, which would take `upload --version 1.4.2` for
    /// a request to print it; `crashsym --version` is answered in `main()`.
    static let version = "0.1.0"

    /// Runs the tool with crashsym's exit codes: usage errors exit 2 (ArgumentParser uses 64).
    static func main() {
        if Array(CommandLine.arguments.dropFirst()) == ["--version"] {
            FileOutput.standardOutput(version + "\n")
            Glibc.exit(0)
        }
        do {
            var command = try parseAsRoot()
            try command.run()
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
