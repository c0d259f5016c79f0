import ArgumentParser
import SymDemangle
import Symbolication

/// crashsym's version, printed by `crashsym --version` (both executables).
public enum CrashsymVersion {
    /// The version string.
    public static let current = "0.1.0"
}

/// Options shared by commands that read debug information.
public struct DebugOptions: ParsableArguments {
    @Option(name: .customLong("debug-dir"),
            help: ArgumentHelp("Directory searched for separate debug files: a .build-id/ tree or files named by .gnu_debuglink (repeatable; /usr/lib/debug is always searched last).",
                               valueName: "dir"))
    public var debugDirectories: [String] = []

    @Option(name: .customLong("debuginfod"),
            help: ArgumentHelp("debuginfod server asked by build-id for debug files that no local source has, before those of $DEBUGINFOD_URLS (repeatable). Downloads are cached as elfutils caches them ($DEBUGINFOD_CACHE_PATH, else ~/.cache/debuginfod_client); $DEBUGINFOD_TIMEOUT and $DEBUGINFOD_MAXSIZE are honoured.",
                               valueName: "url"))
    public var debuginfodServers: [String] = []

    @Option(help: "DWARF decoder: builtin (fast) or libdwarf.")
    public var decoder: DWARFDecoder = .builtin

    /// Creates the defaults.
    public init() {}

    /// The debug-file locator these options describe: the debug directories, then the debuginfod
    /// servers of `--debuginfod` and `$DEBUGINFOD_URLS`.
    public var locator: DebugFileLocator {
        var locator = DebugFileLocator(debugDirectories: debugDirectories)
        locator.debuginfod = DebuginfodProvider.Configuration.fromEnvironment(extraServers: debuginfodServers)
        if FileOutput.standardErrorIsTerminal {
            locator.debuginfod?.progress = { @Sendable line in FileOutput.standardError("crashsym: \(line)\n") }
        }
        return locator
    }
}

extension DWARFDecoder: ExpressibleByArgument {}

/// Output format of data-producing commands.
public enum OutputFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// Human-readable text.
    case text
    /// JSON.
    case json
}

/// How demangled names are spelled (`demangle`, `symbolicate`).
public struct NameOptions: ParsableArguments {
    @Option(name: .customLong("swift-names"),
            help: ArgumentHelp("Swift names: full (as swift-demangle prints them: [T], [K : V], T?) or simplified (the Swift backtracer's short form, Matrix.at(_:_:)).",
                               valueName: "style"))
    public var swiftNames: SwiftNameStyle = .full

    @Flag(name: .customLong("no-params"), help: "Function names without parameter lists (C++ as c++filt -p; Swift in the simplified form).")
    public var noParameters = false

    /// Creates the defaults.
    public init() {}

    /// The demangler these options describe.
    public var demangler: Demangler { Demangler(swiftNames: swiftNames, parameters: !noParameters) }
}

extension SwiftNameStyle: ExpressibleByArgument {}
