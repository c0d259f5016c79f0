import ArgumentParser
import CrashsymCommandLine
import Symbolication
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
        subcommands: [Dump.self, Lookup.self, Symbolicate.self, Addr2line.self, LLVMSymbolizer.self, Demangle.self,
                      NetworkCommand.Upload.self, NetworkCommand.UploadMinidump.self, NetworkCommand.Serve.self, NetworkCommand.Apps.self, NetworkCommand.Users.self, NetworkCommand.Migrate.self, NetworkCommand.Agent.self]
    )

    /// Runs the tool with crashsym's exit codes: usage errors exit 2 (ArgumentParser uses 64).
    static func main() {
        CommandExecution.answerVersion(Array(CommandLine.arguments.dropFirst()))
        // Drop-in mode: run through a link named llvm-symbolizer or addr2line, act as that tool.
        let program = CommandLine.arguments.first ?? ""
        switch program.split(separator: "/").last.map(String.init) ?? "" {
        case "llvm-symbolizer":
            Glibc.exit(LLVMSymbolizer.serve(arguments: Array(CommandLine.arguments.dropFirst()), programName: program))
        case "addr2line":
            CommandExecution.runSynchronously(Addr2line.self, arguments: Array(CommandLine.arguments.dropFirst()))
        default:
            NetworkCommand.handOver(Array(CommandLine.arguments.dropFirst()))
            if let command = quickParse(Array(CommandLine.arguments.dropFirst())) {
                CommandExecution.executeSynchronously(command, root: Crashsym.self)
            }
            CommandExecution.runSynchronously(Crashsym.self)
        }
    }

    /// The one-shot commands whose start-up time matters (a single lookup, one crash report).
    private static let quickCommands: [String: any ParsableCommand.Type] = [
        "lookup": Lookup.self, "symbolicate": Symbolicate.self, "addr2line": Addr2line.self, "demangle": Demangle.self,
    ]

    /// `arguments` parsed by the named subcommand alone, or nil to take the ordinary path.
    ///
    /// Parsing through the root builds every subcommand's arguments, and each first check of a type
    /// against a protocol scans all of the binary's conformance records (measured with the network
    /// stack still linked in: 40 M → 25 M instructions for a one-address `lookup`). Help and any
    /// parse error go the ordinary way, so usage text and messages are unchanged.
    ///
    /// Lookup and Symbolicate name `crashsym` as their `_superCommandName`, which ArgumentParser
    /// reads only from the root command, that is only here (the ordinary path's root is
    /// `Crashsym`): a command with one is spared the `--generate-completion-script` check, which
    /// parses two more commands' arguments (about 15% of a one-address lookup's samples). Addr2line
    /// has none: as the root of the drop-in `addr2line`, its usage must not read `crashsym addr2line`.
    private static func quickParse(_ arguments: [String]) -> (any ParsableCommand)? {
        guard let name = arguments.first, let command = quickCommands[name],
              !arguments.contains(where: { $0 == "-h" || $0 == "--help" || $0 == "help" || $0 == "--experimental-dump-help" })
        else { return nil }
        return try? command.parseAsRoot(Array(arguments.dropFirst()))
    }
}
