import ArgumentParser
import CrashsymCommandLine
import Symbolication
#if canImport(Glibc)
import Glibc
#endif

/// The crashsym command-line tool.
@main
struct Crashsym: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "crashsym",
        abstract: "Crash symbolication and debug-symbol tables for native code on Linux.",
        discussion: """
            Exit status: 0 success, 1 failure (some input could not be processed), 2 usage error.
            """,
        subcommands: [Dump.self, Lookup.self, Symbolicate.self, Addr2line.self, LLVMSymbolizer.self,
                      NetworkCommand.Upload.self, NetworkCommand.Serve.self, NetworkCommand.Apps.self]
    )

    /// The tool's version. Not given to ArgumentParser, which would take `upload --version 1.4.2` for
    /// a request to print it; `crashsym --version` is answered in `main()`.
    static let version = CrashsymVersion.current

    /// Runs the tool with crashsym's exit codes: usage errors exit 2 (ArgumentParser uses 64).
    static func main() async {
        if Array(CommandLine.arguments.dropFirst()) == ["--version"] {
            FileOutput.standardOutput(version + "\n")
            Glibc.exit(0)
        }
        // Drop-in mode: run through a link named llvm-symbolizer or addr2line, act as that tool.
        let program = CommandLine.arguments.first ?? ""
        switch program.split(separator: "/").last.map(String.init) ?? "" {
        case "llvm-symbolizer":
            Glibc.exit(LLVMSymbolizer.serve(arguments: Array(CommandLine.arguments.dropFirst()), programName: program))
        case "addr2line":
            await run(Addr2line.self, arguments: Array(CommandLine.arguments.dropFirst()))
        default:
            NetworkCommand.handOver(Array(CommandLine.arguments.dropFirst()))
            if let command = quickParse(Array(CommandLine.arguments.dropFirst())) {
                await execute(command, root: Crashsym.self)
            }
            await run(Crashsym.self, arguments: nil)
        }
    }

    /// The one-shot commands whose start-up time matters (a single lookup, one crash report).
    private static let quickCommands: [String: any ParsableCommand.Type] = [
        "lookup": Lookup.self, "symbolicate": Symbolicate.self, "addr2line": Addr2line.self,
    ]

    /// `arguments` parsed by the named subcommand alone, or nil to take the ordinary path.
    ///
    /// Parsing through the root builds every subcommand's arguments, and each first check of a type
    /// against a protocol scans all of the binary's ~9,000 conformance records (the server brings
    /// NIO, Hummingbird, GRDB and Foundation): 27 M instructions, a third of a one-address `lookup`.
    /// Help and any parse error go the ordinary way, so usage text and messages are unchanged.
    private static func quickParse(_ arguments: [String]) -> (any ParsableCommand)? {
        guard let name = arguments.first, let command = quickCommands[name],
              !arguments.contains(where: { $0 == "-h" || $0 == "--help" || $0 == "help" || $0 == "--experimental-dump-help" })
        else { return nil }
        return try? command.parseAsRoot(Array(arguments.dropFirst()))
    }

    /// Parses and runs `root` (with the process arguments when `arguments` is nil), then exits.
    private static func run<Root: ParsableCommand>(_ root: Root.Type, arguments: [String]?) async -> Never {
        let command: any ParsableCommand
        do {
            command = try root.parseAsRoot(arguments)
        } catch {
            exit(root, error)
        }
        await execute(command, root: root)
    }

    /// Runs a parsed command and exits with crashsym's exit codes.
    private static func execute<Root: ParsableCommand>(_ parsed: any ParsableCommand, root: Root.Type) async -> Never {
        do {
            var command = parsed
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            Glibc.exit(0)
        } catch {
            exit(root, error)
        }
    }

    /// Prints `error` as `root` formats it and exits: usage errors 2, others their own code.
    private static func exit<Root: ParsableCommand>(_ root: Root.Type, _ error: any Error) -> Never {
        let code = root.exitCode(for: error)
        let message = root.fullMessage(for: error)
        if code == .validationFailure {
            if !message.isEmpty { FileOutput.standardError(message + "\n") }
            Glibc.exit(2)
        }
        if code != .success && !message.isEmpty { FileOutput.standardError(message + "\n") }
        if code == .success && !message.isEmpty { print(message) }
        Glibc.exit(code.rawValue)
    }
}
