import ArgumentParser
import CrashsymCommandLine
#if canImport(Glibc)
import Glibc
#endif

/// `upload`, `serve` and `apps` live in a second executable, `crashsym-net`, installed next to
/// `crashsym`, which runs it in its own place (exec) for them.
///
/// They need libcurl, Foundation, SwiftNIO, Hummingbird and GRDB, whose ~8,500 protocol-conformance
/// records the Swift runtime would otherwise scan at every first type check of every crashsym
/// process: a one-address `lookup` took 40 M instructions with them in the binary, 15 M without. The
/// one-shot commands (lookup, symbolicate, the drop-in modes a sanitizer starts per crash) stay lean.
enum NetworkCommand {
    /// The subcommands `crashsym-net` answers.
    /// (An array, not a `Set`: building a `Set<String>` costs the runtime a conformance lookup, a
    /// scan of every record in the binary, at the start of every crashsym process.)
    static let names = ["upload", "serve", "apps", "users", "agent"]

    /// Replaces this process with `crashsym-net ARGUMENTS` when the first argument names one of its
    /// subcommands (or `help NAME` does); returns otherwise.
    static func handOver(_ arguments: [String]) {
        guard let first = arguments.first else { return }
        let named = names.contains(first) || (first == "help" && arguments.count > 1 && names.contains(arguments[1]))
        guard named else { return }
        let forwarded = first == "help" ? Array(arguments.dropFirst()) + ["--help"] : arguments
        let path = siblingPath()
        var argv: [UnsafeMutablePointer<CChar>?] = ([path] + forwarded).map { strdup($0) }
        argv.append(nil)
        execv(path, argv)
        let reason = String(cString: strerror(errno))
        FileOutput.standardError("crashsym: cannot run \(path): \(reason) (`\(first)` is answered by crashsym-net, installed next to crashsym)\n")
        Glibc.exit(1)
    }

    /// `crashsym-net` in the directory of the running executable.
    static func siblingPath() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, Int(PATH_MAX))
        let executable = count > 0 ? String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                                   : CommandLine.arguments.first ?? "crashsym"
        guard let slash = executable.lastIndex(of: "/") else { return "crashsym-net" }
        return String(executable[...slash]) + "crashsym-net"
    }

    /// Entries for `crashsym --help`; the arguments go to `crashsym-net`, which has the real help.
    struct Upload: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "upload",
            abstract: "Convert ELF binaries into symbol tables, bundle them and upload what the server lacks.")
        @Argument(parsing: .captureForPassthrough) var arguments: [String] = []
        func run() throws { NetworkCommand.handOver(["upload"] + arguments) }
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
    struct Agent: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "agent",
            abstract: "Collect crash files from spool directories and forward them to a crashsym server.")
        @Argument(parsing: .captureForPassthrough) var arguments: [String] = []
        func run() throws { NetworkCommand.handOver(["agent"] + arguments) }
    }
}
