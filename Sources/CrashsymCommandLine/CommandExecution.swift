import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif

/// Runs parsed commands and exits with crashsym's exit codes (0 success, 1 failure, 2 usage),
/// for both executables: ArgumentParser's own code for usage errors is 64.
public enum CommandExecution {
    /// Parses `arguments` (the process's when nil) with `root`, runs the command, exits.
    public static func run<Root: ParsableCommand>(_ root: Root.Type, arguments: [String]? = nil) async -> Never {
        await execute(parse(root, arguments), root: root)
    }

    /// `run(_:arguments:)` for a tool none of whose commands is async (`crashsym`): the process
    /// then never starts the concurrency runtime, whose async `main` parks the main thread and
    /// hands the work to a new one (about half a millisecond of a one-address `lookup`).
    public static func runSynchronously<Root: ParsableCommand>(_ root: Root.Type, arguments: [String]? = nil) -> Never {
        executeSynchronously(parse(root, arguments), root: root)
    }

    /// Runs a parsed command (async or not) and exits; errors are printed as `root` formats them.
    public static func execute<Root: ParsableCommand>(_ parsed: any ParsableCommand, root: Root.Type) async -> Never {
        guard var asyncCommand = parsed as? AsyncParsableCommand else { executeSynchronously(parsed, root: root) }
        do {
            try await asyncCommand.run()
            Glibc.exit(0)
        } catch {
            exit(root, error)
        }
    }

    /// Runs a parsed command that is not async and exits; errors are printed as `root` formats them.
    public static func executeSynchronously<Root: ParsableCommand>(_ parsed: any ParsableCommand, root: Root.Type) -> Never {
        do {
            var command = parsed
            try command.run()
            Glibc.exit(0)
        } catch {
            exit(root, error)
        }
    }

    /// `arguments` (the process's when nil) parsed with `root`; a parse error exits.
    private static func parse<Root: ParsableCommand>(_ root: Root.Type, _ arguments: [String]?) -> any ParsableCommand {
        do {
            return try root.parseAsRoot(arguments)
        } catch {
            exit(root, error)
        }
    }

    /// Prints `error` as `root` formats it and exits: usage errors 2, others their own code.
    public static func exit<Root: ParsableCommand>(_ root: Root.Type, _ error: any Error) -> Never {
        let code = root.exitCode(for: error)
        let message = root.fullMessage(for: error)
        if code == .validationFailure {
            if !message.isEmpty { FileOutput.standardError(message + "\n") }
            Glibc.exit(2)
        }
        if code != .success && !message.isEmpty { FileOutput.standardError(message + "\n") }
        if code == .success && !message.isEmpty { FileOutput.standardOutput(message + "\n") }
        Glibc.exit(code.rawValue)
    }

    /// Answers a lone `--version` (not given to ArgumentParser, which would take `upload --version
    /// 1.4.2` for a request to print it); returns otherwise.
    public static func answerVersion(_ arguments: [String]) {
        guard arguments == ["--version"] else { return }
        FileOutput.standardOutput(CrashsymVersion.current + "\n")
        Glibc.exit(0)
    }
}
