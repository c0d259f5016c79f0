import ArgumentParser
import CrashsymCommandLine

/// `crashsym-agent`: the collector daemon (`crashsym agent`, docs/agent.md) alone. `crashsym` runs
/// it in its own place for `agent`; see Sources/crashsym/NetworkCommand.swift.
///
/// A daemon on every host of an app should cost the host little: this executable links the agent,
/// the symbolication engine and libcurl (loaded on first use), not `crashsym-net`'s server
/// (SwiftNIO, Hummingbird, GRDB, the console's templates and bcrypt), whose libraries and
/// conformance records made the agent's resident memory.
@main
struct Crashsym: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "crashsym",
        abstract: "crashsym's collector agent.",
        discussion: """
            Run through `crashsym agent`. Exit status: 0 success, 1 failure, 2 usage error.
            """,
        subcommands: [Agent.self]
    )

    static func main() async {
        CommandExecution.answerVersion(Array(CommandLine.arguments.dropFirst()))
        await CommandExecution.run(Crashsym.self)
    }
}
