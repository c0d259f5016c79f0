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
        version: "0.1.0",
        subcommands: [Dump.self, Lookup.self, Symbolicate.self]
    )

    /// Runs the tool with crashsym's exit codes: usage errors exit 2 (ArgumentParser uses 64).
    static func main() {
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
