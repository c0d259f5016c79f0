import ArgumentParser
import CrashsymCommandLine
#if canImport(Glibc)
import Glibc
#endif

/// `upload`, `serve`, `apps` and `users` live in a second executable, `crashsym-net`, and `agent` in
/// a third, `crashsym-agent` (a daemon on every app host, without the server's libraries), both
/// installed next to `crashsym`, which runs them in its own place (exec) for them.
///
/// They need libcurl, Foundation, SwiftNIO, Hummingbird and GRDB, whose ~8,500 protocol-conformance
/// records the Swift runtime would otherwise scan at every first type check of every crashsym
/// process: a one-address `lookup` took 40 M instructions with them in the binary, 15 M without. The
/// one-shot commands (lookup, symbolicate, the drop-in modes a sanitizer starts per crash) stay lean.
enum NetworkCommand {
    /// The subcommands `crashsym-net` (or, for `agent`, `crashsym-agent`) answers.
    /// (An array, not a `Set`: building a `Set<String>` costs the runtime a conformance lookup, a
    /// scan of every record in the binary, at the start of every crashsym process.)
    static let names = ["upload", "upload-minidump", "serve", "apps", "users", "migrate", "agent"]

    /// The executable that answers `command`.
    static func executable(for command: String) -> String {
        command == "agent" ? "crashsym-agent" : "crashsym-net"
    }

    /// Replaces this process with `crashsym-net ARGUMENTS` (`crashsym-agent` for `agent`) when the
    /// first argument names one of its subcommands (or `help NAME` does); returns otherwise.
    static func handOver(_ arguments: [String]) {
        guard let first = arguments.first else { return }
        let named = names.contains(first) || (first == "help" && arguments.count > 1 && names.contains(arguments[1]))
        guard named else { return }
        let forwarded = first == "help" ? Array(arguments.dropFirst()) + ["--help"] : arguments
        let executable = executable(for: forwarded[0])
        let path = siblingPath(executable)
        var argv: [UnsafeMutablePointer<CChar>?] = ([path] + forwarded).map { strdup($0) }
        argv.append(nil)
        execv(path, argv)
        let reason = String(cString: strerror(errno))
        FileOutput.standardError("crashsym: cannot run \(path): \(reason) (`\(forwarded[0])` is answered by \(executable), installed next to crashsym)\n")
        Glibc.exit(1)
    }

    /// The executable `name` in the directory of the running executable.
    static func siblingPath(_ name: String) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, Int(PATH_MAX))
        let executable = count > 0 ? String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                                   : CommandLine.arguments.first ?? "crashsym"
        guard let slash = executable.lastIndex(of: "/") else { return name }
        return String(executable[...slash]) + name
    }

    /// Entries for `crashsym --help`; the arguments go to `crashsym-net` (`crashsym-agent`), which has
    /// the real help.
    struct Upload: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "upload",
            abstract: "Convert ELF binaries into symbol tables, bundle them and upload what the server lacks.")
        @Argument(parsing: .captureForPassthrough) var arguments: [String] = []
        func run() throws { NetworkCommand.handOver(["upload"] + arguments) }
    }

    /// See `Upload`.
    struct UploadMinidump: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "upload-minidump",
            abstract: "Send a minidump to a crashsym server the way Crashpad does (gzip'd multipart form).")
        @Argument(parsing: .captureForPassthrough) var arguments: [String] = []
        func run() throws { NetworkCommand.handOver(["upload-minidump"] + arguments) }
    }

    /// See `Upload`.
    struct Serve: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "serve",
            abstract: "Run the symbol server: stores uploaded symbol bundles and serves them over HTTP.")
        @Argument(parsing: .captureForPassthrough) var arguments: [String] = []
        func run() throws { NetworkCommand.handOver(["serve"] + arguments) }
    }

    /// See `Upload`.
    struct Apps: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "apps", abstract: "Manage the apps of a symbol server and their upload keys.")
        @Argument(parsing: .captureForPassthrough) var arguments: [String] = []
        func run() throws { NetworkCommand.handOver(["apps"] + arguments) }
    }

    /// See `Upload`.
    struct Users: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "users", abstract: "Manage the web console's accounts and which apps they see.")
        @Argument(parsing: .captureForPassthrough) var arguments: [String] = []
        func run() throws { NetworkCommand.handOver(["users"] + arguments) }
    }

    /// See `Upload`.
    struct Migrate: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "migrate", abstract: "Move an embedded store (SQLite and files under a data directory) into PostgreSQL and an S3 store.")
        @Argument(parsing: .captureForPassthrough) var arguments: [String] = []
        func run() throws { NetworkCommand.handOver(["migrate"] + arguments) }
    }

    /// See `Upload`.
    struct Agent: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "agent",
            abstract: "Collect crash files from spool directories and forward them to a crashsym server.")
        @Argument(parsing: .captureForPassthrough) var arguments: [String] = []
        func run() throws { NetworkCommand.handOver(["agent"] + arguments) }
    }
}
